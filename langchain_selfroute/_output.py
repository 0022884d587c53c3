"""What :class:`~langchain_selfroute.SelfRoute` returns: a typed result and typed stream chunks."""

from __future__ import annotations

from typing import Any

from langchain_core.documents import Document
from pydantic import BaseModel, ConfigDict, Field, InstanceOf, SerializerFunctionWrapHandler
from pydantic import model_serializer as _model_serializer
from pydantic.json_schema import SkipJsonSchema

from selfroute import (
    Abstention,
    Citation,
    Passage,
    Reason,
    Route,
    RouteResult,
    Stage,
    StepRecord,
    Usage,
)

__all__ = ["SelfRouteChunk", "SelfRouteOutput", "passage_document"]

#: Keys of the core's ``RouteResult.to_dict()`` that are derived from the steps; they are added to
#: the serialized form of :class:`SelfRouteOutput` so ``model_dump()`` matches ``to_dict()``.
_DERIVED = (
    "steps",
    "usage",
    "usage_by_stage",
    "token_ratio",
    "context",
    "abstained",
    "disputed",
    "rag_verdict",
    "long_context_verdict",
    "k_used",
)


def passage_document(passage: Passage) -> Document:
    """The LangChain ``Document`` behind a core passage (rebuilt from its text if it has none)."""
    if isinstance(passage.source, Document):
        return passage.source
    metadata = dict(passage.metadata)
    if passage.doc_id is not None:
        metadata.setdefault("doc_id", passage.doc_id)
    if passage.score is not None:
        metadata.setdefault("score", passage.score)
    return Document(page_content=passage.text, metadata=metadata)


class SelfRouteOutput(BaseModel):
    """The result of one Self-Route call, with LangChain ``Document`` sources.

    It mirrors the core :class:`selfroute.RouteResult` (available as :attr:`result`) and composes
    with LCEL: ``route | (lambda r: r.answer)``, ``route | itemgetter("answer")``.
    ``model_dump()`` and :meth:`to_dict` give the same plain-dict form as the core's
    ``RouteResult.to_dict()``, with the sources as serialized ``Document`` objects.

    Attributes:
        question: The question asked (stripped).
        answer: The final answer.
        route: ``rag`` (answered from the retrieved chunks) or ``long_context``.
        reason: Why that route was taken (``answered``, ``declined``, ``refused``, ...).
        rag_answer: What the RAG step answered (the decline text when it declined).
        sources: The retrieved chunk ``Document`` objects shown to the RAG step, best first.
        long_context_tokens: The always-long-context counterfactual: input tokens that sending the
            whole long context would have cost for this question.
        long_context_tokens_source: ``provider``, ``tokenizer`` or ``heuristic``.
        cost: Money spent (needs ``prices``).
        long_context_cost: Money always-long-context would have cost (needs ``prices``).
        latency_s: Wall time of the call.
        error: A fault that was absorbed on the way (failed RAG call or retriever), if any.
        abstention: Why the answer is a decline ("not found in the documents"): ``declined``,
            ``ungrounded`` or ``over_budget``; ``None`` when it answers (see :attr:`abstained`).
        citations: Grounded mode: the final answer's quotes and where they were found.
        verified: Grounded mode: whether the final answer's quotes were all found in what the
            model was given; ``None`` when not checked.
        unverified_answer: Grounded mode: a long-context answer withheld because its quotes were
            not found.
        result: The core :class:`selfroute.RouteResult` (not serialized).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    question: str
    answer: str | None
    route: Route
    reason: Reason
    rag_answer: str | None = None
    sources: list[Document] = Field(default_factory=list)
    long_context_tokens: int | None = None
    long_context_tokens_source: str | None = None
    cost: float | None = None
    long_context_cost: float | None = None
    latency_s: float = 0.0
    error: str | None = None
    abstention: Abstention | None = None
    citations: list[Citation] = Field(default_factory=list)
    verified: bool | None = None
    unverified_answer: str | None = None
    result: SkipJsonSchema[InstanceOf[RouteResult]] = Field(exclude=True, repr=False)

    @classmethod
    def from_result(cls, result: RouteResult) -> SelfRouteOutput:
        """Wrap a core result."""
        return cls(
            question=result.question,
            answer=result.answer,
            route=result.route,
            reason=result.reason,
            rag_answer=result.rag_answer,
            sources=[passage_document(p) for p in result.sources],
            long_context_tokens=result.long_context_tokens,
            long_context_tokens_source=result.long_context_tokens_source,
            cost=result.cost,
            long_context_cost=result.long_context_cost,
            latency_s=result.latency_s,
            error=result.error,
            abstention=result.abstention,
            citations=list(result.citations),
            verified=result.verified,
            unverified_answer=result.unverified_answer,
            result=result,
        )

    @property
    def usage(self) -> Usage:
        """Total tokens over all model calls (``usage.source`` says whether it was estimated)."""
        return self.result.usage

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        """The model calls made, in order, with usage, model name and latency."""
        return self.result.steps

    @property
    def token_ratio(self) -> float | None:
        """Input tokens spent divided by the always-long-context counterfactual."""
        return self.result.token_ratio

    @property
    def context(self) -> dict[str, Any] | None:
        """Facts about the long context sent or priced (size, fitting strategy, truncation)."""
        return dict(self.result.context) if self.result.context is not None else None

    @property
    def abstained(self) -> bool:
        """True when the answer is a decline: it was not found in the documents."""
        return self.result.abstained

    @property
    def disputed(self) -> bool:
        """True when the answer came from long context after the RAG step declined and nothing
        verified it (show it with care; ``grounded=True`` settles such answers)."""
        return self.result.disputed

    @property
    def rag_verdict(self) -> str | None:
        """What the RAG step's output was (``answered``, ``sentinel``, ``refusal``, ``empty``,
        ``garbled``), or ``None`` if it did not run."""
        return self.result.rag_verdict

    @property
    def long_context_verdict(self) -> str | None:
        """What the long-context step's output was, or ``None`` if it did not run."""
        return self.result.long_context_verdict

    @property
    def k_used(self) -> int | None:
        """Chunks shown to the last RAG call (a ``k_ladder`` may have grown it)."""
        return self.result.k_used

    @property
    def answered_from_chunks(self) -> bool:
        """True when the RAG step answered from the retrieved chunks."""
        return self.result.answered_from_chunks

    def stage_usage(self, stage: Stage | str) -> Usage:
        """Usage of one stage: ``rag`` or ``long_context``."""
        return self.result.stage_usage(stage)

    @_model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        core = self.result.to_dict()
        for key in _DERIVED:
            data[key] = core[key]
        return data

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable dict (same keys as ``RouteResult.to_dict()``)."""
        return self.model_dump(mode="json")

    def __getitem__(self, key: str) -> Any:
        """``output["answer"]``: item access to fields and derived values (for ``itemgetter``)."""
        if isinstance(key, str) and (key in type(self).model_fields or key in _DERIVED):
            return getattr(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``-style access."""
        try:
            return self[key]
        except KeyError:
            return default


