"""The result of one Self-Route call (with its steps, sources and citations), and an aggregator over
many calls."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import Enum
from typing import Any

from selfroute._usage import Usage

__all__ = [
    "Abstention",
    "Citation",
    "Passage",
    "Reason",
    "Route",
    "RouteResult",
    "RouteStats",
    "Stage",
    "StepRecord",
]


class Route(str, Enum):
    """Which path produced the answer."""

    RAG = "rag"
    LONG_CONTEXT = "long_context"


class Stage(str, Enum):
    """A model-call stage of the flow."""

    RAG = "rag"
    LONG_CONTEXT = "long_context"


class Reason(str, Enum):
    """Why the flow took its route."""

    ANSWERED = "answered"
    """The RAG step answered from the chunks."""
    DECLINED = "declined"
    """The RAG step wrote the sentinel."""
    REFUSED = "refused"
    """The RAG step declined in natural language."""
    EMPTY_OUTPUT = "empty_output"
    """The RAG step wrote nothing usable (empty, whitespace, only reasoning or punctuation)."""
    NO_CHUNKS = "no_chunks"
    """Retrieval returned nothing."""
    RAG_ERROR = "rag_error"
    """The RAG model call failed; escalated to long context."""
    RETRIEVAL_ERROR = "retrieval_error"
    """The retriever failed; escalated to long context."""
    OVER_BUDGET = "over_budget"
    """The RAG step declined but the long-context budget was exhausted; no LC call was made."""
    UNGROUNDED = "ungrounded"
    """Grounded mode: the RAG answer's quotes were not found in the chunks; escalated."""
    GLOBAL_QUESTION = "global_question"
    """Pre-routing: a question about the whole document; the RAG step was skipped."""
    WEAK_RETRIEVAL = "weak_retrieval"
    TRUNCATED = "truncated"
    """The RAG step's output was cut short (``finish_reason`` ``length`` or ``content_filter``,
    or a stream that ended without a finish reason): not a verdict; escalated."""
    """Pre-routing: the best chunk scored under the threshold; the RAG step was skipped."""


class Abstention(str, Enum):
    """Why the final answer is a decline ("not found in the documents")."""

    DECLINED = "declined"
    """The last model call said the answer is not in what it was given."""
    UNGROUNDED = "ungrounded"
    """Grounded mode: the long-context answer's quotes were not found in the document; its text
    is kept in ``unverified_answer``."""
    OVER_BUDGET = "over_budget"
    """The RAG step declined and the long-context budget allowed no long-context call."""


