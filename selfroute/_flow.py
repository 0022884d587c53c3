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
from collections.abc import AsyncIterator, Awaitable, Generator, Iterable, Iterator, Sequence
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
from selfroute._prompts import DEFAULT_SENTINEL, Prompts
from selfroute._redact import redact_exception
from selfroute._result import Passage, PriceTable, Reason, Route, RouteResult, Stage, StepRecord
from selfroute._streaming import SentinelSniffer
from selfroute._tokens import TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import VerdictKind, parse_verdict, strip_reasoning

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
    "Step",
    "StepHandler",
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
    """

    stage: Stage
    prompt: str
    question: str
    sentinel: str | None = None
    strict: bool = False


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


Step = Retrieve | Generate | LoadLongContext


@dataclass(frozen=True)
class Generation:
    """A finished model call.

    Attributes:
        text: What the model wrote.
        usage: Provider-reported usage, or ``None`` if the provider reported none (the flow then
            estimates it and labels it an estimate).
        model: Model name as reported by the provider.
        latency_s: Set by the driver.
    """

    text: str
    usage: Usage | None = None
    model: str | None = None
    latency_s: float = 0.0


@dataclass(frozen=True)
class GenerationChunk:
    """A piece of a streamed model call; usage and model usually arrive on the last piece."""

    text: str = ""
    usage: Usage | None = None
    model: str | None = None


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

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {self.k!r}")
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
    overhead = counter.count(prompts.long_context_prompt(question, ""))
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
    return fitted, prompts.long_context_prompt(question, fitted.text), overhead + fitted.tokens


def _record(
    stage: Stage, gen: Generation, prompt: str, counter: TokenCounter, prompt_tokens: int | None
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
    )


def self_route_flow(
    question: str, config: RouteConfig | None = None
) -> Generator[Step, Any, RouteResult]:
    """The Self-Route decision as a generator of step requests.

    Retrieve top-k; if nothing came back, go to long context (``no_chunks``). Otherwise ask the RAG
    model to answer from the chunks or decline; classify its output with
    :func:`~selfroute.parse_verdict`; if it answered, return that (and price always-LC); if it
    declined, load and fit the long context and ask the LC model.

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
    passages: tuple[Passage, ...] = ()
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
    ) -> RouteResult:
        cost = lc_cost = None
        if cfg.prices is not None:
            costs = [cfg.prices.cost(s.model, s.usage) for s in steps]
            known = [c for c in costs if c is not None]
            cost = sum(known) if known else None
            if lc_tokens is not None:
                lc_steps = [s for s in steps if s.stage is Stage.LONG_CONTEXT]
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
        )

    # 1. Retrieve ------------------------------------------------------------------------------
    retrieval_failed = False
    retrieved: Any = None
    try:
        retrieved = yield Retrieve(q, cfg.k, cfg.retrieval_timeout_s)
    except _CALLER_ERRORS:
        raise
    except Exception as exc:  # includes a RetrievalError raised by a store: same policy
        if cfg.on_retrieval_error is OnError.RAISE:
            if isinstance(exc, RetrievalError):
                raise
            raise RetrievalError(f"retrieval failed: {redact_exception(exc)}", question=q) from exc
        error = f"retrieval: {redact_exception(exc)}"
        retrieval_failed = True
    passages = _to_passages(retrieved)[: cfg.k]

    rag_answer: str | None = None
    if retrieval_failed or not passages:
        reason = Reason.RETRIEVAL_ERROR if retrieval_failed else Reason.NO_CHUNKS
    else:
        # 2. RAG-and-route ---------------------------------------------------------------------
        rag_prompt = prompts.rag_prompt(q, [p.text for p in passages])
        rag_prompt_tokens: int | None = None  # counted only if the provider reports no usage
        gen: Generation | None
        try:
            gen = yield Generate(Stage.RAG, rag_prompt, q, prompts.sentinel, cfg.strict)
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
                    stage=Stage.RAG,
                    usage=Usage.zero(),
                    prompt_tokens_estimate=rag_prompt_tokens,
                    error=redact_exception(exc),
                )
            )
            gen = None
        else:
            if not isinstance(gen, Generation):
                raise ModelOutputError(
                    f"generate handler returned {type(gen).__name__}; expected Generation"
                )
        if gen is None:
            reason = Reason.RAG_ERROR
        else:
            steps.append(_record(Stage.RAG, gen, rag_prompt, counter, rag_prompt_tokens))
            verdict = parse_verdict(gen.text, sentinel=prompts.sentinel, strict=cfg.strict)
            rag_answer = verdict.answer
            if verdict.answered:
                lc_tokens: int | None = None
                lc_source: str | None = None
                context: FittedContext | None = None
                if cfg.counterfactual:
                    try:
                        docs = yield LoadLongContext(q, passages, purpose="counterfactual")
                        if docs:
                            context, _, lc_tokens = fit(docs)
                            lc_source = counter.source
                    except SelfRouteError:
                        lc_tokens = None
                    except Exception:  # pricing must never cost the answer
                        lc_tokens = None
                return finish(
                    verdict.answer,
                    Route.RAG,
                    Reason.ANSWERED,
                    verdict.answer,
                    lc_tokens,
                    lc_source,
                    context,
                )
            reason = _REASON_BY_KIND[verdict.kind]

    # 3. Long context --------------------------------------------------------------------------
    try:
        docs = yield LoadLongContext(q, passages, purpose="answer")
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
            )
    try:
        lc = yield Generate(Stage.LONG_CONTEXT, lc_prompt, q)
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
    record = _record(Stage.LONG_CONTEXT, lc, lc_prompt, counter, lc_prompt_tokens)
    steps.append(record)
    return finish(
        clean_answer(lc.text),
        Route.LONG_CONTEXT,
        reason,
        rag_answer,
        record.usage.input_tokens,
        record.usage.source,
        fitted,
    )


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
        self.emitted_rag = False

    def start(self, step: Generate) -> list[FlowEvent]:
        events: list[FlowEvent] = []
        if step.stage is Stage.RAG:
            self.sniffer = SentinelSniffer(
                sentinel=step.sentinel or DEFAULT_SENTINEL, strict=step.strict
            )
        else:
            self.sniffer = None
        return events

    def feed(self, step: Generate, chunk: GenerationChunk, parts: list[str]) -> list[FlowEvent]:
        parts.append(chunk.text or "")
        if not chunk.text:
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
        """Called with each step after the RAG generation: announce the LC route."""
        if isinstance(step, Generate) and step.stage is Stage.LONG_CONTEXT:
            retracted = self.emitted_rag
            self.emitted_rag = False
            return [RouteEvent(Route.LONG_CONTEXT, None, retracted=retracted)]
        return []

    def finish(self, result: RouteResult) -> list[FlowEvent]:
        events: list[FlowEvent] = []
        if result.route is Route.RAG and self.sniffer is not None and result.answer:
            rest = self.sniffer.remainder(result.answer)
            if not self.emitted_rag:
                events.append(RouteEvent(Route.RAG, result.reason))
            if rest:
                events.append(TokenEvent(rest, Stage.RAG))
        events.append(ResultEvent(result))
        return events


