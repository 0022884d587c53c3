"""The one place that builds a :class:`~selfroute.RouteResult`: from the state and an outcome."""

from __future__ import annotations

import threading
import time
import warnings

from selfroute._flow._state import FlowState, Outcome
from selfroute._pricing import PriceTable
from selfroute._result import RouteResult, Stage, StepRecord
from selfroute._usage import Usage

__all__ = ["build_result", "long_context_cost"]


def _long_context_model(steps: tuple[StepRecord, ...], default_model: str | None) -> str | None:
    """The model that prices long context: the LC step's, else ``default_model``, else the
    RAG step's."""
    lc_steps = [s for s in steps if s.stage is Stage.LONG_CONTEXT and not s.wasted]
    rag_steps = [s for s in steps if s.stage is Stage.RAG]
    model = lc_steps[-1].model if lc_steps else default_model
    return model or (rag_steps[-1].model if rag_steps else None)


def long_context_cost(
    steps: tuple[StepRecord, ...],
    prices: PriceTable,
    tokens: int,
    default_model: str | None,
    *,
    batch: bool = False,
) -> float | None:
    """What answering from the long context costs (or would have cost: always-LC's price).

    The model is the long-context step's (else ``default_model``, else the RAG step's); the
    output tokens are the answer's that the flow has (the long-context step's, else the RAG's).
    ``batch`` prices it at the batch rate (always-LC through a batch API).
    """
    lc_steps = [s for s in steps if s.stage is Stage.LONG_CONTEXT and not s.wasted]
    rag_steps = [s for s in steps if s.stage is Stage.RAG]
    model = _long_context_model(steps, default_model)
    out_tokens = (
        (lc_steps[-1] if lc_steps else rag_steps[-1]).usage.output_tokens
        if (lc_steps or rag_steps)
        else 0
    )
    return prices.cost(model, Usage.of(tokens, out_tokens), batch=batch)


_warned_lock = threading.Lock()
_warned: set[str] = set()


def _warn_unpriced(models: list[str], prices: PriceTable) -> None:
    """One :class:`UserWarning` per process and model that the price table does not know."""
    with _warned_lock:
        new = [m for m in models if m not in _warned]
        _warned.update(new)
    known = ", ".join(sorted(prices.prices)) or "nothing"
    for model in new:
        warnings.warn(
            f"selfroute: no price for model {model!r} (the PriceTable has {known}); its tokens "
            "are left out of the cost (see RouteResult.unpriced_models). Add the name the "
            "provider reports, or a prefix of it, to the PriceTable",
            UserWarning,
            stacklevel=2,
        )


def _priced(state: FlowState, outcome: Outcome) -> tuple[float | None, float | None, list[str]]:
    """``(cost, long_context_cost, unpriced models)`` of the call."""
    cfg = state.config
    prices = cfg.prices
    if prices is None:
        return None, None, []
    costs = [prices.cost(s.model, s.usage) for s in state.steps]
    known = [c for c in costs if c is not None]
    missing = [s.model or "(unnamed)" for s, c in zip(state.steps, costs, strict=True) if c is None]
    lc_cost = None
    tokens = outcome.priced.tokens
    if tokens is not None:
        lc_cost = long_context_cost(state.steps, prices, tokens, cfg.long_context_model)
        if lc_cost is None:
            missing.append(_long_context_model(state.steps, cfg.long_context_model) or "(unnamed)")
    unpriced = list(dict.fromkeys(missing))
    if unpriced:
        _warn_unpriced(unpriced, prices)
    return (sum(known) if known else None), lc_cost, unpriced


def build_result(state: FlowState, outcome: Outcome) -> RouteResult:
    """The result of the flow (or the partial result a :class:`~selfroute.LongContextError`
    carries): the state's question, sources, steps and error, with the outcome's answer, route,
    reason and long-context facts, priced when the config has a price table."""
    priced = outcome.priced
    cost, lc_cost, unpriced = _priced(state, outcome)
    grounding = outcome.grounding
    return RouteResult(
        question=state.question,
        answer=outcome.answer,
        route=outcome.route,
        reason=outcome.reason,
        rag_answer=state.rag_answer,
        sources=state.passages,
        steps=state.steps,
        long_context_tokens=priced.tokens,
        long_context_tokens_source=priced.source,
        context=priced.context.to_dict() if priced.context is not None else None,
        cost=cost,
        long_context_cost=lc_cost,
        latency_s=time.perf_counter() - state.started,
        error=state.error,
        abstention=outcome.abstention,
        citations=grounding.citations if grounding is not None else (),
        verified=grounding.grounded if grounding is not None else None,
        unverified_answer=outcome.unverified,
        unpriced_models=tuple(unpriced),
    )
