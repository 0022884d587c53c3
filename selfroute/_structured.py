"""Structured verdicts: the RAG step as an ``{answerable, answer}`` object instead of a sentinel.

With models that support structured output (JSON schema) or tool calling, the RAG step can return
``{"answerable": false}`` instead of writing a sentinel word the model may paraphrase. This module
holds the schema and classifies such an object into the same :class:`~selfroute.Verdict` the
sentinel parser returns, so the flow decides the route the same way in both modes. It classifies
only; deciding is the flow's job.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import Enum
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict import DeclineDetector, Verdict, VerdictKind, parse_verdict

__all__ = [
    "VerdictMode",
    "load_structured",
    "parse_structured_verdict",
    "structured_unsupported",
    "verdict_schema",
]


class VerdictMode(str, Enum):
    """How the RAG step tells the flow that the chunks do not answer."""

    SENTINEL = "sentinel"
    """The paper's way: the model writes the sentinel (or declines in its own words)."""
    STRUCTURED = "structured"
    """The model fills ``{answerable, answer}`` through structured output or tool calling; a
    model that cannot is a configuration error."""
    AUTO = "auto"
    """Structured output when the model supports it, the sentinel otherwise."""


def verdict_schema(*, grounded: bool = False) -> dict[str, Any]:
    """The JSON schema of the RAG step's structured verdict.

    Args:
        grounded: Add a ``quotes`` array (the sentences that support the answer).

    Returns:
        A JSON schema (``title`` ``rag_verdict``) usable with OpenAI ``json_schema`` response
        formats, Gemini response schemas and tool definitions.
    """
    properties: dict[str, Any] = {
        "answerable": {
            "type": "boolean",
            "description": "True only if the passage contains the information needed to answer.",
        },
        "answer": {
            "type": "string",
            "description": "The short answer; empty when answerable is false.",
        },
    }
    required = ["answerable", "answer"]
    if grounded:
        properties["quotes"] = {
            "type": "array",
            "items": {"type": "string"},
            "description": "Sentences copied word for word from the passage that support the "
            "answer; empty when answerable is false.",
        }
        required.append("quotes")
    return {
        "title": "rag_verdict",
        "description": "Whether the passage answers the question, and the answer.",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _as_bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        low = value.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
    return None


def parse_structured_verdict(
    data: object,
    *,
    sentinel: str = DEFAULT_SENTINEL,
    strict: bool = False,
    question: str | None = None,
    detector: DeclineDetector | None = None,
) -> Verdict:
    """Classify a structured RAG-step verdict.

    Args:
        data: The parsed object (``{"answerable": bool, "answer": str, ...}``).
        sentinel: The decline word (an ``answer`` that is the sentinel is a decline too).
        strict: As for :func:`~selfroute.parse_verdict`, applied to the ``answer`` text.
        question: As for :func:`~selfroute.parse_verdict`, applied to the ``answer`` text.
        detector: As for :func:`~selfroute.parse_verdict`, applied to the ``answer`` text
            (``answerable: false`` declines whatever it says).

    Returns:
        A :class:`~selfroute.Verdict`: ``sentinel`` kind for ``answerable: false``, the text
        parser's verdict on ``answer`` when ``answerable`` is true (a model that claims the passage
        answers but writes "The passage does not say" has declined), ``empty`` for an answerable
        verdict without an answer, ``garbled`` for anything that is not such an object.

    Examples:
        >>> parse_structured_verdict({"answerable": False, "answer": ""}).declined
        True
        >>> parse_structured_verdict({"answerable": True, "answer": "Paris"}).answer
        'Paris'
    """
    if not isinstance(data, Mapping):
        return Verdict(kind=VerdictKind.GARBLED, answer="", matched=None)
    answerable = _as_bool(data.get("answerable"))
    raw = data.get("answer")
    answer = raw.strip() if isinstance(raw, str) else ""
    if answerable is None:
        return Verdict(kind=VerdictKind.GARBLED, answer=answer)
    if not answerable:
        return Verdict(kind=VerdictKind.SENTINEL, answer=answer, matched="answerable: false")
    if not answer:
        return Verdict(kind=VerdictKind.EMPTY, answer="")
    return parse_verdict(
        answer, sentinel=sentinel, strict=strict, question=question, detector=detector
    )


def _unfence(body: str) -> str | None:
    """The inside of a code fence around all of ``body`` (already stripped): what
    ``^```(?:json)?\\s*(.*?)\\s*```$`` captures, found by slicing (the regex backtracked
    quadratically, worse, on long runs of white space)."""
    if len(body) < 6 or not body.startswith("```") or not body.endswith("```"):
        return None
    inner = body[3:-3]
    if inner[:4].lower() == "json":
        inner = inner[4:]
    return inner.strip()


def load_structured(text: str | None) -> dict[str, Any] | None:
    """Parse a model's JSON verdict text (optionally in a code fence) into a dict, or ``None``.

    Handlers use it when a provider returns the structured output as text.

    Examples:
        >>> load_structured('```json\\n{"answerable": true, "answer": "4"}\\n```')
        {'answerable': True, 'answer': '4'}
        >>> load_structured("Paris") is None
        True
    """
    if not text:
        return None
    body = text.strip()
    fenced = _unfence(body)
    if fenced is not None:
        body = fenced
    if not body.startswith("{"):
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            return None
        body = body[start : end + 1]
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def structured_unsupported(required: bool, why: str) -> None:
    """What a handler calls when its model cannot give structured output: nothing (the handler
    then sends the plain sentinel prompt) unless structured output was ``required``.

    Raises:
        ConfigurationError: ``required`` is true (``verdict="structured"``).
    """
    if required:
        raise ConfigurationError(
            f"verdict='structured' needs a model with structured output or tool calling: {why}. "
            "Use verdict='auto' to fall back to the sentinel, or verdict='sentinel'."
        )
