"""The immutable state the flow's stages pass along, and the helpers they share.

Each stage is a generator that takes a :class:`FlowState`, yields step requests, and returns a new
:class:`FlowState` (``dataclasses.replace``; nothing is mutated), or, for the last stage, the
:class:`~selfroute.RouteResult` (built in one place, :func:`selfroute._flow._finish.build_result`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from selfroute._errors import (
    ConfigurationError,
    InvalidInputError,
    MissingDependencyError,
    ModelOutputError,
    SelfRouteError,
)
from selfroute._faults import processed_output
from selfroute._fitting import FittedContext
from selfroute._flow._config import RouteConfig, validate_question
from selfroute._flow._fit import LongContextPrompt
from selfroute._flow._steps import Generation, Step
from selfroute._grounding import Grounding
from selfroute._redact import redact_exception
from selfroute._result import Abstention, Passage, Reason, Route, Stage, StepRecord
from selfroute._tokens import TokenCounter
from selfroute._usage import Usage

__all__ = [
    "CALLER_ERRORS",
    "FlowState",
    "Outcome",
    "Priced",
    "Speculation",
    "Steps",
    "expect_generation",
    "record_step",
    "start",
    "to_passages",
    "warn_escalation",
]

#: The counterfactual's load is best effort: at most this long once any time limit is set.
COUNTERFACTUAL_TIMEOUT_S = 2.0

logger = logging.getLogger("selfroute")

T = TypeVar("T")

Steps = Generator[Step, Any, T]
"""A stage: yields step requests, receives their answers, returns ``T``."""

#: Errors a handler raises that are the caller's to fix: they surface at once, never escalate.
CALLER_ERRORS = (ConfigurationError, InvalidInputError, MissingDependencyError)


@dataclass(frozen=True)
class Speculation:
    """A long-context call started alongside the RAG step (see ``_speculation``).

    Attributes:
        handle: The driver's opaque handle, for :class:`~selfroute.flow.Settle`.
        lc: The prompt it runs on.
    """

    handle: Any
    lc: LongContextPrompt


@dataclass(frozen=True)
class FlowState:
    """Everything the stages have learnt so far about one question.

    Attributes:
        question: The validated question.
        config: The settings.
        started: ``time.perf_counter()`` when the flow started (for the result's latency).
        steps: The model calls made so far, in order.
        ranked: Everything retrieved, best first (up to the largest rung).
        passages: The chunks shown to the (last) RAG rung; the result's sources.
        parents_of: The top-k chunks whose parent documents are the long context.
        error: What failed on the way (retrieval or the RAG call), for the result.
        retrieval_failed: The retriever raised (and the flow escalates).
        reason: Why the flow routes as it does: ``None`` while the RAG step may still run,
            :attr:`~selfroute.Reason.ANSWERED` once it answered, else why it goes to long context.
        rag_answer: The (last) RAG rung's answer text, or ``None``.
        grounding: The grounding check of the RAG answer (grounded mode).
        speculation: The speculative long-context call in flight, if any.
    """

    question: str
    config: RouteConfig
    started: float
    steps: tuple[StepRecord, ...] = ()
    ranked: tuple[Passage, ...] = ()
    passages: tuple[Passage, ...] = ()
    parents_of: tuple[Passage, ...] = ()
    error: str | None = None
    retrieval_failed: bool = False
    reason: Reason | None = None
    rag_answer: str | None = None
    grounding: Grounding | None = None
    speculation: Speculation | None = None

    @property
    def counter(self) -> TokenCounter:
        """The token counter in use."""
        return self.config.counter

    def time_left(self) -> float | None:
        """Seconds left of ``deadline_s`` (never negative), or ``None`` without a deadline."""
        deadline = self.config.deadline_s
        if deadline is None:
            return None
        return max(0.0, self.started + deadline - time.perf_counter())

    def bound(self, *limits: float | None) -> float | None:
        """The tightest of ``limits`` and what is left of the deadline (``None``: no limit)."""
        known = [x for x in (*limits, self.time_left()) if x is not None]
        return min(known) if known else None

    def out_of_time(self) -> str | None:
        """Why the call must stop now (its deadline passed), or ``None``."""
        left = self.time_left()
        if left is None or left > 0:
            return None
        return f"the call's deadline (deadline_s={self.config.deadline_s:g}) passed"

    def check_time(self, exc: BaseException, error: type[SelfRouteError], during: str) -> None:
        """Raise ``error`` (from ``exc``) naming the stage if the deadline has passed: a step
        that failed out of time is not escalated (there is no time left to)."""
        if why := self.out_of_time():
            raise error(
                f"{why} during {during}: {redact_exception(exc)}",
                question=self.question,
                deadline_s=self.config.deadline_s,
            ) from exc

    def evolve(self, **changes: Any) -> FlowState:
        """A copy with ``changes`` applied (``dataclasses.replace`` without re-running
        ``__init__``: the flow makes a few copies per question, so they stay cheap).

        Raises:
            TypeError: A name in ``changes`` is not a field.
        """
        unknown = changes.keys() - _STATE_FIELDS
        if unknown:
            raise TypeError(f"FlowState has no field(s) {sorted(unknown)}")
        new = object.__new__(FlowState)
        new.__dict__.update(self.__dict__, **changes)  # frozen: fill the copy's dict directly
        return new

    def with_step(self, record: StepRecord, **changes: Any) -> FlowState:
        """A copy with ``record`` appended to :attr:`steps` (and ``changes`` applied)."""
        return self.evolve(steps=(*self.steps, record), **changes)


_STATE_FIELDS = frozenset(f.name for f in fields(FlowState))


@dataclass(frozen=True)
class Priced:
    """What the long context costs (or would have cost) in input tokens.

    Attributes:
        tokens: Input tokens of the long-context prompt (``None``: unknown).
        source: How they were counted (``provider`` or the local counter's name).
        context: What was fitted into the window.
    """

    tokens: int | None = None
    source: str | None = None
    context: FittedContext | None = None


@dataclass(frozen=True)
class Outcome:
    """How the flow concluded: what the result says beyond the state.

    Attributes:
        answer: The answer (``None`` for the partial result of a failed long-context step).
        route: The route taken.
        reason: Why.
        priced: The long context's size and fitting.
        abstention: Why the result abstains, if it does.
        grounding: The grounding check of the answer (grounded mode).
        unverified: An unverified long-context answer withheld by grounded mode.
    """

    answer: str | None
    route: Route
    reason: Reason
    priced: Priced = Priced()
    abstention: Abstention | None = None
    grounding: Grounding | None = None
    unverified: str | None = None


def start(question: str, config: RouteConfig) -> FlowState:
    """Check the question and open the state.

    Raises:
        InvalidInputError: The question is not a non-empty string, or longer than
            ``max_question_tokens``.
    """
    q = validate_question(question)
    if config.max_question_tokens is not None:
        q_tokens = config.counter.count(q)
        if q_tokens > config.max_question_tokens:
            raise InvalidInputError(
                f"question is {q_tokens} tokens, over max_question_tokens="
                f"{config.max_question_tokens}",
                question_tokens=q_tokens,
            )
    return FlowState(question=q, config=config, started=time.perf_counter())


def warn_escalation(what: str, exc: BaseException) -> None:
    """Log an error-driven escalation to long context (a warning on the ``selfroute`` logger):
    escalating on errors spends the expensive model, so it must never be silent."""
    logger.warning("%s; escalating to long context: %s", what, redact_exception(exc))


def to_passages(items: Any) -> tuple[Passage, ...]:
    """The retriever's answer as passages, or :class:`~selfroute.SelfRouteError`."""
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


def expect_generation(gen: Any) -> Generation:
    """``gen`` if the handler answered a model step with a :class:`Generation`."""
    if not isinstance(gen, Generation):
        raise ModelOutputError(
            f"generate handler returned {type(gen).__name__}; expected Generation"
        )
    return gen


def failed_step(
    stage: Stage, exc: BaseException, prompt: str, counter: TokenCounter, **facts: Any
) -> StepRecord:
    """The record of a failed model call.

    Its usage is zero unless there is evidence that the provider worked on the call (a stream
    that broke after its first chunks, a 200 reply with no choices: see
    :func:`selfroute._faults.processed_output`); then the prompt and the text received are
    counted locally, labelled an estimate, so the ledger does not under-report a call that may
    be billed.
    """
    received = processed_output(exc)
    usage = (
        Usage.zero()
        if received is None
        else Usage.of(counter.count(prompt), counter.count(received), source=counter.source)
    )
    return StepRecord(
        stage=stage,
        usage=usage,
        error=redact_exception(exc),
        output=received or None,
        **facts,
    )


def record_step(
    stage: Stage,
    gen: Generation,
    prompt: str,
    counter: TokenCounter,
    prompt_tokens: int | None,
    **facts: Any,
) -> StepRecord:
    """The record of one model call; usage counted locally when the provider reported none."""
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
        finish_reason=gen.finish_reason,
        **facts,
    )