class SelfRouteChunk(BaseModel):
    """One piece of a streamed Self-Route call.

    The first chunk of a stream announces the route (``route`` set, ``text`` empty); the following
    chunks carry answer text; the last carries the full :class:`SelfRouteOutput` in ``output``.
    Chunks add up with ``+`` (text concatenated, the latest route and output kept), so
    ``functools.reduce(operator.add, chunks)`` is the whole answer.

    A chunk with ``retracted=True`` means RAG-step text already streamed turned out to be part of
    a decline (rare: a refusal whose opening looked like an answer): discard the text shown so far;
    the long-context answer follows. Adding chunks does this for you.

    Attributes:
        route: The route taken so far (``None`` only before it is known).
        text: Answer text delta.
        stage: The stage that wrote ``text``.
        reason: Why the route was taken, when known.
        retracted: The text streamed before this chunk is withdrawn.
        output: The full result, on the last chunk only.
    """

    model_config = ConfigDict(frozen=True)

    route: Route | None = None
    text: str = ""
    stage: Stage | None = None
    reason: Reason | None = None
    retracted: bool = False
    output: SelfRouteOutput | None = None

    @property
    def is_final(self) -> bool:
        """True for the last chunk (the one with the result)."""
        return self.output is not None

    def __add__(self, other: object) -> SelfRouteChunk:
        if not isinstance(other, SelfRouteChunk):
            return NotImplemented
        switched = other.route is not None and other.route != self.route
        return SelfRouteChunk(
            route=other.route or self.route,
            text=("" if other.retracted else self.text) + other.text,
            stage=other.stage or self.stage,
            reason=other.reason if (other.reason is not None or switched) else self.reason,
            retracted=self.retracted or other.retracted,
            output=other.output or self.output,
        )
