"""The Self-Route flow, written once, and the two drivers that run it.

:func:`self_route_flow` is a generator that never does I/O: it *yields* step requests
(:class:`Retrieve`, :class:`Generate`, :class:`LoadLongContext`) and receives their results. The
sync driver :func:`drive` and the async driver :func:`adrive` send each step to a handler (an
adapter's translation into framework calls) and feed the answer back -- the way httpx writes one
``auth_flow`` and drives it from ``Client`` and ``AsyncClient``. A handler failure is thrown back
into the flow, which decides what to do (escalate or raise). Cancellation
(:class:`asyncio.CancelledError`, ``KeyboardInterrupt``) is never caught.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

from selfroute._budget import LongContextBudget
from selfroute._chunking import DEFAULT_CHUNK_WORDS
from selfroute._errors import (
    ConfigurationError,
    InvalidInputError,
    LongContextError,
    MissingDependencyError,
    ModelOutputError,
    RetrievalError,
    SelfRouteError,
)
from selfroute._fitting import ContextDocument, FittedContext, OverflowStrategy, fit_context
from selfroute._grounding import Grounding, GroundingSource, check_grounding, split_quotes
from selfroute._preroute import PreRoute
from selfroute._prompts import DEFAULT_SENTINEL, Prompts
from selfroute._redact import redact_exception
from selfroute._result import (
    Abstention,
    Passage,
    PriceTable,
    Reason,
    Route,
    RouteResult,
    Stage,
    StepRecord,
)
from selfroute._streaming import SentinelSniffer
from selfroute._structured import VerdictMode, parse_structured_verdict, verdict_schema
from selfroute._tokens import TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import Verdict, VerdictKind, parse_verdict, strip_reasoning

__all__ = [
    "AsyncStepHandler",
    "FlowEvent",
    "Generate",
    "Generation",
    "GenerationChunk",
    "LoadLongContext",
    "OnError",
    "ResultEvent",
    "Retrieve",
    "RouteConfig",
    "RouteEvent",
    "Settle",
    "Speculate",
    "Step",
    "StepHandler",
    "StructuredRequest",
    "TokenEvent",
    "adrive",
    "arun_flow",
    "clean_answer",
    "drive",
    "run_flow",
    "self_route_flow",
    "validate_question",
]


# --------------------------------------------------------------------------------------------
# Steps and their answers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Retrieve:
    """Ask the handler for the top-``k`` chunks for ``question``.

    The handler returns a sequence of :class:`~selfroute.Passage` (best first).

    Attributes:
        question: The question.
        k: How many chunks.
        timeout_s: The drivers give up on the retriever after this many seconds (``None``: wait
            as long as it takes); the flow then treats it as a retrieval failure.
    """

    question: str
    k: int
    timeout_s: float | None = None


@dataclass(frozen=True)
class StructuredRequest:
    """The structured-output form of a RAG step, offered to the handler.

    A handler whose model supports structured output (JSON schema) or tool calling sends
    ``prompt`` and asks for an object matching ``schema``, and returns it in
    :attr:`Generation.structured`; a handler that cannot sends the step's plain ``prompt`` instead
    (the sentinel form) -- unless ``required``, when it raises
    :class:`~selfroute.ConfigurationError`.

    Attributes:
        prompt: The prompt for structured output (no sentinel instruction).
        schema: JSON schema of the object (see :func:`~selfroute.verdict_schema`).
        required: ``verdict="structured"``: falling back to the sentinel is not allowed.
    """

    prompt: str
    schema: Mapping[str, Any]
    required: bool = False

    @property
    def name(self) -> str:
        """The schema's title (the tool or response-format name)."""
        return str(self.schema.get("title", "rag_verdict"))


@dataclass(frozen=True)
class Generate:
    """Ask the handler to run a model on ``prompt``.

    The handler returns a :class:`Generation` (or, when streaming, yields
    :class:`GenerationChunk`).

    Attributes:
        stage: ``rag`` (the cheap model, may decline) or ``long_context``.
        prompt: The full prompt (sent as one user message).
        question: The question, for tracing.
        sentinel: For the RAG stage: the decline word (streaming holds back text that could
            still become a decline).
        strict: For the RAG stage: whether only the sentinel counts as a decline.
        structured: For the RAG stage: the structured-output form the handler may use instead.
        grounded: Grounded mode: the answer carries quotes that are checked before any of it is
            shown (streaming delivers such an answer once it is verified).
        k: For the RAG stage: how many chunks the prompt shows (one step per k-ladder rung).
        speculative: A long-context call started alongside the RAG step (inside a
            :class:`Speculate`); it may be cancelled.
    """

    stage: Stage
    prompt: str
    question: str
    sentinel: str | None = None
    strict: bool = False
    structured: StructuredRequest | None = None
    grounded: bool = False
    k: int | None = None
    speculative: bool = False

    @property
    def hold(self) -> bool:
        """Whether streamed text must be held back until the whole output is checked."""
        return self.grounded or self.structured is not None


@dataclass(frozen=True)
class LoadLongContext:
    """Ask the handler for the long context: a fixed document, the per-call document, or the
    parent documents of the retrieved chunks (most relevant first).

    The handler returns a sequence of :class:`~selfroute.ContextDocument` or strings, or ``None``
    when no long context is available.

    Attributes:
        question: The question.
        passages: The retrieved chunks (the parents of these are the usual long context).
        purpose: ``answer`` (the LC call will run) or ``counterfactual`` (only to price always-LC).
    """

    question: str
    passages: tuple[Passage, ...]
    purpose: str = "answer"


@dataclass(frozen=True)
class Speculate:
    """Start ``generate`` (a long-context call) in the background and answer at once with an
    opaque handle; the flow later settles it with :class:`Settle`.

    Drivers run it with the handler's ``agenerate`` as a task (async) or ``generate`` in a
    worker thread (sync); handlers need nothing new.
    """

    generate: Generate


