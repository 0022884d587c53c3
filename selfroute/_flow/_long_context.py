"""Stage 4, long context: fit the whole document into the window and answer from it.

Loads the long context (or takes the speculative call's), fits it (:func:`fit_long_context`),
checks the long-context budget (over budget: the result abstains, ``over_budget``), calls the
long-context model and classifies its answer with the same verdict parser: a decline, or in
grounded mode an answer whose quotes are not in the context, makes the result abstain. A failed
call raises :class:`~selfroute.LongContextError` carrying the partial result.
"""

from __future__ import annotations

from selfroute._errors import LongContextError, RetrievalError
from selfroute._faults import processed_output
from selfroute._flow._config import clean_answer
from selfroute._flow._finish import build_result
from selfroute._flow._fit import LongContextPrompt, fit_long_context
from selfroute._flow._speculation import settle_speculation
from selfroute._flow._state import (
    CALLER_ERRORS,
    FlowState,
    Outcome,
    Priced,
    Steps,
    expect_generation,
    failed_step,
    record_step,
)
from selfroute._flow._steps import Generate, Generation, LoadLongContext
from selfroute._grounding import Grounding, GroundingSource, check_grounding, split_quotes
from selfroute._redact import redact_exception
from selfroute._result import Abstention, Reason, Route, RouteResult, Stage
from selfroute._verdict import parse_verdict

__all__ = [
    "classify_long_context",
    "load_long_context",
    "long_context",
    "long_context_call",
]


def long_context(state: FlowState) -> Steps[RouteResult]:
    """Answer from the long context (the RAG step did not answer, or never ran).

    With a speculative call in flight its answer is the long-context answer; otherwise load and
    fit the long context, check the budget and call the model.

    Returns:
        The result.

    Raises:
        LongContextError: No long context, loading it failed, or the call failed (carries the
            partial result).
        RetrievalError: Retrieval failed and there is no long context either.
        ContextOverflowError: The document does not fit and ``overflow`` is ``error``.
    """
    if state.speculation is not None:
        lc, call = state.speculation.lc, settle_speculation(state)
    else:
        lc = yield from load_long_context(state)
        budget = state.config.budget
        decision = budget.acquire(lc.tokens) if budget is not None else None
        if decision is not None and not decision.allowed:
            over = state.evolve(error=f"long-context budget: {decision.reason}")
            return build_result(over, _over_budget(over, lc))
        call = long_context_call(state, lc)
    priced = Priced(lc.tokens, state.counter.source, lc.fitted)
    try:
        gen = yield from call
    except Exception as exc:
        failed = state
        if processed_output(exc) is not None:  # the provider worked on it: keep its tokens
            record = failed_step(Stage.LONG_CONTEXT, exc, lc.prompt, state.counter)
            failed = state.with_step(record)
        late = _late(state)
        raise LongContextError(
            f"long-context model call failed{late}: {redact_exception(exc)}{_after(state)}",
            partial=_partial(failed, priced),
            question=state.question,
            deadline_s=state.config.deadline_s if late else None,
        ) from exc
    if not clean_answer(gen.text) and gen.structured is None:
        # an empty reply is a failure, not "not found in the documents"
        record = record_step(Stage.LONG_CONTEXT, gen, lc.prompt, state.counter, lc.tokens)
        raise LongContextError(
            "the long-context model returned an empty reply (finish_reason="
            f"{gen.finish_reason or 'not reported'}){_after(state)}",
            partial=_partial(state.with_step(record), priced),
            question=state.question,
        )
    return build_result(*classify_long_context(state, gen, lc))


def _late(state: FlowState) -> str:
    """`` (the call's deadline ... passed)`` when it has, for a long-context error; else ``""``."""
    why = state.out_of_time()
    return f" ({why})" if why else ""


def _after(state: FlowState) -> str:
    """What failed before the long-context step, for its error (both steps failing)."""
    if not state.error:
        return ""
    first = "the RAG step" if state.reason is Reason.RAG_ERROR else "retrieval"
    error = (
        state.error if len(state.error) <= 300 else state.error[:300] + "... (see partial.error)"
    )
    return f"; {first} had failed first ({error})"