@dataclass(frozen=True)
class Passage:
    """A retrieved chunk, framework-neutral.

    Attributes:
        text: The chunk text.
        doc_id: Id of the parent document, if known.
        score: Retrieval score, if known.
        metadata: Metadata of the chunk.
        source: The framework object it came from (a LangChain ``Document``, a LlamaIndex
            ``NodeWithScore``); not serialized.
    """

    text: str
    doc_id: str | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: Any = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (``source`` omitted)."""
        return {
            "text": self.text,
            "doc_id": self.doc_id,
            "score": self.score,
            "metadata": dict(self.metadata),
        }


@dataclass(frozen=True)
class StepRecord:
    """One model call made by the flow.

    Attributes:
        stage: ``rag`` or ``long_context``.
        usage: Tokens of the call (provider-reported unless ``usage.source`` says otherwise).
        model: Model name as reported by the provider (or configured).
        latency_s: Wall time of the call in seconds.
        prompt_tokens_estimate: Prompt size counted locally before the call.
        error: ``repr`` of the exception if the call failed.
        output: The raw text the model wrote.
        verdict: What the call's output was (:class:`~selfroute.VerdictKind` value:
            ``answered``, ``sentinel``, ``refusal``, ``empty``, ``garbled``), or ``None``.
        k: For RAG steps, how many chunks the model was shown (a k-ladder has one step per rung).
        structured: Whether the verdict came as structured output (``{answerable, answer}``).
        grounded: Grounded mode: whether the answer's quotes were all found (``None`` when not
            checked).
        wasted: The call's result was not used (a speculative long-context call cancelled
            because the RAG step answered); its usage is still counted.
        batch: The call ran inside a provider batch (priced at the table's batch rate).
        finish_reason: How the call ended, as the adapter read it from the provider
            (``stop``, ``length``, ``content_filter``, ``tool_calls``, ``incomplete`` for a
            stream that ended without one), or ``None`` when the provider did not say.
    """

    stage: Stage
    usage: Usage
    model: str | None = None
    latency_s: float = 0.0
    prompt_tokens_estimate: int | None = None
    error: str | None = None
    output: str | None = None
    verdict: str | None = None
    k: int | None = None
    structured: bool = False
    grounded: bool | None = None
    wasted: bool = False
    batch: bool = False
    finish_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "stage": self.stage.value,
            "usage": self.usage.to_dict(),
            "model": self.model,
            "latency_s": self.latency_s,
            "prompt_tokens_estimate": self.prompt_tokens_estimate,
            "error": self.error,
            "verdict": self.verdict,
            "k": self.k,
            "structured": self.structured,
            "grounded": self.grounded,
            "wasted": self.wasted,
            "batch": self.batch,
            "finish_reason": self.finish_reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StepRecord:
        """The inverse of :meth:`to_dict` (also accepts ``output``; unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values["stage"] = Stage(values["stage"])
        values["usage"] = Usage.from_dict(values.get("usage"))
        return cls(**values)


@dataclass(frozen=True)
class Citation:
    """One quote the model gave, and where (if anywhere) it was found.

    Attributes:
        quote: The quote as the model wrote it, without surrounding quote marks.
        found: Whether the quote was found in one of the sources.
        source_index: Index (in the sources given to :func:`check_grounding`) of the source where
            it was found.
        doc_id: That source's ``doc_id``.
        start: Start offset of the quoted span in that source's original text.
        end: End offset (exclusive) of the quoted span in that source's original text.
        reason: Why the quote was not found: ``"not_found"``, ``"too_short"`` (fewer words than
            can be verified) or ``"empty"``. ``None`` when found.
    """

    quote: str
    found: bool
    source_index: int | None
    doc_id: str | None
    start: int | None
    end: int | None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the fields."""
        return asdict(self)


@dataclass(frozen=True)
class RouteResult:
    """Everything one Self-Route call produced.

    Attributes:
        question: The question asked.
        answer: The final answer (``None`` only in the ``partial`` of a
            :class:`~selfroute.LongContextError`).
        route: ``rag`` or ``long_context``.
        reason: Why that route was taken.
        rag_answer: The cleaned RAG-step answer (the decline text when it declined; ``None`` if the
            RAG step did not run).
        sources: The retrieved passages shown to the RAG step, in rank order.
        steps: The model calls made, in order.
        long_context_tokens: The always-long-context counterfactual: input tokens that sending the
            whole document would have cost for this question. Provider-reported when the LC step
            ran, else counted locally (see ``long_context_tokens_source``). ``None`` if unknown.
        long_context_tokens_source: ``provider`` (the long-context step ran), ``provider_scaled``
            (counted locally, then scaled by the provider/local ratio measured on this call's RAG
            prompt, so that both sides of ``token_ratio`` are the provider's tokens),
            ``tokenizer`` or ``heuristic`` (counted locally; the provider reported nothing).
        context: Facts about the long context sent or priced (size, strategy, truncation).
        cost: Money spent, from the price table (``None`` without prices, or when no step's
            model has a price; a step whose model has none is left out and named in
            ``unpriced_models``).
        long_context_cost: Money the always-LC counterfactual would have cost (``None`` when
            unknown or its model has no price).
        latency_s: Wall time of the whole call.
        error: What went wrong on the way, when a fault was absorbed (RAG or retrieval error).
        abstention: Why the final answer is a decline, or ``None`` when it answers (see
            :attr:`abstained`).
        citations: Grounded mode: where the final answer's quotes were found (passage index or
            character offsets in the long context).
        verified: Grounded mode: whether the final answer's quotes were all found in what the
            model was given; ``None`` when grounding was not checked.
        unverified_answer: Grounded mode: the long-context answer that was withheld because its
            quotes were not found (kept for inspection).
        unpriced_models: The models the price table has no price for (a step's model as the
            provider reported it, ``(unnamed)`` when it reported none, or the counterfactual's
            long-context model), in order; empty without prices or when every one is priced.
            Check it before formatting ``cost``: a model missing here is why a cost is ``None``
            or partial.
    """

    question: str
    answer: str | None
    route: Route
    reason: Reason
    rag_answer: str | None = None
    sources: tuple[Passage, ...] = ()
    steps: tuple[StepRecord, ...] = ()
    long_context_tokens: int | None = None
    long_context_tokens_source: str | None = None
    context: Mapping[str, Any] | None = None
    cost: float | None = None
    long_context_cost: float | None = None
    latency_s: float = 0.0
    error: str | None = None
    abstention: Abstention | None = None
    citations: tuple[Citation, ...] = ()
    verified: bool | None = None
    unverified_answer: str | None = None
    unpriced_models: tuple[str, ...] = ()

    @property
    def abstained(self) -> bool:
        """True when the final answer declines: the answer is not in the documents (as far as
        the model, the grounding check or the budget could tell)."""
        return self.abstention is not None

    def _verdict(self, stage: Stage) -> str | None:
        for s in reversed(self.steps):
            if s.stage is stage and s.verdict is not None and not s.wasted:
                return s.verdict
        return None

    @property
    def rag_verdict(self) -> str | None:
        """The RAG step's verdict (the last rung's), or ``None`` if it did not run."""
        return self._verdict(Stage.RAG)

    @property
    def long_context_verdict(self) -> str | None:
        """The long-context step's verdict, or ``None`` if it did not run."""
        return self._verdict(Stage.LONG_CONTEXT)

    @property
    def disputed(self) -> bool:
        """True when the answer came from long context after the RAG step had declined, and
        nothing verified it (grounded mode off): the chunks said "not there", the whole document
        said otherwise. Show such answers with care; grounded mode settles them."""
        return (
            self.route is Route.LONG_CONTEXT
            and not self.abstained
            and self.reason in (Reason.DECLINED, Reason.REFUSED, Reason.UNGROUNDED)
            and self.verified is not True
        )

    @property
    def k_used(self) -> int | None:
        """Chunks shown to the last RAG rung, or ``None`` if the RAG step did not run."""
        for s in reversed(self.steps):
            if s.stage is Stage.RAG and s.k is not None:
                return s.k
        return None

    @property
    def usage(self) -> Usage:
        """Total usage over all steps."""
        total = Usage.zero()
        for s in self.steps:
            total = total + s.usage
        return total

    def stage_usage(self, stage: Stage | str) -> Usage:
        """Usage of one stage (``rag`` or ``long_context``)."""
        st = Stage(stage)
        total = Usage.zero()
        for s in self.steps:
            if s.stage is st:
                total = total + s.usage
        return total

    @property
    def token_ratio(self) -> float | None:
        """Input tokens spent divided by the always-LC counterfactual's input tokens.

        ``0.25`` means this call cost a quarter of the input tokens of sending the whole document.
        ``None`` when the counterfactual is unknown.
        """
        if not self.long_context_tokens:
            return None
        return self.usage.input_tokens / self.long_context_tokens

    @property
    def answered_from_chunks(self) -> bool:
        """True when the answer came from the RAG step."""
        return self.route is Route.RAG and self.reason is Reason.ANSWERED

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable dict of the whole result."""
        return {
            "question": self.question,
            "answer": self.answer,
            "route": self.route.value,
            "reason": self.reason.value,
            "rag_answer": self.rag_answer,
            "sources": [p.to_dict() for p in self.sources],
            "steps": [s.to_dict() for s in self.steps],
            "usage": self.usage.to_dict(),
            "usage_by_stage": {
                st.value: self.stage_usage(st).to_dict()
                for st in Stage
                if any(s.stage is st for s in self.steps)
            },
            "long_context_tokens": self.long_context_tokens,
            "long_context_tokens_source": self.long_context_tokens_source,
            "token_ratio": self.token_ratio,
            "context": dict(self.context) if self.context is not None else None,
            "cost": self.cost,
            "long_context_cost": self.long_context_cost,
            "latency_s": self.latency_s,
            "error": self.error,
            "abstained": self.abstained,
            "abstention": self.abstention.value if self.abstention is not None else None,
            "rag_verdict": self.rag_verdict,
            "long_context_verdict": self.long_context_verdict,
            "disputed": self.disputed,
            "verified": self.verified,
            "citations": [c.to_dict() for c in self.citations],
            "unverified_answer": self.unverified_answer,
            "k_used": self.k_used,
        }


class RouteStats:
    """Sums results over many calls (thread-safe).

    Example:
        >>> stats = RouteStats()
        >>> for r in results: stats.add(r)  # doctest: +SKIP
        >>> stats.summary()["token_ratio"]  # doctest: +SKIP
    """

    def __init__(self, results: Iterable[RouteResult] = ()) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.rag_answered = 0
        self.abstained = 0
        self.disputed = 0
        self.wasted_usage = Usage.zero()
        self.reasons: dict[str, int] = {}
        self.usage = Usage.zero()
        self.long_context_tokens = 0
        self.calls_with_counterfactual = 0
        self.input_tokens_with_counterfactual = 0
        self.cost: float | None = None
        self.long_context_cost: float | None = None
        for r in results:
            self.add(r)

    def add(self, result: RouteResult) -> None:
        """Count one result."""
        with self._lock:
            self.calls += 1
            if result.answered_from_chunks:
                self.rag_answered += 1
            if result.abstained:
                self.abstained += 1
            if result.disputed:
                self.disputed += 1
            for step in result.steps:
                if step.wasted:
                    self.wasted_usage = self.wasted_usage + step.usage
            self.reasons[result.reason.value] = self.reasons.get(result.reason.value, 0) + 1
            self.usage = self.usage + result.usage
            if result.long_context_tokens:
                self.calls_with_counterfactual += 1
                self.long_context_tokens += result.long_context_tokens
                self.input_tokens_with_counterfactual += result.usage.input_tokens
            if result.cost is not None:
                self.cost = (self.cost or 0.0) + result.cost
            if result.long_context_cost is not None:
                self.long_context_cost = (self.long_context_cost or 0.0) + result.long_context_cost

    @property
    def answerable_ratio(self) -> float | None:
        """Share of calls answered from the chunks (the paper's "answerable ratio")."""
        return self.rag_answered / self.calls if self.calls else None

    @property
    def token_ratio(self) -> float | None:
        """Input tokens spent / always-LC input tokens, over calls with a counterfactual."""
        if not self.long_context_tokens:
            return None
        return self.input_tokens_with_counterfactual / self.long_context_tokens

    def summary(self) -> dict[str, Any]:
        """Plain-dict summary."""
        with self._lock:
            return {
                "calls": self.calls,
                "answered_from_chunks": self.rag_answered,
                "answerable_ratio": self.answerable_ratio,
                "reasons": dict(self.reasons),
                "usage": self.usage.to_dict(),
                "cached_input_tokens": self.usage.cached_input_tokens or 0,
                "abstained": self.abstained,
                "disputed": self.disputed,
                "wasted_usage": self.wasted_usage.to_dict(),
                "long_context_tokens": self.long_context_tokens,
                "token_ratio": self.token_ratio,
                "cost": self.cost,
                "long_context_cost": self.long_context_cost,
            }
