"""The one place that builds a :class:`~selfroute.RouteResult`: from the state and an outcome."""

from __future__ import annotations

import time

from selfroute._flow._state import FlowState, Outcome
from selfroute._pricing import PriceTable
from selfroute._result import RouteResult, Stage, StepRecord
from selfroute._usage import Usage

__all__ = ["build_result", "long_context_cost"]


def long_context_cost(
    steps: tuple[StepRecord, ...], prices: PriceTable, tokens: int, default_model: str | None
) -> float | None:
    """What answering from the long context costs (or would have cost: always-LC's price).

    The model is the long-context step's (else ``default_model``, else the RAG step's); the
    output tokens are the answer's that the flow has (the long-context step's, else the RAG's).
    """
    lc_steps = [s for s in steps if s.stage is Stage.LONG_CONTEXT and not s.wasted]
    rag_steps = [s for s in steps if s.stage is Stage.RAG]
    model = lc_steps[-1].model if lc_steps else default_model
    model = model or (rag_steps[-1].model if rag_steps else None)
    out_tokens = (
        (lc_steps[-1] if lc_steps else rag_steps[-1]).usage.output_tokens
        if (lc_steps or rag_steps)
        else 0
    )
    return prices.cost(model, Usage.of(tokens, out_tokens))


def build_result(state: FlowState, outcome: Outcome) -> RouteResult:
    """The result of the flow (or the partial result a :class:`~selfroute.LongContextError`
    carries): the state's question, sources, steps and error, with the outcome's answer, route,
    reason and long-context facts, priced when the config has a price table."""
    cfg = state.config
    priced = outcome.priced
    cost = lc_cost = None
    if cfg.prices is not None:
        costs = [cfg.prices.cost(s.model, s.usage) for s in state.steps]
        known = [c for c in costs if c is not None]
        cost = sum(known) if known else None
        if priced.tokens is not None:
            lc_cost = long_context_cost(
                state.steps, cfg.prices, priced.tokens, cfg.long_context_model
            )
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
    )
