"""Scoring ``parse_verdict`` on a labelled JSONL fixture (shared by the held-out verdict tests)."""

from __future__ import annotations

import json
from collections import Counter
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
#: The four models of RAGTruth's QA responses.
RAGTRUTH_MODELS = ("llama-2-7b-chat", "llama-2-13b-chat", "llama-2-70b-chat", "mistral-7B-instruct")


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


class DoubleLabelled:
    """A RAGTruth set labelled blind by two people: the first labeller's rows and the second's labels.

    Args:
        name: The fixture's stem (``ragtruth_holdout3``); the second labels live in
            ``second/<name>.jsonl``.
        earlier: Stems of the earlier sets it must share no row with.
    """

    def __init__(self, name: str, earlier: Sequence[str]) -> None:
        self.path = REFUSALS / f"{name}.jsonl"
        self.rows = load_rows(self.path)
        self.second = load_rows(REFUSALS / "second" / f"{name}.jsonl")
        self.earlier = [REFUSALS / f"{stem}.jsonl" for stem in earlier]

    def with_second_labels(self) -> list[dict[str, Any]]:
        """The rows, labelled as the second labeller labelled them."""
        pairs = zip(self.rows, self.second, strict=True)
        return [{**row, "declined": bool(b["declined"])} for row, b in pairs]

    def agreed(self) -> list[dict[str, Any]]:
        """The rows both labellers labelled alike."""
        pairs = zip(self.rows, self.second, strict=True)
        return [row for row, b in pairs if row["declined"] == b["declined"]]

    def clear(self) -> list[dict[str, Any]]:
        """The rows the first labeller did not flag ``ambiguous`` (did not hesitate over)."""
        return [row for row in self.rows if not row["ambiguous"]]

    def flagged(self) -> list[dict[str, Any]]:
        """The rows the first labeller flagged ``ambiguous``: the borderline calls."""
        return [row for row in self.rows if row["ambiguous"]]

    def check_well_formed(
        self,
        *,
        split: str,
        stratum: str,
        declined: int,
        per_model: dict[str, int] | None = None,
    ) -> None:
        """Assert the fields, balance (``per_model``: rows per model, default 100 each), label
        count and disjointness from the earlier sets."""
        per_model = per_model or dict.fromkeys(RAGTRUTH_MODELS, 100)
        assert self.path.stat().st_size < 1_000_000
        assert len(self.rows) == sum(per_model.values()) == len(self.second)
        for row in self.rows:
            assert set(row) == RAGTRUTH_FIELDS | {"ambiguous"}
            assert row["source"] == "ragtruth" and row["split"] == split
            assert row["stratum"] == stratum
            assert isinstance(row["declined"], bool) and isinstance(row["partial"], bool)
            assert row["declined"] or not row["partial"]
            assert row["note"] and row["question"] and row["prediction"]
        models = Counter(str(r["model"]) for r in self.rows)
        assert models == per_model
        assert sum(bool(r["declined"]) for r in self.rows) == declined
        assert [str(r["id"]) for r in self.rows] == [str(b["id"]) for b in self.second]
        ids = {str(r["id"]) for r in self.rows}
        assert len(ids) == len(self.rows)
        assert not ids & {str(r["id"]) for path in self.earlier for r in load_rows(path)}

    def print_counts(self, label: str, **settings: Any) -> Confusion:
        """Print the confusion counts under each labelling; return the first labeller's."""
        views = (("first", self.rows), ("second", self.with_second_labels()))
        for name, rows in (*views, ("agreed", self.agreed())):
            c = confusion(rows, **settings)
            print(f"\n{label} ({name} labels) {settings}: tp={c.tp} fp={c.fp} fn={c.fn}")
        return confusion(self.rows, **settings)