@dataclass(frozen=True)
class Settle:
    """Settle a speculative call: wait for its :class:`Generation` (``cancel=False``), or cancel
    it (``cancel=True``: the driver answers with the ``Generation`` if it had already finished,
    else ``None``)."""

    handle: Any
    cancel: bool = False


Step = Retrieve | Generate | LoadLongContext | Speculate | Settle


@dataclass(frozen=True)
class Generation:
    """A finished model call.

    Attributes:
        text: What the model wrote.
        usage: Provider-reported usage, or ``None`` if the provider reported none (the flow then
            estimates it and labels it an estimate).
        model: Model name as reported by the provider.
        latency_s: Set by the driver.
        structured: The parsed object when the handler used the step's structured form
            (``None`` when it sent the plain prompt).
        structured_error: Set (to what went wrong) when the handler used the structured form
            but got no valid object back; ``text`` then holds the raw output. The flow accepts
            a plain decline in it and fails safe to long context on anything else.
    """

    text: str
    usage: Usage | None = None
    model: str | None = None
    latency_s: float = 0.0
    structured: Mapping[str, Any] | None = None
    structured_error: str | None = None


@dataclass(frozen=True)
class GenerationChunk:
    """A piece of a streamed model call; usage and model usually arrive on the last piece.

    A structured RAG step (not streamed by the model) arrives as one piece whose ``structured`` /
    ``structured_error`` carry what :class:`Generation` would (the drivers keep the last set).
    """

    text: str = ""
    usage: Usage | None = None
    model: str | None = None
    structured: Mapping[str, Any] | None = None
    structured_error: str | None = None

    @classmethod
    def of(cls, gen: Generation) -> GenerationChunk:
        """A finished call as one piece (for handlers whose call does not stream)."""
        return cls(
            text=gen.text,
            usage=gen.usage,
            model=gen.model,
            structured=gen.structured,
            structured_error=gen.structured_error,
        )


class StepHandler(Protocol):
    """What an adapter implements for the sync driver."""

    def retrieve(self, step: Retrieve) -> Sequence[Passage]:
        """Top-k passages for the question, best first."""
        ...

    def generate(self, step: Generate) -> Generation:
        """Run the stage's model on the prompt."""
        ...

    def stream(self, step: Generate) -> Iterable[GenerationChunk]:
        """Run the stage's model on the prompt, streaming."""
        ...

    def load_long_context(self, step: LoadLongContext) -> Sequence[ContextDocument | str] | None:
        """The long context, most relevant document first, or ``None``."""
        ...


class AsyncStepHandler(Protocol):
    """What an adapter implements for the async driver."""

    def aretrieve(self, step: Retrieve) -> Awaitable[Sequence[Passage]]:
        """Top-k passages for the question, best first."""
        ...

    def agenerate(self, step: Generate) -> Awaitable[Generation]:
        """Run the stage's model on the prompt."""
        ...

    def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        """Run the stage's model on the prompt, streaming."""
        ...

    def aload_long_context(
        self, step: LoadLongContext
    ) -> Awaitable[Sequence[ContextDocument | str] | None]:
        """The long context, most relevant document first, or ``None``."""
        ...


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------
class OnError(str, Enum):
    """What to do when the RAG model call or the retriever fails."""

    LONG_CONTEXT = "long_context"
    """Escalate to long context and record the error in the result (default)."""
    RAISE = "raise"
    """Raise at once."""


