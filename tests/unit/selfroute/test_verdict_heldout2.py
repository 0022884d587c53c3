"""Verdict parsing on RAGTruth set 2: 400 answers first scored blind, now a tuning set.

Another engineer drew 100 rows per model (``random.Random(20261201)``, none of the 531 rows of
``ragtruth_labelled.jsonl``) and labelled them by reading, without seeing the project's code, tests
or docs. It was scored once as a held-out set on the detector frozen at main 399d404 (errors not
read): default 0.897 / 0.897, with the question 0.882 / 0.882, RAGTruth sentinel 0.886 / 0.912,
strict with that sentinel 0.875 / 0.721 (docs/verdict.md keeps that row).

The lead then promoted it to tuning data: its errors were read and the grammar was extended from
them (issue #15, "decline detection that generalises"); a fresh blind set 3 is the held-out one
now. The floors sit just under the scores after that round (default 0.942 / 0.956, with the
question 0.943 / 0.971, RAGTruth sentinel 0.942 / 0.956, strict with it 0.925 / 0.721), so a rule
change that loses accuracy here fails; ``-s`` prints the misclassified outputs. The set-3 round
(docs/verdict.md) changed no verdict here, in any setting; the set-4 round raised it to 0.970 /
0.956 (with the question 0.985 / 0.971, strict with the sentinel 0.961 / 0.721), and the floors
with it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.support.verdict_scoring import (
    RAGTRUTH_FIELDS as FIELDS,
)
from tests.support.verdict_scoring import (
    RAGTRUTH_SENTINEL,
    REFUSALS,
    confusion,
    load_rows,
)

FIXTURE = REFUSALS / "ragtruth_holdout2.jsonl"
OLD_FIXTURE = REFUSALS / "ragtruth_labelled.jsonl"
ROWS = load_rows(FIXTURE)


def _confusion(**settings: Any) -> Any:
    return confusion(ROWS, **settings)


def test_fixture_is_well_formed_and_disjoint_from_the_first_set() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    assert len(ROWS) == 400
    for row in ROWS:
        assert set(row) == FIELDS
        assert row["source"] == "ragtruth" and row["split"] == "holdout2"
        assert row["stratum"] == "random2"
        assert isinstance(row["declined"], bool) and isinstance(row["partial"], bool)
        assert row["declined"] or not row["partial"]
        assert row["note"] and row["question"] and row["prediction"]
    assert Counter(str(r["model"]) for r in ROWS) == {
        "llama-2-7b-chat": 100, "llama-2-13b-chat": 100, "llama-2-70b-chat": 100,
        "mistral-7B-instruct": 100,
    }  # fmt: skip
    assert sum(bool(r["declined"]) for r in ROWS) == 68
    assert len({r["id"] for r in ROWS}) == 400
    assert not {r["id"] for r in ROWS} & {r["id"] for r in load_rows(OLD_FIXTURE)}


@pytest.mark.parametrize(
    ("settings", "min_precision", "min_recall"),
    [
        ({}, 0.96, 0.95),
        ({"with_question": True}, 0.98, 0.97),
        ({"sentinel": RAGTRUTH_SENTINEL}, 0.96, 0.95),
        ({"sentinel": RAGTRUTH_SENTINEL, "with_question": True}, 0.98, 0.97),
        ({"sentinel": RAGTRUTH_SENTINEL, "strict": True}, 0.96, 0.72),
    ],
    ids=["default", "question", "sentinel", "sentinel+question", "strict+sentinel"],
)
def test_precision_and_recall_on_ragtruth_set_2(
    settings: dict[str, Any], min_precision: float, min_recall: float
) -> None:
    c = _confusion(**settings)
    print("\n" + c.summary(f"RAGTruth set 2 (tuning) {settings}"))
    assert (c.precision or 0.0) >= min_precision
    assert (c.recall or 0.0) >= min_recall
