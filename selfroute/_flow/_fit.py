"""The long context fitted into the model's window, as the long-context prompt.

Shared by the stages that need the long-context prompt or its size: the long-context stage, the
speculative call, and the counterfactual price of always-LC.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from selfroute._fitting import ContextDocument, FittedContext, fit_context
from selfroute._flow._config import RouteConfig

__all__ = ["LongContextPrompt", "fit_long_context"]


class LongContextPrompt(NamedTuple):
    """The long context fitted into the window, as the long-context prompt (a tuple: unpacks as
    ``fitted, prompt, tokens``).

    Attributes:
        fitted: What was kept of the documents.
        prompt: The long-context prompt.
        tokens: The prompt's token count (template overhead plus the fitted context).
    """

    fitted: FittedContext
    prompt: str
    tokens: int


def fit_long_context(
    question: str,
    docs: Sequence[ContextDocument | str],
    config: RouteConfig,
    retrieved: Sequence[str] = (),
) -> LongContextPrompt:
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
    return LongContextPrompt(fitted, prompt, overhead + fitted.tokens)