@dataclass(frozen=True)
class RouteConfig:
    """Settings of the flow.

    Attributes:
        k: Chunks to retrieve (5 in the paper).
        prompts: Prompt templates and the sentinel.
        strict: Only the sentinel counts as a decline (natural refusals are taken as answers).
        long_context_window: The LC model's context window in tokens; ``None`` sends the whole
            document unfitted.
        answer_tokens: Tokens reserved in the window for the answer.
        overflow: What to do when the document does not fit: ``fill`` (default),
            ``truncate_middle`` or ``error``.
        chunk_words: Chunk size used when fitting with ``fill``.
        on_rag_error: ``long_context`` (escalate, default) or ``raise``.
        on_retrieval_error: ``long_context`` (escalate when a long context exists, default) or
            ``raise``.
        counterfactual: Price always-LC on RAG-routed calls (loads the long context to count it).
        prices: Optional price table for money.
        long_context_model: Model name used to price the counterfactual when no LC call ran.
        budget: Optional :class:`~selfroute.LongContextBudget`.
        token_counter: Counter for pre-call counts; defaults to tiktoken ``o200k_base`` offline.
        max_question_tokens: Reject questions longer than this (``None``: no limit).
        retrieval_timeout_s: Give up on the retriever after this many seconds and treat it as a
            retrieval failure (escalate or raise per ``on_retrieval_error``). Guards against a
            vector store that accepts connections but never answers (the ``chromadb`` HTTP client
            has no timeout of its own). ``None`` (default): no limit.
        verdict: How the RAG step declines: ``sentinel`` (the paper's word, default),
            ``structured`` (an ``{answerable, answer}`` object through structured output or tool
            calling; an error if the model cannot) or ``auto`` (structured when the model
            supports it).
        k_ladder: Larger retrievals to try, in order, before long context while the RAG step
            declines (``k=5, k_ladder=(20,)``: 5 chunks, then 20, then the whole document). Each
            rung's call is recorded; the first answer wins.
        pre_route: Skip the RAG step for predictably futile questions (global questions, weak
            retrieval); see :class:`~selfroute.PreRoute`. ``None`` (default): off.
        grounded: Ask both steps to quote the sentences that support the answer and check the
            quotes against what the model was given: an unverified RAG answer escalates
            (``ungrounded``), an unverified long-context answer abstains.
        speculate_below: Speculative long context: when the best retrieved chunk scores under
            this (weak evidence), start the long-context call at the same time as the RAG step
            and cancel it if the RAG step answers. Saves the RAG step's latency on questions that
            escalate; costs the cancelled call's tokens (reported as ``wasted`` steps) on those
            that do not. ``None`` (default): off.
    """

    k: int = 5
    prompts: Prompts = field(default_factory=Prompts)
    strict: bool = False
    long_context_window: int | None = None
    answer_tokens: int = 1024
    overflow: OverflowStrategy | str = OverflowStrategy.FILL
    chunk_words: int = DEFAULT_CHUNK_WORDS
    on_rag_error: OnError | str = OnError.LONG_CONTEXT
    on_retrieval_error: OnError | str = OnError.LONG_CONTEXT
    counterfactual: bool = True
    prices: PriceTable | None = None
    long_context_model: str | None = None
    budget: LongContextBudget | None = None
    token_counter: TokenCounter | None = None
    max_question_tokens: int | None = None
    retrieval_timeout_s: float | None = None
    verdict: VerdictMode | str = VerdictMode.SENTINEL
    k_ladder: tuple[int, ...] = ()
    pre_route: PreRoute | None = None
    grounded: bool = False
    speculate_below: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {self.k!r}")
        ladder = self.k_ladder
        if ladder is None:
            ladder = ()
        if isinstance(ladder, (str, bytes)) or not isinstance(ladder, Iterable):
            raise ConfigurationError(f"k_ladder must be a sequence of integers, got {ladder!r}")
        ladder = tuple(ladder)
        previous = self.k
        for rung in ladder:
            if not isinstance(rung, int) or isinstance(rung, bool) or rung <= previous:
                raise ConfigurationError(
                    f"k_ladder rungs must be integers, each larger than the one before and than "
                    f"k={self.k}; got {ladder!r}"
                )
            previous = rung
        object.__setattr__(self, "k_ladder", ladder)
        if self.pre_route is not None and not isinstance(self.pre_route, PreRoute):
            raise ConfigurationError(
                f"pre_route must be a selfroute.PreRoute or None, got {type(self.pre_route).__name__}"
            )
        spec = self.speculate_below
        if spec is not None and (isinstance(spec, bool) or not isinstance(spec, (int, float))):
            raise ConfigurationError(f"speculate_below must be a number or None, got {spec!r}")
        if not isinstance(self.grounded, bool):
            raise ConfigurationError(f"grounded must be true or false, got {self.grounded!r}")
        try:
            object.__setattr__(self, "verdict", VerdictMode(self.verdict))
        except ValueError:
            raise ConfigurationError(
                f"verdict must be one of {[m.value for m in VerdictMode]}, got {self.verdict!r}"
            ) from None
        if self.long_context_window is not None and (
            not isinstance(self.long_context_window, int) or self.long_context_window < 1
        ):
            raise ConfigurationError(
                f"long_context_window must be a positive integer or None, got {self.long_context_window!r}"
            )
        timeout = self.retrieval_timeout_s
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0
        ):
            raise ConfigurationError(
                f"retrieval_timeout_s must be a positive number or None, got {timeout!r}"
            )
        if not isinstance(self.answer_tokens, int) or self.answer_tokens < 0:
            raise ConfigurationError(f"answer_tokens must be >= 0, got {self.answer_tokens!r}")
        for name in ("overflow", "on_rag_error", "on_retrieval_error"):
            value = getattr(self, name)
            enum: type[Enum] = OverflowStrategy if name == "overflow" else OnError
            try:
                object.__setattr__(self, name, enum(value))
            except ValueError:
                raise ConfigurationError(
                    f"{name} must be one of {[e.value for e in enum]}, got {value!r}"
                ) from None
        if not isinstance(self.prompts, Prompts):
            raise ConfigurationError("prompts must be a selfroute.Prompts")

    @property
    def counter(self) -> TokenCounter:
        """The token counter in use."""
        return self.token_counter or default_token_counter()

    @property
    def rungs(self) -> tuple[int, ...]:
        """The retrieval sizes the RAG step tries, in order: ``(k, *k_ladder)``."""
        return (self.k, *self.k_ladder)


def validate_question(question: object) -> str:
    """Return the question stripped, or raise :class:`~selfroute.InvalidInputError`."""
    if isinstance(question, bytes):
        raise InvalidInputError("question must be str, got bytes; decode it first")
    if not isinstance(question, str):
        raise InvalidInputError(f"question must be a string, got {type(question).__name__}")
    q = question.strip()
    if not q:
        raise InvalidInputError("question is empty or whitespace only")
    return q


def clean_answer(text: str) -> str:
    """Strip reasoning blocks and surrounding white space from a long-context answer."""
    body, _ = strip_reasoning(text or "")
    return body.strip()


# --------------------------------------------------------------------------------------------
# The flow
# --------------------------------------------------------------------------------------------
#: Errors a handler raises that are the caller's to fix: they surface at once, never escalate.
_CALLER_ERRORS = (ConfigurationError, InvalidInputError, MissingDependencyError)

_REASON_BY_KIND = {
    VerdictKind.SENTINEL: Reason.DECLINED,
    VerdictKind.REFUSAL: Reason.REFUSED,
    VerdictKind.EMPTY: Reason.EMPTY_OUTPUT,
    VerdictKind.GARBLED: Reason.EMPTY_OUTPUT,
}


def _to_passages(items: Any) -> tuple[Passage, ...]:
    if items is None:
        return ()
    out = []
    for i, p in enumerate(items):
        if not isinstance(p, Passage):
            raise SelfRouteError(
                f"retrieve handler returned {type(p).__name__} at position {i}; expected Passage"
            )
        out.append(p)
    return tuple(out)


def fit_long_context(
    question: str,
    docs: Sequence[ContextDocument | str],
    config: RouteConfig,
    retrieved: Sequence[str] = (),
) -> tuple[FittedContext, str, int]:
    """Fit ``docs`` into the long-context window and build the long-context prompt.

    Returns:
        The fitted context, the prompt, and the prompt's token count (template overhead plus the
        fitted context).
    """
    counter = config.counter
    prompts = config.prompts
    overhead = counter.count(prompts.long_context_prompt(question, "", grounded=config.grounded))
    window = config.long_context_window
    available = None if window is None else window - overhead - config.answer_tokens
    fitted = fit_context(
        docs,
        question=question,
        available_tokens=available,
        strategy=config.overflow,
        retrieved=retrieved,
        counter=counter,
        chunk_words=config.chunk_words,
        window_tokens=window,
    )
    prompt = prompts.long_context_prompt(question, fitted.text, grounded=config.grounded)
    return fitted, prompt, overhead + fitted.tokens


