"""Lexical helpers shared by BM25 retrieval and context fitting."""

from __future__ import annotations

import re

__all__ = ["STOP_WORDS", "terms"]

_TOKEN = re.compile(r"[0-9a-z]+")

#: Common English function words left out of lexical matching.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "for",
        "and",
        "or",
        "is",
        "are",
        "was",
        "were",
        "be",
        "by",
        "with",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "did",
        "do",
        "does",
        "that",
        "this",
        "it",
        "as",
        "at",
        "from",
        "its",
        "their",
        "his",
        "her",
        "they",
        "he",
        "she",
        "we",
        "you",
        "i",
        "not",
        "no",
    ]
)


def terms(text: str) -> list[str]:
    """Lower-cased alphanumeric terms of ``text`` without :data:`STOP_WORDS`."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]
