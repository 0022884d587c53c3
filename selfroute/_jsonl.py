"""JSON Lines input, read the same way by every command that takes it (eval data, verdicts), and
the one way a command opens a text file it reads (a clear error for a missing or non-UTF-8 file)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from selfroute._errors import InvalidInputError

__all__ = ["jsonl_objects", "open_text", "read_jsonl"]


def jsonl_objects(lines: Iterable[str], source: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line of ``lines``.

    Raises:
        InvalidInputError: A line that is not JSON, or not a JSON object, naming
            ``source:line``.
    """
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{source}:{lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InvalidInputError(f"{source}:{lineno}: expected a JSON object per line")
        yield lineno, row


@contextmanager
def open_text(
    path: Path, *, encoding: str = "utf-8", newline: str | None = None
) -> Iterator[TextIO]:
    """``path`` opened for reading text, for a ``with`` block.

    Raises:
        InvalidInputError: The file does not exist, or what the block reads is not UTF-8 text.
    """
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    try:
        with path.open(encoding=encoding, newline=newline) as fh:
            yield fh
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text ({exc.reason})") from None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`jsonl_objects` of a UTF-8 file.

    Raises:
        InvalidInputError: The file does not exist or is not UTF-8 text, or a line is bad.
    """
    with open_text(path) as fh:
        yield from jsonl_objects(fh, str(path))