def _record(
    stage: Stage,
    gen: Generation,
    prompt: str,
    counter: TokenCounter,
    prompt_tokens: int | None,
    **facts: Any,
) -> StepRecord:
    usage = gen.usage
    if usage is None:
        if prompt_tokens is None:
            prompt_tokens = counter.count(prompt)
        usage = Usage.of(prompt_tokens, counter.count(gen.text or ""), source=counter.source)
    return StepRecord(
        stage=stage,
        usage=usage,
        model=gen.model,
        latency_s=gen.latency_s,
        prompt_tokens_estimate=prompt_tokens,
        output=gen.text,
        **facts,
    )


@dataclass
class _Answer:
    """What one RAG rung or the long-context step concluded (the flow's private bookkeeping)."""

    answered: bool
    text: str
    verdict: Verdict
    reason: Reason | None = None
    grounding: Grounding | None = None


@dataclass(frozen=True)
class _Speculation:
    """A long-context call started alongside the RAG step."""

    handle: Any
    fitted: FittedContext
    prompt: str
    tokens: int

    def wasted(self, late: Generation | None, counter: TokenCounter) -> StepRecord:
        """The record of the cancelled call: provider usage if it had finished, else its prompt
        counted locally (an estimate: what the provider may bill for a cancelled request)."""
        if late is not None:
            record = _record(Stage.LONG_CONTEXT, late, self.prompt, counter, self.tokens)
            return replace(record, wasted=True)
        return StepRecord(
            stage=Stage.LONG_CONTEXT,
            usage=Usage.of(self.tokens, 0, source=counter.source),
            prompt_tokens_estimate=self.tokens,
            error="cancelled: the RAG step answered",
            wasted=True,
        )


def _sources(passages: Sequence[Passage]) -> list[GroundingSource]:
    return [GroundingSource(p.text, p.doc_id) for p in passages]


def _rag_answer(
    gen: Generation, step: Generate, passages: Sequence[Passage], cfg: RouteConfig
) -> tuple[_Answer, bool]:
    """Classify one RAG-step output (structured or text) and check its grounding.

    Returns:
        The conclusion and whether the verdict came as structured output.
    """
    sentinel = cfg.prompts.sentinel
    quotes: list[str] = []
    structured = gen.structured is not None or gen.structured_error is not None
    if gen.structured is None and gen.structured_error is not None:
        verdict = parse_verdict(gen.text or "", sentinel=sentinel, strict=cfg.strict)
        if verdict.answered:  # not the object asked for: garbled, fail safe
            verdict = Verdict(kind=VerdictKind.GARBLED, answer=verdict.answer)
    elif gen.structured is not None:
        verdict = parse_structured_verdict(gen.structured, sentinel=sentinel, strict=cfg.strict)
        raw_quotes = gen.structured.get("quotes")
        if isinstance(raw_quotes, (list, tuple)):
            quotes = [q for q in raw_quotes if isinstance(q, str)]
    else:
        text = gen.text or ""
        if step.grounded:
            body, quotes = split_quotes(text)
            verdict = parse_verdict(body, sentinel=sentinel, strict=cfg.strict)
        else:
            verdict = parse_verdict(text, sentinel=sentinel, strict=cfg.strict)
    if not verdict.answered:
        return _Answer(False, verdict.answer, verdict, _REASON_BY_KIND[verdict.kind]), structured
    if not step.grounded:
        return _Answer(True, verdict.answer, verdict), structured
    grounding = check_grounding(verdict.answer, quotes, _sources(passages))
    if not grounding.grounded:
        return _Answer(False, verdict.answer, verdict, Reason.UNGROUNDED, grounding), structured
    return _Answer(True, verdict.answer, verdict, None, grounding), structured