def load_long_context(state: FlowState) -> Steps[LongContextPrompt]:
    """Load the long context (parents of the top-k chunks, or the given document) and fit it.

    Raises:
        LongContextError: Loading failed, or there is no long context (carries the partial).
        RetrievalError: Retrieval failed too: there is nothing to answer from.
    """
    q = state.question
    reason = state.reason
    assert reason is not None
    try:
        timeout = state.bound(state.config.retrieval_timeout_s)
        docs = yield LoadLongContext(q, state.parents_of, purpose="answer", timeout_s=timeout)
    except CALLER_ERRORS:
        raise
    except Exception as exc:  # a loader fault after the RAG step must keep the partial result
        late = _late(state)
        if state.retrieval_failed:
            raise RetrievalError(
                f"retrieval failed and the long context could not be loaded{late}: "
                f"{redact_exception(exc)}",
                question=q,
            ) from exc
        raise LongContextError(
            f"loading the long context failed{late}: {redact_exception(exc)}",
            partial=_partial(state),
            deadline_s=state.config.deadline_s if late else None,
        ) from exc
    if not docs:
        if state.retrieval_failed:
            raise RetrievalError(
                f"retrieval failed ({state.error}) and no long context is available to fall back "
                "to",
                question=q,
            )
        raise LongContextError(
            f"the RAG step did not answer (reason: {reason.value}) and no long context is "
            "available: give a document, or let the store return parent documents",
            partial=_partial(state),
        )
    return fit_long_context(q, docs, state.config, [p.text for p in state.passages])


def long_context_call(state: FlowState, lc: LongContextPrompt) -> Steps[Generation]:
    """Run the long-context model on the fitted prompt."""
    cfg = state.config
    step = Generate(
        Stage.LONG_CONTEXT,
        lc.prompt,
        state.question,
        grounded=cfg.grounded,
        timeout_s=state.bound(),
    )
    return expect_generation((yield step))


def classify_long_context(
    state: FlowState, gen: Generation, lc: LongContextPrompt
) -> tuple[FlowState, Outcome]:
    """Classify the long-context answer and record the call.

    The answer goes through the RAG step's verdict parser: a decline is an abstention
    (``declined``); in grounded mode an answer whose quotes are not in the fitted context is
    withheld (``ungrounded``, kept in ``unverified_answer``).

    Returns:
        The state with the call recorded, and the outcome.
    """
    cfg = state.config
    sentinel = cfg.prompts.sentinel
    text = clean_answer(gen.text)
    quotes: list[str] = []
    if cfg.grounded:
        text, quotes = split_quotes(text)
    verdict = parse_verdict(
        text, sentinel=sentinel, question=state.question, detector=cfg.decline_detector
    )
    grounding: Grounding | None = None
    abstention: Abstention | None = None
    unverified: str | None = None
    answer = text
    if verdict.declined:
        abstention = Abstention.DECLINED
        answer = text or sentinel
    elif cfg.grounded:
        grounding = check_grounding(verdict.answer, quotes, [GroundingSource(lc.fitted.text)])
        if not grounding.grounded:
            abstention = Abstention.UNGROUNDED
            unverified, answer = text, sentinel
    record = record_step(
        Stage.LONG_CONTEXT,
        gen,
        lc.prompt,
        state.counter,
        lc.tokens,
        verdict=verdict.kind.value,
        grounded=grounding.grounded if grounding is not None else None,
    )
    assert state.reason is not None
    outcome = Outcome(
        answer,
        Route.LONG_CONTEXT,
        state.reason,
        Priced(record.usage.input_tokens, record.usage.source, lc.fitted),
        abstention=abstention,
        grounding=grounding,
        unverified=unverified,
    )
    return state.with_step(record), outcome


def _partial(state: FlowState, priced: Priced | None = None) -> RouteResult:
    """The partial result a :class:`~selfroute.LongContextError` carries (``answer=None``)."""
    assert state.reason is not None
    return build_result(state, Outcome(None, Route.LONG_CONTEXT, state.reason, priced or Priced()))


#: RAG outputs that are never an answer: unverified (grounded mode) or cut short.
_WITHHELD = (Reason.UNGROUNDED, Reason.TRUNCATED)


def _over_budget(state: FlowState, lc: LongContextPrompt) -> Outcome:
    """The budget refused the long-context call: answer with what the RAG step said (or the
    sentinel), abstaining ``over_budget``. An unverified (grounded mode) or truncated RAG
    answer is withheld: the answer is the sentinel, the text is kept in ``unverified_answer``."""
    sentinel = state.config.prompts.sentinel
    withheld = state.rag_answer if state.reason in _WITHHELD and state.rag_answer else None
    return Outcome(
        sentinel if withheld or not state.rag_answer else state.rag_answer,
        Route.RAG,
        Reason.OVER_BUDGET,
        Priced(lc.tokens, state.counter.source, lc.fitted),
        abstention=Abstention.OVER_BUDGET,
        grounding=state.grounding,
        unverified=withheld,
    )