def _combine(parts: list[str], last: GenerationChunk | None, usage: Usage | None) -> Generation:
    return Generation(
        text="".join(parts), usage=usage, model=last.model if last is not None else None
    )


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


def _merge_usage(usage: Usage | None, chunk: GenerationChunk) -> Usage | None:
    if chunk.usage is None:
        return usage
    return chunk.usage if usage is None else usage + chunk.usage


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
            elif isinstance(step, Generate):
                if stream:
                    state.start(step)
                    parts: list[str] = []
                    usage: Usage | None = None
                    last: GenerationChunk | None = None
                    for chunk in handler.stream(step):
                        last = chunk if chunk.model or last is None else last
                        usage = _merge_usage(usage, chunk)
                        yield from state.feed(step, chunk, parts)
                    gen = _combine(parts, last, usage)
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
            elif isinstance(step, Generate):
                if stream:
                    state.start(step)
                    parts: list[str] = []
                    usage: Usage | None = None
                    last: GenerationChunk | None = None
                    async for chunk in handler.astream(step):
                        last = chunk if chunk.model or last is None else last
                        usage = _merge_usage(usage, chunk)
                        for ev in state.feed(step, chunk, parts):
                            yield ev
                    gen = _combine(parts, last, usage)
                else:
                    gen = await handler.agenerate(step)
                send = _timed(gen, t0)
            else:  # pragma: no cover - defensive
                raise SelfRouteError(f"unknown step {step!r}")
        except Exception as exc:
            error = exc


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