def self_route_flow(
    question: str, config: RouteConfig | None = None
) -> Generator[Step, Any, RouteResult]:
    """The Self-Route decision as a generator of step requests.

    Retrieve top-k; if nothing came back, go to long context (``no_chunks``). If pre-routing is
    on and the question is predictably futile for RAG (global question, weak retrieval), go to long
    context at once. Otherwise ask the RAG model to answer from the chunks or decline (sentinel or
    structured verdict), climbing the k-ladder while it declines; classify each output with
    :func:`~selfroute.parse_verdict` (or :func:`~selfroute.parse_structured_verdict`); in grounded
    mode check the answer's quotes against the chunks. If it answered, return that (and price
    always-LC); if not, load and fit the long context and ask the LC model, whose answer is
    classified too (a decline, or in grounded mode an unverified answer, makes the result abstain).

    Args:
        question: The question.
        config: Settings; defaults to :class:`RouteConfig` ().

    Returns:
        (as the generator's return value) the :class:`~selfroute.RouteResult`.

    Raises:
        InvalidInputError: Bad question, raised before any step is yielded.
        RetrievalError: Retrieval failed and there is no long context (or ``on_retrieval_error``
            is ``raise``).
        ModelOutputError: The RAG call failed and ``on_rag_error`` is ``raise``.
        LongContextError: The LC call failed; carries the partial result.
        ContextOverflowError: The document does not fit and ``overflow`` is ``error``.
    """
    cfg = config or RouteConfig()
    q = validate_question(question)
    counter = cfg.counter
    prompts = cfg.prompts
    if cfg.max_question_tokens is not None:
        q_tokens = counter.count(q)
        if q_tokens > cfg.max_question_tokens:
            raise InvalidInputError(
                f"question is {q_tokens} tokens, over max_question_tokens={cfg.max_question_tokens}",
                question_tokens=q_tokens,
            )
    started = time.perf_counter()
    steps: list[StepRecord] = []
    passages: tuple[Passage, ...] = ()  # the chunks shown to the (last) RAG rung
    parents_of: tuple[Passage, ...] = ()  # the top-k chunks whose parents are the long context
    error: str | None = None
    reason: Reason

    def fit(docs: Sequence[ContextDocument | str]) -> tuple[FittedContext, str, int]:
        return fit_long_context(q, docs, cfg, [p.text for p in passages])

    def finish(
        answer: str | None,
        route: Route,
        why: Reason,
        rag_answer: str | None,
        lc_tokens: int | None,
        lc_source: str | None,
        context: FittedContext | None,
        *,
        abstention: Abstention | None = None,
        grounding: Grounding | None = None,
        unverified: str | None = None,
    ) -> RouteResult:
        cost = lc_cost = None
        if cfg.prices is not None:
            costs = [cfg.prices.cost(s.model, s.usage) for s in steps]
            known = [c for c in costs if c is not None]
            cost = sum(known) if known else None
            if lc_tokens is not None:
                lc_steps = [s for s in steps if s.stage is Stage.LONG_CONTEXT and not s.wasted]
                rag_steps = [s for s in steps if s.stage is Stage.RAG]
                model = lc_steps[-1].model if lc_steps else cfg.long_context_model
                model = model or (rag_steps[-1].model if rag_steps else None)
                out_tokens = (
                    (lc_steps[-1] if lc_steps else rag_steps[-1]).usage.output_tokens
                    if (lc_steps or rag_steps)
                    else 0
                )
                lc_cost = cfg.prices.cost(model, Usage.of(lc_tokens, out_tokens))
        return RouteResult(
            question=q,
            answer=answer,
            route=route,
            reason=why,
            rag_answer=rag_answer,
            sources=passages,
            steps=tuple(steps),
            long_context_tokens=lc_tokens,
            long_context_tokens_source=lc_source,
            context=context.to_dict() if context is not None else None,
            cost=cost,
            long_context_cost=lc_cost,
            latency_s=time.perf_counter() - started,
            error=error,
            abstention=abstention,
            citations=grounding.citations if grounding is not None else (),
            verified=grounding.grounded if grounding is not None else None,
            unverified_answer=unverified,
        )

    def conclude(
        lc: Generation, fitted: FittedContext, lc_prompt: str, lc_prompt_tokens: int
    ) -> RouteResult:
        """Classify the long-context answer (a decline or, in grounded mode, an unverified
        answer is an abstention) and build the result."""
        # The long-context answer is classified with the same parser: a decline is an abstention.
        text = clean_answer(lc.text)
        quotes: list[str] = []
        if cfg.grounded:
            text, quotes = split_quotes(text)
        lc_verdict = parse_verdict(text, sentinel=prompts.sentinel)
        grounding: Grounding | None = None
        abstention: Abstention | None = None
        unverified: str | None = None
        answer = text
        if lc_verdict.declined:
            abstention = Abstention.DECLINED
            answer = text or prompts.sentinel
        elif cfg.grounded:
            grounding = check_grounding(lc_verdict.answer, quotes, [GroundingSource(fitted.text)])
            if not grounding.grounded:
                abstention = Abstention.UNGROUNDED
                unverified, answer = text, prompts.sentinel
        record = _record(
            Stage.LONG_CONTEXT,
            lc,
            lc_prompt,
            counter,
            lc_prompt_tokens,
            verdict=lc_verdict.kind.value,
            grounded=grounding.grounded if grounding is not None else None,
        )
        steps.append(record)
        return finish(
            answer,
            Route.LONG_CONTEXT,
            reason,
            rag_answer,
            record.usage.input_tokens,
            record.usage.source,
            fitted,
            abstention=abstention,
            grounding=grounding,
            unverified=unverified,
        )

    # 1. Retrieve ------------------------------------------------------------------------------
    rungs = cfg.rungs
    retrieval_failed = False
    retrieved: Any = None
    try:
        retrieved = yield Retrieve(q, rungs[-1], cfg.retrieval_timeout_s)
    except _CALLER_ERRORS:
        raise
    except Exception as exc:  # includes a RetrievalError raised by a store: same policy
        if cfg.on_retrieval_error is OnError.RAISE:
            if isinstance(exc, RetrievalError):
                raise
            raise RetrievalError(f"retrieval failed: {redact_exception(exc)}", question=q) from exc
        error = f"retrieval: {redact_exception(exc)}"
        retrieval_failed = True
    ranked = _to_passages(retrieved)[: rungs[-1]]
    passages = parents_of = ranked[: cfg.k]

    rag_answer: str | None = None
    pre_reason = None
    if not retrieval_failed and passages and cfg.pre_route is not None:
        pre_reason = cfg.pre_route.check(q, ranked)
    # Speculative long context: weak evidence -> start the LC call alongside the RAG step.
    spec: _Speculation | None = None
    if cfg.speculate_below is not None and passages and pre_reason is None:
        top = max((p.score for p in ranked if p.score is not None), default=None)
        if top is not None and top < cfg.speculate_below:
            try:
                docs = yield LoadLongContext(q, parents_of, purpose="answer")
            except _CALLER_ERRORS:
                raise
            except Exception:  # no speculation; the LC path loads (and reports) it again
                docs = None
            if docs:
                s_fitted, s_prompt, s_tokens = fit(docs)
                if cfg.budget is None or cfg.budget.acquire(s_tokens).allowed:
                    handle = yield Speculate(
                        Generate(
                            Stage.LONG_CONTEXT,
                            s_prompt,
                            q,
                            grounded=cfg.grounded,
                            speculative=True,
                        )
                    )
                    spec = _Speculation(handle, s_fitted, s_prompt, s_tokens)

    if retrieval_failed or not passages:
        reason = Reason.RETRIEVAL_ERROR if retrieval_failed else Reason.NO_CHUNKS
    elif pre_reason is not None:
        reason = pre_reason
    else:
        # 2. RAG-and-route, one rung of the k-ladder at a time --------------------------------
        reason = Reason.DECLINED
        shown = 0
        for rung in rungs:
            if rung > cfg.k and len(ranked[:rung]) <= shown:
                break  # the retriever has nothing more to show: another rung would repeat
            passages = ranked[:rung]
            shown = len(passages)
            texts = [p.text for p in passages]
            structured = None
            if cfg.verdict is not VerdictMode.SENTINEL:
                structured = StructuredRequest(
                    prompt=prompts.structured_rag_prompt(q, texts, grounded=cfg.grounded),
                    schema=verdict_schema(grounded=cfg.grounded),
                    required=cfg.verdict is VerdictMode.STRUCTURED,
                )
            rag_prompt = prompts.rag_prompt(q, texts, grounded=cfg.grounded)
            step = Generate(
                Stage.RAG,
                rag_prompt,
                q,
                prompts.sentinel,
                cfg.strict,
                structured=structured,
                grounded=cfg.grounded,
                k=shown,
            )
            gen: Generation | None
            try:
                gen = yield step
            except _CALLER_ERRORS:
                raise
            except Exception as exc:  # includes a ModelOutputError raised by the adapter
                if cfg.on_rag_error is OnError.RAISE:
                    if isinstance(exc, ModelOutputError):
                        raise
                    raise ModelOutputError(
                        f"RAG-step model call failed: {redact_exception(exc)}", question=q
                    ) from exc
                error = f"rag: {redact_exception(exc)}"
                steps.append(
                    StepRecord(
                        stage=Stage.RAG, usage=Usage.zero(), error=redact_exception(exc), k=shown
                    )
                )
                reason = Reason.RAG_ERROR
                break
            if not isinstance(gen, Generation):
                raise ModelOutputError(
                    f"generate handler returned {type(gen).__name__}; expected Generation"
                )
            outcome, was_structured = _rag_answer(gen, step, passages, cfg)
            used_prompt = structured.prompt if was_structured and structured else rag_prompt
            steps.append(
                _record(
                    Stage.RAG,
                    gen,
                    used_prompt,
                    counter,
                    None,
                    verdict=outcome.verdict.kind.value,
                    k=shown,
                    structured=was_structured,
                    grounded=outcome.grounding.grounded if outcome.grounding else None,
                )
            )
            rag_answer = outcome.text
            if outcome.answered:
                lc_tokens: int | None = None
                lc_source: str | None = None
                context: FittedContext | None = None
                if spec is not None:  # the RAG step answered: cancel the speculative call
                    late: Any = None
                    try:
                        late = yield Settle(spec.handle, cancel=True)
                    except Exception:
                        late = None
                    steps.append(
                        spec.wasted(late if isinstance(late, Generation) else None, counter)
                    )
                    lc_tokens, lc_source, context = spec.tokens, counter.source, spec.fitted
                elif cfg.counterfactual:
                    try:
                        docs = yield LoadLongContext(q, parents_of, purpose="counterfactual")
                        if docs:
                            context, _, lc_tokens = fit(docs)
                            lc_source = counter.source
                    except SelfRouteError:
                        lc_tokens = None
                    except Exception:  # pricing must never cost the answer
                        lc_tokens = None
                return finish(
                    outcome.text,
                    Route.RAG,
                    Reason.ANSWERED,
                    outcome.text,
                    lc_tokens,
                    lc_source,
                    context,
                    grounding=outcome.grounding,
                )
            assert outcome.reason is not None
            reason = outcome.reason

    # 3. Long context --------------------------------------------------------------------------
    if spec is not None:
        fitted, lc_prompt, lc_prompt_tokens = spec.fitted, spec.prompt, spec.tokens
        try:
            lc = yield Settle(spec.handle)
            if not isinstance(lc, Generation):
                raise ModelOutputError(
                    f"generate handler returned {type(lc).__name__}; expected Generation"
                )
        except Exception as exc:
            partial = finish(
                None,
                Route.LONG_CONTEXT,
                reason,
                rag_answer,
                lc_prompt_tokens,
                counter.source,
                fitted,
            )
            raise LongContextError(
                f"long-context model call failed: {redact_exception(exc)}",
                partial=partial,
                question=q,
            ) from exc
        return conclude(lc, fitted, lc_prompt, lc_prompt_tokens)
    try:
        docs = yield LoadLongContext(q, parents_of, purpose="answer")
    except _CALLER_ERRORS:
        raise
    except Exception as exc:  # a loader fault after the RAG step must keep the partial result
        if retrieval_failed:
            raise RetrievalError(
                "retrieval failed and the long context could not be loaded: "
                f"{redact_exception(exc)}",
                question=q,
            ) from exc
        raise LongContextError(
            f"loading the long context failed: {redact_exception(exc)}",
            partial=finish(None, Route.LONG_CONTEXT, reason, rag_answer, None, None, None),
        ) from exc
    if not docs:
        if retrieval_failed:
            raise RetrievalError(
                f"retrieval failed ({error}) and no long context is available to fall back to",
                question=q,
            )
        raise LongContextError(
            f"the RAG step did not answer (reason: {reason.value}) and no long context is "
            "available: give a document, or let the store return parent documents",
            partial=finish(None, Route.LONG_CONTEXT, reason, rag_answer, None, None, None),
        )
    fitted, lc_prompt, lc_prompt_tokens = fit(docs)
    if cfg.budget is not None:
        decision = cfg.budget.acquire(lc_prompt_tokens)
        if not decision.allowed:
            error = f"long-context budget: {decision.reason}"
            return finish(
                rag_answer if rag_answer else prompts.sentinel,
                Route.RAG,
                Reason.OVER_BUDGET,
                rag_answer,
                lc_prompt_tokens,
                counter.source,
                fitted,
                abstention=Abstention.OVER_BUDGET,
            )
    try:
        lc = yield Generate(Stage.LONG_CONTEXT, lc_prompt, q, grounded=cfg.grounded)
        if not isinstance(lc, Generation):
            raise ModelOutputError(
                f"generate handler returned {type(lc).__name__}; expected Generation"
            )
    except Exception as exc:
        partial = finish(
            None, Route.LONG_CONTEXT, reason, rag_answer, lc_prompt_tokens, counter.source, fitted
        )
        raise LongContextError(
            f"long-context model call failed: {redact_exception(exc)}", partial=partial, question=q
        ) from exc
    return conclude(lc, fitted, lc_prompt, lc_prompt_tokens)


