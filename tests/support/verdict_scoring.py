"""Scoring ``parse_verdict`` on a labelled JSONL fixture (shared by the held-out verdict tests)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import selfroute as sr
from benchmarks.verdict_eval import Confusion

REFUSALS = Path(__file__).resolve().parents[1] / "fixtures" / "refusals"
RAGTRUTH_SENTINEL = "Unable to answer based on given passages"
#: The fields of a hand-labelled RAGTruth row.
RAGTRUTH_FIELDS = {
    "source", "model", "task", "id", "stratum", "question", "prediction", "declined", "partial",
    "note", "split",
}  # fmt: skip


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSONL file."""
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def confusion(
    rows: Sequence[dict[str, Any]],
    *,
    sentinel: str = sr.DEFAULT_SENTINEL,
    strict: bool = False,
    with_question: bool = False,
) -> Confusion:
    """``parse_verdict``'s confusion counts over labelled rows (``declined`` is the label)."""
    c = Confusion()
    for row in rows:
        q = str(row["question"]) if with_question else None
        verdict = sr.parse_verdict(
            str(row["prediction"]), sentinel=sentinel, strict=strict, question=q
        )
        c.add(verdict.declined, row)
    return c
