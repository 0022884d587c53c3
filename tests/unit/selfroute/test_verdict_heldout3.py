"""Verdict parsing on RAGTruth set 3: 400 answers first scored blind, now a tuning set.

Another engineer drew 100 rows per model (``random.Random(20261215)``, none of the 931 rows of
``ragtruth_labelled.jsonl`` and ``ragtruth_holdout2.jsonl``) and labelled them by reading, without
seeing the project's code, tests or docs. A second engineer labelled the same 400 rows
independently, also blind (``ragtruth_holdout3_second.jsonl``): the two agree on 398 of 400
(Cohen's kappa 0.98). The primary labels are the first engineer's.

It was scored once as a held-out set on the detector frozen at 034bd1c (errors not read): default
0.891 / 0.891, with the question 0.853 / 0.906 (docs/verdict.md keeps that row). The lead then
promoted it to tuning data: its errors were read to diagnose why the set-2 round did not transfer
("The set-3 round" in docs/verdict.md), and a fresh blind set 4 is the held-out one now. The
floors sit just under the scores after that round (default 0.921 / 0.906, with the question
0.922 / 0.922, RAGTruth sentinel 0.921 / 0.906, with both 0.922 / 0.922, strict with the sentinel
0.938 / 0.703), so a rule change that loses accuracy here fails; ``-s`` prints the misclassified
outputs.
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
        ({}, 0.92, 0.90),
        ({"with_question": True}, 0.92, 0.92),
        ({"sentinel": RAGTRUTH_SENTINEL}, 0.92, 0.90),
        ({"sentinel": RAGTRUTH_SENTINEL, "with_question": True}, 0.92, 0.92),
        ({"sentinel": RAGTRUTH_SENTINEL, "strict": True}, 0.93, 0.70),
    ],
    ids=["default", "question", "sentinel", "sentinel+question", "strict+sentinel"],
)
def test_precision_and_recall_on_ragtruth_set_3(
    settings: dict[str, Any], min_precision: float, min_recall: float
) -> None:
    for name, rows in (("second", _with_second_labels()), ("agreed", _agreed())):
        c = confusion(rows, **settings)
        print(f"\nset 3 ({name} labels) {settings}: tp={c.tp} fp={c.fp} fn={c.fn}")
    c = confusion(ROWS, **settings)
    print("\n" + c.summary(f"RAGTruth set 3 (tuning) {settings}"))
    assert (c.precision or 0.0) >= min_precision
    assert (c.recall or 0.0) >= min_recall