# --------------------------------------------------------------------------------------------
# Drivers
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenEvent:
    """Answer text that can be shown to the user.

    Attributes:
        text: The text delta.
        stage: The stage that wrote it.
    """

    text: str
    stage: Stage


@dataclass(frozen=True)
class RouteEvent:
    """The route became known, or changed.

    Emitted before the first token of each route. ``retracted`` is true when text of the RAG
    answer was already emitted and the full output then turned out to be a decline (a refusal whose
    opening looked like an answer): callers should discard the text shown so far.
    """

    route: Route
    reason: Reason | None = None
    retracted: bool = False


@dataclass(frozen=True)
class ResultEvent:
    """The last event: the full result."""

    result: RouteResult


FlowEvent = TokenEvent | RouteEvent | ResultEvent


class _StreamState:
    """Shared bookkeeping of the two drivers for streaming (no I/O)."""

    def __init__(self) -> None:
        self.sniffer: SentinelSniffer | None = None
        self.holding = False
        self.emitted_rag = False
        self.lc_held = False

    def start(self, step: Generate) -> None:
        self.parts: list[str] = []
        self.usage: Usage | None = None
        self.last: GenerationChunk | None = None
        self.obj: GenerationChunk | None = None
        self.holding = step.hold
        if step.stage is Stage.RAG and not step.hold:
            self.sniffer = SentinelSniffer(
                sentinel=step.sentinel or DEFAULT_SENTINEL, strict=step.strict
            )
        else:
            self.sniffer = None
        if step.stage is Stage.LONG_CONTEXT:
            self.lc_held = step.hold

    def generation(self) -> Generation:
        """The streamed call as one :class:`Generation` (text joined, usage summed, the model
        name and any structured object kept)."""
        obj = self.obj
        return Generation(
            text="".join(self.parts),
            usage=self.usage,
            model=self.last.model if self.last is not None else None,
            structured=obj.structured if obj is not None else None,
            structured_error=obj.structured_error if obj is not None else None,
        )

    def feed(self, step: Generate, chunk: GenerationChunk) -> list[FlowEvent]:
        """Keep ``chunk``; return the events it releases."""
        self.parts.append(chunk.text or "")
        self.last = chunk if chunk.model or self.last is None else self.last
        if chunk.usage is not None:
            self.usage = chunk.usage if self.usage is None else self.usage + chunk.usage
        if chunk.structured is not None or chunk.structured_error is not None:
            self.obj = chunk
        if not chunk.text or self.holding:
            return []
        if step.stage is Stage.RAG:
            assert self.sniffer is not None
            released = self.sniffer.feed(chunk.text)
            if not released:
                return []
            events: list[FlowEvent] = []
            if not self.emitted_rag:
                self.emitted_rag = True
                events.append(RouteEvent(Route.RAG, Reason.ANSWERED))
            events.append(TokenEvent(released, Stage.RAG))
            return events
        return [TokenEvent(chunk.text, Stage.LONG_CONTEXT)]

    def before_step(self, step: Step) -> list[FlowEvent]:
        """Called with each step after the first RAG generation: announce the LC route, or take
        back RAG text shown by a rung that then turned out to decline."""
        if isinstance(step, Settle) and not step.cancel:  # the speculative LC call is the answer
            retracted = self.emitted_rag
            self.emitted_rag = False
            self.lc_held = True  # it ran unstreamed: its text is emitted with the result
            return [RouteEvent(Route.LONG_CONTEXT, None, retracted=retracted)]
        if not isinstance(step, Generate):
            return []
        retracted = self.emitted_rag
        self.emitted_rag = False
        if step.stage is Stage.LONG_CONTEXT:
            return [RouteEvent(Route.LONG_CONTEXT, None, retracted=retracted)]
        if retracted:  # the next rung of the k-ladder
            return [RouteEvent(Route.RAG, None, retracted=True)]
        return []

    def finish(self, result: RouteResult) -> list[FlowEvent]:
        events: list[FlowEvent] = []
        answer = result.answer
        if result.route is Route.RAG and answer:
            if self.emitted_rag and self.sniffer is not None:
                rest = self.sniffer.remainder(answer)
            else:  # nothing shown yet: held (structured/grounded) or never released
                events.append(RouteEvent(Route.RAG, result.reason))
                rest = answer
            if rest:
                events.append(TokenEvent(rest, Stage.RAG))
        elif result.route is Route.LONG_CONTEXT and self.lc_held and answer:
            events.append(TokenEvent(answer, Stage.LONG_CONTEXT))
        events.append(ResultEvent(result))
        return events


