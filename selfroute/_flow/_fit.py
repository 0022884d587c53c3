"""The long context fitted into the model's window, as the long-context prompt.

Shared by the stages that need the long-context prompt or its size: the long-context stage, the
speculative call, and the counterfactual price of always-LC.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from selfroute._fitting import ContextDocument, FittedContext, fit_context, size_context
from selfroute._flow._config import RouteConfig

__all__ = ["LongContextPrompt", "count_long_context", "fit_long_context"]


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


def _room(question: str, config: RouteConfig) -> tuple[int, int | None]:
    """The long-context prompt's template overhead in tokens, and the tokens left in the window
    for the context (``None``: no window)."""
    prompt = config.prompts.long_context_prompt(question, "", grounded=config.grounded)
    overhead = config.counter.count(prompt)
    window = config.long_context_window
    return overhead, None if window is None else window - overhead - config.answer_tokens


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
    counter, prompts, window = config.counter, config.prompts, config.long_context_window
    overhead, available = _room(question, config)
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


def count_long_context(
    question: str, docs: Sequence[ContextDocument | str], config: RouteConfig
) -> LongContextPrompt:
    """What :func:`fit_long_context` would send, sized without fitting (to price always-LC).

    A document that fits is counted once, exactly; one that does not is priced at the window's
    capacity (see :func:`~selfroute._fitting.size_context`) and never chunked or ranked: pricing
    must not cost more than the answer. The prompt is not built (``prompt`` is empty): its size
    is the template overhead plus the context's, and building it would copy the whole document.
    """
    overhead, available = _room(question, config)
    sized = size_context(
        docs, available_tokens=available, strategy=config.overflow, counter=config.counter
    )
    return LongContextPrompt(sized, "", overhead + sized.tokens)
