"""Stage 5, counterfactual: what always-LC would have cost on a question the RAG step answered.

Loads the long context only to count it (``LoadLongContext(purpose="counterfactual")``); the
result's ``long_context_tokens`` and ``long_context_cost`` then say what routing saved. Pricing
never costs the answer: any failure leaves the price unknown, and the document is only counted
(once per content, the counter remembers it), never fitted: a document over the window is priced
at the window's capacity.

The RAG step's tokens are the provider's, counted by the model's own tokenizer; the long context
is counted locally (tiktoken ``o200k_base``), and tokenizers differ (a SmolLM2 or Qwen tokenizer
can count a third more tokens than o200k on the same text). Comparing the two would bias the
ratio. So when the provider reported the RAG prompt's tokens, the local count of the long context
is scaled by the provider/local ratio measured on that same RAG prompt, and its source says so
(``provider_scaled``): both sides of the ratio are then in the provider's tokens. A ratio outside
:data:`PLAUSIBLE_RATIO` is not a tokenizer difference (real tokenizers stay well within 2x of each
other on the same text; a count far off includes something else, or is made up by a test
double): the count is then left unscaled and labelled as the local counter's.
"""

from __future__ import annotations

from collections.abc import Sequence

from selfroute._flow._fit import count_long_context
from selfroute._flow._state import COUNTERFACTUAL_TIMEOUT_S, FlowState, Priced, Steps
from selfroute._flow._steps import LoadLongContext
from selfroute._result import Stage, StepRecord

__all__ = [
    "PLAUSIBLE_RATIO",
    "PROVIDER_SCALED",
    "in_provider_tokens",
    "price_always_lc",
    "provider_ratio",
]

#: ``long_context_tokens_source`` of a local count scaled into the provider's tokens.
PROVIDER_SCALED = "provider_scaled"
#: Provider/local ratios taken as a tokenizer difference (inclusive bounds).
PLAUSIBLE_RATIO = (0.5, 2.0)


def provider_ratio(steps: Sequence[StepRecord]) -> float | None:
    """Provider-reported over locally counted input tokens of the RAG prompts of ``steps``
    (``None`` when no RAG step has both)."""
    rag = [
        s
        for s in steps
        if s.stage is Stage.RAG
        and s.usage.source == "provider"
        and s.usage.input_tokens > 0
        and (s.prompt_tokens_estimate or 0) > 0
    ]
    local = sum(s.prompt_tokens_estimate or 0 for s in rag)
    if not rag or local <= 0:
        return None
    return sum(s.usage.input_tokens for s in rag) / local


def in_provider_tokens(tokens: int, state: FlowState) -> tuple[int, str]:
    """``(tokens, source)`` of a local count of the long context, in the provider's tokens when
    this call's RAG step measured the ratio (see the module docstring)."""
    ratio = provider_ratio(state.steps)
    if ratio is None or not PLAUSIBLE_RATIO[0] <= ratio <= PLAUSIBLE_RATIO[1]:
        return tokens, state.counter.source
    return round(tokens * ratio), PROVIDER_SCALED


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
            if lc.fitted.truncated:  # priced at the window's capacity: the model's own tokens
                return Priced(lc.tokens, state.counter.source, lc.fitted)
            return Priced(*in_provider_tokens(lc.tokens, state), lc.fitted)
    except Exception:  # pricing must never cost the answer
        pass
    return Priced()