def _timed(gen: Any, t0: float) -> Any:
    """``gen`` with its latency set; anything else is passed on for the flow to reject."""
    return replace(gen, latency_s=time.perf_counter() - t0) if isinstance(gen, Generation) else gen


def _retrieval_timeout(step: Retrieve) -> TimeoutError:
    return TimeoutError(f"the retriever did not answer within {step.timeout_s:g}s")


def _retrieve(handler: StepHandler, step: Retrieve) -> Sequence[Passage]:
    """``handler.retrieve(step)``, abandoned after ``step.timeout_s`` (the call keeps running in
    a daemon thread; a hung socket cannot be interrupted from outside)."""
    if step.timeout_s is None:
        return handler.retrieve(step)
    box: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # callbacks and tracing see the caller's context

    def run() -> None:
        try:
            box["value"] = context.run(handler.retrieve, step)
        except BaseException as exc:  # handed over to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="selfroute-retrieve", daemon=True).start()
    if not done.wait(step.timeout_s):
        raise _retrieval_timeout(step)
    if "error" in box:
        raise box["error"]
    result: Sequence[Passage] = box["value"]
    return result


async def _aretrieve(handler: AsyncStepHandler, step: Retrieve) -> Sequence[Passage]:
    """``await handler.aretrieve(step)``, cancelled after ``step.timeout_s``."""
    if step.timeout_s is None:
        return await handler.aretrieve(step)
    try:
        return await asyncio.wait_for(handler.aretrieve(step), step.timeout_s)
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        raise _retrieval_timeout(step) from None


