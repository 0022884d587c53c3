"""Stage 5, counterfactual: what always-LC would have cost on a question the RAG step answered.

Loads the long context only to count it (``LoadLongContext(purpose="counterfactual")``); the
result's ``long_context_tokens`` and ``long_context_cost`` then say what routing saved. Pricing
never costs the answer: any failure leaves the price unknown.
"""

from __future__ import annotations

from selfroute._flow._fit import fit_long_context
from selfroute._flow._state import FlowState, Priced, Steps
from selfroute._flow._steps import LoadLongContext

__all__ = ["price_always_lc"]


def price_always_lc(state: FlowState) -> Steps[Priced]:
    """Count the long context always-LC would have sent (when ``counterfactual`` is on).

    Returns:
        The long context's size and fitting; empty when pricing is off, there is no long
        context, or loading or fitting it failed.
    """
    if not state.config.counterfactual:
        return Priced()
    try:
        docs = yield LoadLongContext(state.question, state.parents_of, purpose="counterfactual")
        if docs:
            retrieved = [p.text for p in state.passages]
            lc = fit_long_context(state.question, docs, state.config, retrieved)
            return Priced(lc.tokens, state.counter.source, lc.fitted)
    except Exception:  # pricing must never cost the answer
        pass
    return Priced()
