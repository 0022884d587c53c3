"""The paper's two prompts, overridable, with a configurable sentinel."""

from __future__ import annotations

import functools
import string
from collections.abc import Sequence
from dataclasses import dataclass

from selfroute._errors import ConfigurationError

__all__ = [
    "DEFAULT_LONG_CONTEXT_PROMPT",
    "DEFAULT_RAG_PROMPT",
    "DEFAULT_SENTINEL",
    "DEFAULT_STRUCTURED_RAG_PROMPT",
    "GROUNDING_PREFIX",
    "Prompts",
]

#: The word the RAG step writes when the retrieved passages do not answer the question.
DEFAULT_SENTINEL = "unanswerable"

#: Self-Route's RAG-and-route prompt (paper, section 4): answer from the retrieved chunks or write
#: the sentinel. Placeholders: ``{context}``, ``{question}``, ``{sentinel}``.
DEFAULT_RAG_PROMPT = (
    "Answer the question based only on the provided passage. The passage is a set of excerpts "
    "retrieved from a longer document. If the question cannot be answered based on the "
    'information in the passage, write "{sentinel}" and nothing else. Keep the answer short.\n\n'
    "Passage:\n{context}\n\n"
    "Question: {question}\n"
    "Answer:"
)

#: The long-context prompt: the whole document, placed *before* the question so that provider
#: prefix caching applies across questions on the same document. It allows declining: a document
#: that does not hold the answer should get the sentinel, not an invented answer.
#: Placeholders: ``{context}``, ``{question}``, ``{sentinel}``.
DEFAULT_LONG_CONTEXT_PROMPT = (
    "Answer the question based only on the provided document. If the document does not contain "
    'the information needed to answer the question, write "{sentinel}" and nothing else. Keep '
    "the answer short.\n\n"
    "Document:\n{context}\n\n"
    "Question: {question}\n"
    "Answer:"
)

#: The RAG prompt used with structured output (``verdict="structured"``): the model fills a
#: ``{answerable, answer}`` object instead of writing the sentinel.
DEFAULT_STRUCTURED_RAG_PROMPT = (
    "Answer the question based only on the provided passage. The passage is a set of excerpts "
    "retrieved from a longer document. Set answerable to true and give a short answer only if "
    "the passage contains the information needed; otherwise set answerable to false and leave "
    "the answer empty.\n\n"
    "Passage:\n{context}\n\n"
    "Question: {question}"
)

#: Put before the prompts in grounded mode (text output): the model quotes its support. (Before,
#: not after, so the template's closing "Answer:" cue stays last and the prefix stays cacheable.)
GROUNDING_PREFIX = (
    "After your answer, copy word for word the sentence or sentences of the given text that "
    'support it, each on its own line starting with "Quote:". Write no quote when you '
    "decline.\n\n"
)

#: The instruction for the ``quotes`` field in grounded mode (structured output).
STRUCTURED_QUOTES_INSTRUCTION = (
    "\n\nIn quotes, copy word for word the sentence or sentences of the passage that support "
    "the answer."
)

_ALLOWED = {"context", "question", "sentinel"}


