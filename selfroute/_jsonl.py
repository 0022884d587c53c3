"""JSON Lines input, read the same way by every command that takes it (eval data, verdicts)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from selfroute._errors import InvalidInputError

__all__ = ["jsonl_objects", "read_jsonl"]


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


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """:func:`jsonl_objects` of a UTF-8 file.

    Raises:
        InvalidInputError: The file does not exist or is not UTF-8 text, or a line is bad.
    """
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such file")
    try:
        with path.open(encoding="utf-8") as fh:
            yield from jsonl_objects(fh, str(path))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path}: not UTF-8 text ({exc.reason})") from None
