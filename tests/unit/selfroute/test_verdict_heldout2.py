"""RAGTruth set 2 (ragtruth_holdout2.jsonl): its form and its disjointness from set 1.

Where it came from, its history and its floors: ``tests/fixtures/refusals/MANIFEST.json``
(scored by ``test_verdict_accuracy.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from tests.support.verdict_scoring import (
    RAGTRUTH_FIELDS as FIELDS,
)
from tests.support.verdict_scoring import (
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
