"""Stage 5, counterfactual: what always-LC would have cost on a question the RAG step answered.

Loads the long context only to count it (``LoadLongContext(purpose="counterfactual")``); the
result's ``long_context_tokens`` and ``long_context_cost`` then say what routing saved. Pricing
never costs the answer: any failure leaves the price unknown, and the document is only counted
(once per content, the counter remembers it), never fitted: a document over the window is priced
at the window's capacity.
"""

from __future__ import annotations

from selfroute._flow._fit import count_long_context
from selfroute._flow._state import COUNTERFACTUAL_TIMEOUT_S, FlowState, Priced, Steps
from selfroute._flow._steps import LoadLongContext

__all__ = ["price_always_lc"]


def price_always_lc(state: FlowState) -> Steps[Priced]:
    """Count the long context always-LC would have sent (when ``counterfactual`` is on).

    Returns:
        The long context's size and fitting; empty when pricing is off, there is no long
        context, or loading or fitting it failed.
    """
    cfg = state.config
    if not cfg.counterfactual:
        return Priced()
    limited = cfg.retrieval_timeout_s is not None or cfg.deadline_s is not None
    timeout = state.bound(cfg.retrieval_timeout_s, COUNTERFACTUAL_TIMEOUT_S if limited else None)
    try:
        docs = yield LoadLongContext(
            state.question, state.parents_of, purpose="counterfactual", timeout_s=timeout
        )
        if docs:
            lc = count_long_context(state.question, docs, state.config)
            return Priced(lc.tokens, state.counter.source, lc.fitted)
    except Exception:  # pricing must never cost the answer
        pass
    return Priced()
