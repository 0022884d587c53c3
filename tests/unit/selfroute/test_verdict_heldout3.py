"""Verdict parsing on blind held-out set 3: 400 RAGTruth answers scored once, on a frozen detector.

Another engineer drew 100 rows per model (``random.Random(20261215)``, none of the 931 rows of
``ragtruth_labelled.jsonl`` and ``ragtruth_holdout2.jsonl``) and labelled them by reading, without
seeing the project's code, tests or docs. A second engineer labelled the same 400 rows
independently, also blind (``ragtruth_holdout3_second.jsonl``): the two agree on 398 of 400
(Cohen's kappa 0.98). The primary labels are the first engineer's.

The detector was frozen before this file entered the repository and the set was scored once
(docs/verdict.md gives the scores). Its errors were not read. The floors sit just under those
scores so that a rule change which loses accuracy on unseen outputs fails. The test prints only
confusion counts, never misclassified rows: reading them would make this set tuning data (say so
in docs/verdict.md if that ever happens).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.support.verdict_scoring import (
    RAGTRUTH_FIELDS,
    RAGTRUTH_SENTINEL,
    REFUSALS,
    confusion,
    load_rows,
)

FIXTURE = REFUSALS / "ragtruth_holdout3.jsonl"
SECOND = REFUSALS / "ragtruth_holdout3_second.jsonl"
EARLIER = (REFUSALS / "ragtruth_labelled.jsonl", REFUSALS / "ragtruth_holdout2.jsonl")
ROWS = load_rows(FIXTURE)
SECOND_ROWS = load_rows(SECOND)
FIELDS = RAGTRUTH_FIELDS | {"ambiguous"}


def _with_second_labels() -> list[dict[str, Any]]:
    return [
        {**row, "declined": bool(b["declined"])} for row, b in zip(ROWS, SECOND_ROWS, strict=True)
    ]


def _agreed() -> list[dict[str, Any]]:
    return [
        row for row, b in zip(ROWS, SECOND_ROWS, strict=True) if row["declined"] == b["declined"]
    ]


def test_fixture_is_well_formed_and_disjoint_from_the_earlier_sets() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    assert len(ROWS) == 400 == len(SECOND_ROWS)
    for row in ROWS:
        assert set(row) == FIELDS
        assert row["source"] == "ragtruth" and row["split"] == "holdout3"
        assert row["stratum"] == "random3"
        assert isinstance(row["declined"], bool) and isinstance(row["partial"], bool)
        assert row["declined"] or not row["partial"]
        assert row["note"] and row["question"] and row["prediction"]
    assert Counter(str(r["model"]) for r in ROWS) == {
        "llama-2-7b-chat": 100, "llama-2-13b-chat": 100, "llama-2-70b-chat": 100,
        "mistral-7B-instruct": 100,
    }  # fmt: skip
    assert sum(bool(r["declined"]) for r in ROWS) == 64
    assert [str(r["id"]) for r in ROWS] == [str(b["id"]) for b in SECOND_ROWS]
    assert len({r["id"] for r in ROWS}) == 400
    earlier = {str(r["id"]) for path in EARLIER for r in load_rows(path)}
    assert not {str(r["id"]) for r in ROWS} & earlier


def test_the_two_blind_labellers_agree() -> None:
    assert len(_agreed()) == 398


@pytest.mark.parametrize(
    ("settings", "min_precision", "min_recall"),
    [
        ({}, 0.88, 0.88),
        ({"with_question": True}, 0.85, 0.90),
        ({"sentinel": RAGTRUTH_SENTINEL}, 0.88, 0.90),
        ({"sentinel": RAGTRUTH_SENTINEL, "with_question": True}, 0.85, 0.92),
        ({"sentinel": RAGTRUTH_SENTINEL, "strict": True}, 0.93, 0.70),
    ],
    ids=["default", "question", "sentinel", "sentinel+question", "strict+sentinel"],
)
def test_precision_and_recall_on_held_out_set_3(
    settings: dict[str, Any], min_precision: float, min_recall: float
) -> None:
    for name, rows in (("first", ROWS), ("second", _with_second_labels()), ("agreed", _agreed())):
        c = confusion(rows, **settings)
        print(f"\nset 3 ({name} labels) {settings}: tp={c.tp} fp={c.fp} fn={c.fn}")
    c = confusion(ROWS, **settings)
    assert (c.precision or 0.0) >= min_precision
    assert (c.recall or 0.0) >= min_recall
