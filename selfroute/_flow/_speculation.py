"""Speculative long context: on weak evidence, start the long-context call alongside the RAG step.

:func:`start_speculation` starts it (when ``speculate_below`` is set and the best chunk scores
under it); :func:`cancel_speculation` cancels it once the RAG step answered (the call's tokens are
recorded as a ``wasted`` step); :func:`settle_speculation` waits for it when the RAG step declined.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from selfroute._flow._counterfactual import in_provider_tokens
from selfroute._flow._fit import fit_long_context
from selfroute._flow._state import (
    CALLER_ERRORS,
    FlowState,
    Priced,
    Speculation,
    Steps,
    expect_generation,
    record_step,
)
from selfroute._flow._steps import Generate, Generation, LoadLongContext, Settle, Speculate
from selfroute._result import Stage, StepRecord
from selfroute._tokens import TokenCounter
from selfroute._usage import Usage

__all__ = ["cancel_speculation", "settle_speculation", "start_speculation", "wasted_record"]


def start_speculation(state: FlowState) -> Steps[FlowState]:
    """Start the long-context call in the background when the evidence is weak.

    Runs only while the RAG step is still to run (``reason is None``) and the best retrieved
    chunk scores under ``speculate_below``. A long context that cannot be loaded, or a budget
    that refuses it, means no speculation (the long-context path loads and reports it again).

    Returns:
        The state with ``speculation`` set when a call was started.
    """
    cfg = state.config
    if cfg.speculate_below is None or state.reason is not None:
        return state
    top = max((p.score for p in state.ranked if p.score is not None), default=None)
    if top is None or top >= cfg.speculate_below:
        return state
    try:
        timeout = state.bound(cfg.retrieval_timeout_s)
        docs = yield LoadLongContext(
            state.question, state.parents_of, purpose="answer", timeout_s=timeout
        )
    except CALLER_ERRORS:
        raise
    except Exception:  # no speculation; the LC path loads (and reports) it again
        docs = None
    if not docs:
        return state
    lc = fit_long_context(state.question, docs, cfg, [p.text for p in state.passages])
    if cfg.budget is not None and not cfg.budget.acquire(lc.tokens).allowed:
        return state
    handle = yield Speculate(
        Generate(
            Stage.LONG_CONTEXT, lc.prompt, state.question, grounded=cfg.grounded, speculative=True
        )
    )
    return state.evolve(speculation=Speculation(handle, lc))


def wasted_record(spec: Speculation, late: Generation | None, counter: TokenCounter) -> StepRecord:
    """The record of the cancelled call: provider usage if it had finished, else its prompt
    counted locally (an estimate: what the provider may bill for a cancelled request)."""
    if late is not None:
        record = record_step(Stage.LONG_CONTEXT, late, spec.lc.prompt, counter, spec.lc.tokens)
        return replace(record, wasted=True)
    return StepRecord(
        stage=Stage.LONG_CONTEXT,
        usage=Usage.of(spec.lc.tokens, 0, source=counter.source),
        prompt_tokens_estimate=spec.lc.tokens,
        error="cancelled: the RAG step answered",
        wasted=True,
    )


def cancel_speculation(state: FlowState) -> Steps[tuple[FlowState, Priced]]:
    """The RAG step answered: cancel the speculative call and record what it cost.

    Returns:
        The state with the ``wasted`` step recorded, and the long context's size (the
        speculation already fitted it: always-LC is priced from it, no second load).
    """
    spec = state.speculation
    assert spec is not None
    late: Any = None
    try:
        late = yield Settle(spec.handle, cancel=True)
    except Exception:
        late = None
    finished = late if isinstance(late, Generation) else None
    record = wasted_record(spec, finished, state.counter)
    priced = Priced(*in_provider_tokens(spec.lc.tokens, state), spec.lc.fitted)
    return state.with_step(record), priced


def settle_speculation(state: FlowState) -> Steps[Generation]:
    """The RAG step did not answer: wait for the speculative call; its output is the answer.

    Raises:
        Exception: Whatever the call raised (the long-context stage turns it into a
            :class:`~selfroute.LongContextError` carrying the partial result).
    """
    spec = state.speculation
    assert spec is not None
    return expect_generation((yield Settle(spec.handle, timeout_s=state.bound())))
