"""RAGTruth set 1 (ragtruth_labelled.jsonl): its form and its sentinel declines.

Where it came from, its history and its floors: ``tests/fixtures/refusals/MANIFEST.json``
(scored by ``test_verdict_accuracy.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import selfroute as sr
from tests.support.verdict_scoring import (
    RAGTRUTH_FIELDS as FIELDS,
)
from tests.support.verdict_scoring import (
    RAGTRUTH_SENTINEL,
    REFUSALS,
    confusion,
    load_rows,
)

FIXTURE = REFUSALS / "ragtruth_labelled.jsonl"
ROWS = load_rows(FIXTURE)


def _confusion(**settings: Any) -> Any:
    return confusion(ROWS, **settings)


def test_fixture_is_well_formed() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    assert len(ROWS) == 531
    for row in ROWS:
        assert set(row) == FIELDS
        assert row["source"] == "ragtruth" and row["split"] == "holdout"
        assert isinstance(row["declined"], bool) and isinstance(row["partial"], bool)
        assert row["declined"] or not row["partial"]  # partial answers are declines
        assert row["note"] and row["question"]
    models = Counter(str(row["model"]) for row in ROWS)
    assert set(models) == {
        "llama-2-7b-chat", "llama-2-13b-chat", "llama-2-70b-chat", "mistral-7B-instruct",
    }  # fmt: skip
    assert sum(bool(r["declined"]) for r in ROWS) == 123


def test_strict_with_the_default_sentinel_catches_nothing_here() -> None:
    """RAGTruth's prompt asks for its own sentinel: strict mode with "unanswerable" declines only
    empty output, and there is none -- a configuration error the docs warn about."""
    assert _confusion(strict=True).tp == 0


def test_bare_sentinel_declines_are_caught_in_every_mode() -> None:
    rows = [r for r in ROWS if str(r["prediction"]).strip().startswith(RAGTRUTH_SENTINEL)]
    assert rows
    for row in rows:
        text = str(row["prediction"])
        assert sr.parse_verdict(text).declined, text
        strict = sr.parse_verdict(text, sentinel=RAGTRUTH_SENTINEL, strict=True)
        assert strict.kind is sr.VerdictKind.SENTINEL