class _ThreadSpeculation:
    """A speculative call of the sync driver: ``handler.generate`` in a daemon thread (a call in
    flight cannot be interrupted from outside; a cancelled one is abandoned)."""

    def __init__(self, handler: StepHandler, step: Generate) -> None:
        self.t0 = time.perf_counter()
        self.box: dict[str, Any] = {}
        self.done = threading.Event()
        context = contextvars.copy_context()  # callbacks and tracing see the caller's context

        def run() -> None:
            try:
                self.box["value"] = context.run(handler.generate, step)
            except BaseException as exc:  # handed over when settled
                self.box["error"] = exc
            finally:
                self.done.set()

        threading.Thread(target=run, name="selfroute-speculate", daemon=True).start()

    def settle(self, cancel: bool) -> Any:
        if cancel:
            if self.done.is_set() and "error" not in self.box:
                return _timed(self.box["value"], self.t0)
            return None
        self.done.wait()
        if "error" in self.box:
            raise self.box["error"]
        return _timed(self.box["value"], self.t0)


class _TaskSpeculation:
    """A speculative call of the async driver: ``handler.agenerate`` as a task."""

    def __init__(self, handler: AsyncStepHandler, step: Generate) -> None:
        self.t0 = time.perf_counter()
        self.task: asyncio.Future[Generation] = asyncio.ensure_future(handler.agenerate(step))

    async def settle(self, cancel: bool) -> Any:
        task = self.task
        if cancel:
            if task.done() and not task.cancelled() and task.exception() is None:
                return _timed(task.result(), self.t0)
            task.cancel()
            return None
        return _timed(await task, self.t0)


def drive(
    flow: Generator[Step, Any, RouteResult], handler: StepHandler, *, stream: bool = False
) -> Iterator[FlowEvent]:
    """Run ``flow`` with a sync ``handler``, yielding events; the last is a :class:`ResultEvent`.

    With ``stream=True`` model calls go through ``handler.stream`` and answer text is yielded as
    :class:`TokenEvent` (RAG text only once it can no longer be a decline).
    """
    state = _StreamState()
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = flow.throw(error) if error is not None else flow.send(send)
        except StopIteration as stop:
            yield from state.finish(stop.value)
            return
        send, error = None, None
        if stream:
            yield from state.before_step(step)
        t0 = time.perf_counter()
        try:
            if isinstance(step, Retrieve):
                send = _retrieve(handler, step)
            elif isinstance(step, LoadLongContext):
                send = handler.load_long_context(step)
            elif isinstance(step, Speculate):
                send = _ThreadSpeculation(handler, step.generate)
            elif isinstance(step, Settle):
                send = step.handle.settle(step.cancel)
            elif isinstance(step, Generate):
                if stream:
                    state.start(step)
                    for chunk in handler.stream(step):
                        yield from state.feed(step, chunk)
                    gen = state.generation()
                else:
                    gen = handler.generate(step)
                send = _timed(gen, t0)
            else:  # pragma: no cover - defensive
                raise SelfRouteError(f"unknown step {step!r}")
        except Exception as exc:
            error = exc


async def adrive(
    flow: Generator[Step, Any, RouteResult], handler: AsyncStepHandler, *, stream: bool = False
) -> AsyncIterator[FlowEvent]:
    """Async twin of :func:`drive`: awaits the handler, never blocks the event loop."""
    state = _StreamState()
    send: Any = None
    error: BaseException | None = None
    speculations: list[_TaskSpeculation] = []
    try:
        while True:
            try:
                step = flow.throw(error) if error is not None else flow.send(send)
            except StopIteration as stop:
                for ev in state.finish(stop.value):
                    yield ev
                return
            send, error = None, None
            if stream:
                for ev in state.before_step(step):
                    yield ev
            t0 = time.perf_counter()
            try:
                if isinstance(step, Retrieve):
                    send = await _aretrieve(handler, step)
                elif isinstance(step, LoadLongContext):
                    send = await handler.aload_long_context(step)
                elif isinstance(step, Speculate):
                    send = _TaskSpeculation(handler, step.generate)
                    speculations.append(send)
                elif isinstance(step, Settle):
                    send = await step.handle.settle(step.cancel)
                elif isinstance(step, Generate):
                    if stream:
                        state.start(step)
                        async for chunk in handler.astream(step):
                            for ev in state.feed(step, chunk):
                                yield ev
                        gen = state.generation()
                    else:
                        gen = await handler.agenerate(step)
                    send = _timed(gen, t0)
                else:  # pragma: no cover - defensive
                    raise SelfRouteError(f"unknown step {step!r}")
            except Exception as exc:
                error = exc
    finally:  # cancelled, failed or finished: no speculative call outlives the run
        for spec in speculations:
            spec.task.cancel()


def run_flow(flow: Generator[Step, Any, RouteResult], handler: StepHandler) -> RouteResult:
    """Run ``flow`` to completion with a sync handler and return its result."""
    for event in drive(flow, handler):
        if isinstance(event, ResultEvent):
            return event.result
    raise SelfRouteError("flow ended without a result")  # pragma: no cover


async def arun_flow(
    flow: Generator[Step, Any, RouteResult], handler: AsyncStepHandler
) -> RouteResult:
    """Run ``flow`` to completion with an async handler and return its result."""
    async for event in adrive(flow, handler):
        if isinstance(event, ResultEvent):
            return event.result
    raise SelfRouteError("flow ended without a result")  # pragma: no cover
