"""The flow's prompts as LlamaIndex ``PromptTemplate`` objects, and back."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from llama_index.core.prompts import BasePromptTemplate, PromptTemplate

from selfroute import ConfigurationError, Prompts

__all__ = ["PROMPT_KEYS", "prompts_to_templates", "update_prompts"]

#: Keys of ``engine.get_prompts()`` / ``engine.update_prompts()`` (the ``selfroute.Prompts``
#: fields they stand for). ``structured_rag_prompt`` is the RAG prompt of structured verdicts.
PROMPT_KEYS = {
    "rag_prompt": "rag",
    "long_context_prompt": "long_context",
    "structured_rag_prompt": "structured_rag",
}

#: LlamaIndex's conventional variable names, accepted as aliases.
_ALIASES = {"context_str": "context", "query_str": "question"}


def _rename(template: str, old: str, new: str) -> str:
    return re.sub(r"(?<!\{)\{" + re.escape(old) + r"\}(?!\})", "{" + new + "}", template)


def _fill(template: str, name: str, value: Any) -> str:
    text = str(value).replace("{", "{{").replace("}", "}}")
    return re.sub(r"(?<!\{)\{" + re.escape(name) + r"\}(?!\})", lambda _m: text, template)


def prompts_to_templates(prompts: Prompts) -> dict[str, BasePromptTemplate]:
    """The RAG, long-context and structured-RAG templates, with the sentinel filled in as a
    partial."""
    return {
        key: PromptTemplate(getattr(prompts, attr)).partial_format(sentinel=prompts.sentinel)
        for key, attr in PROMPT_KEYS.items()
    }


def _template_text(name: str, prompt: Any) -> tuple[str, str | None]:
    """The template string of ``prompt`` in the flow's variable names, and a sentinel if set."""
    if isinstance(prompt, str):
        return prompt, None
    template = getattr(prompt, "template", None)
    if not isinstance(template, str):
        raise ConfigurationError(
            f"{name} must be a str or a PromptTemplate (the flow sends one user message), "
            f"got {type(prompt).__name__}"
        )
    if getattr(prompt, "function_mappings", None):
        raise ConfigurationError(f"{name}: function_mappings are not supported")
    for expected, var in (getattr(prompt, "template_var_mappings", None) or {}).items():
        template = _rename(template, str(var), str(expected))
    sentinel: str | None = None
    for var, value in dict(getattr(prompt, "kwargs", None) or {}).items():
        if var == "sentinel":
            sentinel = str(value)
        elif var not in ("context", "question", *_ALIASES):
            template = _fill(template, var, value)
    return template, sentinel


def update_prompts(prompts: Prompts, updates: dict[str, Any]) -> Prompts:
    """A copy of ``prompts`` with templates from ``engine.update_prompts({...})`` applied.

    Accepts ``PromptTemplate`` objects or strings under ``rag_prompt`` / ``long_context_prompt`` /
    ``structured_rag_prompt``.
    Variables may use the flow's names (``{context}``, ``{question}``, ``{sentinel}``) or
    LlamaIndex's (``{context_str}``, ``{query_str}``); other partially formatted variables are
    filled in. Unknown keys are ignored (``PromptMixin`` routes ``module:key`` to sub-modules).

    Raises:
        ConfigurationError: A template is not a string/``PromptTemplate`` or lacks a placeholder.
    """
    changes: dict[str, str] = {}
    for key, attr in PROMPT_KEYS.items():
        if key not in updates:
            continue
        template, sentinel = _template_text(key, updates[key])
        for alias, canonical in _ALIASES.items():
            template = _rename(template, alias, canonical)
        changes[attr] = template
        if sentinel is not None:
            changes["sentinel"] = sentinel
    return replace(prompts, **changes) if changes else prompts
