"""Checking a question before any retrieval or model call.

A question must be text a provider can be sent and a model can read: a ``str`` (never bytes),
with no lone surrogate (what invalid UTF-8 becomes in ``sys.argv`` or a ``surrogateescape``
read, and what an HTTP client cannot encode), no NUL, and at least one visible character
(letters, digits, punctuation or symbols: a question of zero-width spaces or control characters
is empty however long it is).
"""

from __future__ import annotations

import unicodedata

from selfroute._errors import InvalidInputError

__all__ = ["validate_question"]

_VISIBLE = frozenset("LNPS")  # Unicode major categories: letter, number, punctuation, symbol


def _first_surrogate(text: str) -> int:
    """Index of the first lone surrogate in ``text``, or -1."""
    for i, ch in enumerate(text):
        if "\ud800" <= ch <= "\udfff":
            return i
    return -1


def validate_question(question: object) -> str:
    """Return the question stripped, or raise :class:`~selfroute.InvalidInputError`.

    Raises:
        InvalidInputError: Not a string; bytes; empty or white space only; a lone surrogate
            (invalid UTF-8 or UTF-16); a NUL character; or no visible character at all
            (only zero-width or control characters).

    Example:
        >>> validate_question("  What is the passkey? ")
        'What is the passkey?'
    """
    if isinstance(question, bytes):
        raise InvalidInputError("question must be str, got bytes; decode it first")
    if not isinstance(question, str):
        raise InvalidInputError(f"question must be a string, got {type(question).__name__}")
    q = question.strip()
    if not q:
        raise InvalidInputError("question is empty or whitespace only")
    at = _first_surrogate(q)
    if at >= 0:
        raise InvalidInputError(
            f"question is not valid text: a lone surrogate (U+{ord(q[at]):04X}) at character "
            f"{at}, as left by invalid UTF-8; decode the input with errors='replace'",
            position=at,
        )
    if "\x00" in q:
        raise InvalidInputError(
            f"question contains a NUL character (at character {q.index(chr(0))})",
            position=q.index("\x00"),
        )
    if not any(unicodedata.category(ch)[0] in _VISIBLE for ch in q):
        raise InvalidInputError(
            "question has no visible characters (only zero-width, format or control characters)"
        )
    return q