def _fields(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        raise ConfigurationError(f"prompt template is not a valid format string: {exc}") from exc


def _check(template: str, name: str) -> None:
    if not isinstance(template, str) or not template.strip():
        raise ConfigurationError(f"{name} must be a non-empty string")
    fields = _fields(template)
    missing = {"context", "question"} - fields
    if missing:
        raise ConfigurationError(
            f"{name} must contain the placeholders {{context}} and {{question}}; "
            f"missing: {', '.join(sorted('{' + m + '}' for m in missing))}",
            template=template,
        )
    unknown = fields - _ALLOWED
    if unknown:
        raise ConfigurationError(
            f"{name} has unknown placeholders {sorted(unknown)}; allowed: {sorted(_ALLOWED)} "
            "(write literal braces as {{ and }})",
            template=template,
        )


#: Stands in for the context while a template is rendered (see :func:`_render`).
_CONTEXT_MARK = "\x00selfroute-context\x00"


@functools.lru_cache(maxsize=64)
def _plain_context(template: str) -> bool:
    """Whether ``template`` holds ``{context}`` once, with no conversion or format spec."""
    uses = [
        (spec, conv)
        for _, name, spec, conv in string.Formatter().parse(template)
        if name == "context"
    ]
    return len(uses) == 1 and uses[0] == ("", None)


def _render(template: str, context: str, **fields: str) -> str:
    """``template.format(context=context, **fields)``, the context copied once.

    ``str.format`` copies a long argument far more slowly than ``str.join`` (a 250,000-character
    document: about 1.5 ms against 0.1 ms), so the template is rendered around a mark and the
    context joined in; the same text (a template whose context has a format spec, or a field
    that holds the mark, is rendered by ``str.format``).
    """
    if len(context) < 1024 or not _plain_context(template):
        return template.format(context=context, **fields)
    head, _, tail = template.format(context=_CONTEXT_MARK, **fields).partition(_CONTEXT_MARK)
    if _CONTEXT_MARK in tail or _CONTEXT_MARK in head:  # a field holds the mark
        return template.format(context=context, **fields)
    return "".join((head, context, tail))


@dataclass(frozen=True)
class Prompts:
    """The RAG-and-route and long-context prompt templates and the decline sentinel.

    Args:
        rag: Template for the RAG step; must contain ``{context}`` and ``{question}`` and should
            tell the model to write ``{sentinel}`` when the passage does not answer.
        long_context: Template for the long-context step. Keep ``{context}`` before
            ``{question}`` so provider prefix caching can reuse the document across questions.
        structured_rag: Template for the RAG step when the verdict comes as structured output
            (``{answerable, answer}``); no sentinel needed.
        sentinel: The decline word. Verdict parsing looks for it.
        passage_separator: Text placed between retrieved passages.
    """

    rag: str = DEFAULT_RAG_PROMPT
    long_context: str = DEFAULT_LONG_CONTEXT_PROMPT
    structured_rag: str = DEFAULT_STRUCTURED_RAG_PROMPT
    sentinel: str = DEFAULT_SENTINEL
    passage_separator: str = "\n\n"

    def __post_init__(self) -> None:
        _check(self.rag, "rag prompt")
        _check(self.long_context, "long-context prompt")
        _check(self.structured_rag, "structured rag prompt")
        if not isinstance(self.sentinel, str) or not self.sentinel.strip():
            raise ConfigurationError("sentinel must be a non-empty string")
        if "{sentinel}" not in self.rag and self.sentinel.lower() not in self.rag.lower():
            raise ConfigurationError(
                "the rag prompt never mentions the sentinel; the model would not know how to "
                f"decline. Add {{sentinel}} or the word {self.sentinel!r} to it."
            )

    def format_passages(self, passages: Sequence[str]) -> str:
        """Join retrieved passage texts in rank order."""
        return self.passage_separator.join(p.strip() for p in passages)

    @property
    def cache_friendly(self) -> bool:
        """Whether the long-context template puts the document before the question (so the
        prompt prefix up to the end of the document is the same for every question)."""
        return self.long_context.index("{context}") < self.long_context.index("{question}")

    def rag_prompt(self, question: str, passages: Sequence[str], *, grounded: bool = False) -> str:
        """Render the RAG-and-route prompt for ``question`` over ``passages``.

        Args:
            question: The question.
            passages: Retrieved passage texts in rank order.
            grounded: Append the instruction to quote the supporting sentences.
        """
        text = _render(
            self.rag, self.format_passages(passages), question=question, sentinel=self.sentinel
        )
        return GROUNDING_PREFIX + text if grounded else text

    def structured_rag_prompt(
        self, question: str, passages: Sequence[str], *, grounded: bool = False
    ) -> str:
        """Render the structured-output RAG prompt for ``question`` over ``passages``."""
        text = _render(
            self.structured_rag,
            self.format_passages(passages),
            question=question,
            sentinel=self.sentinel,
        )
        return text + STRUCTURED_QUOTES_INSTRUCTION if grounded else text

    def long_context_prompt(self, question: str, context: str, *, grounded: bool = False) -> str:
        """Render the long-context prompt for ``question`` over the whole ``context``."""
        text = _render(self.long_context, context, question=question, sentinel=self.sentinel)
        return GROUNDING_PREFIX + text if grounded else text
