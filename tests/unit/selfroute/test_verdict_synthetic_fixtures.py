"""Schema of the hand-written synthetic long-answer fixtures (``long_answers_synthetic_*.jsonl``).

The rows were hand-written and labelled blind to the verdict rules. This test checks each file's
shape and its MANIFEST entry; it never runs the parser on the rows (the floors of a set tuned on
since its blind score run in ``test_verdict_accuracy.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "refusals"
FIELDS = {
    "id",
    "source",
    "model_style",
    "document",
    "question",
    "prediction",
    "declined",
    "kind",
    "note",
}
KINDS = {"abstain-summary", "abstain-plain", "abstain-partial", "answer-with-gap", "answer"}
STRINGS = FIELDS - {"declined"}


@dataclass(frozen=True)
class Fixture:
    file: str
    name: str
    prefix: str
    size: int
    #: The kind counts the brief asked for (``None``: not fixed).
    counts: dict[str, int] | None
    #: The MANIFEST role's first word, and the settings its floors cover.
    role: str
    floors: frozenset[str]
    #: The bounds on a prediction's length in characters (the brief's lengths).
    chars: tuple[int, int] = (150, 1500)


SETS = [
    Fixture(
        "long_answers_synthetic_blind3.jsonl",
        "long-answers-synthetic-blind-3",
        "syn3",
        100,
        None,
        "tuning",  # rules were written from it after its blind score
        frozenset({"default", "question"}),
    ),
    Fixture(
        "long_answers_synthetic_blind4.jsonl",
        "long-answers-synthetic-blind-4",
        "syn4",
        120,
        {
            "abstain-summary": 45,
            "abstain-partial": 15,
            "abstain-plain": 12,
            "answer-with-gap": 36,
            "answer": 12,
        },
        "tuning",  # rules were written from it after its blind score
        frozenset({"default", "question"}),
    ),
    Fixture(
        "long_answers_synthetic_blind5.jsonl",
        "long-answers-synthetic-blind-5",
        "syn5",
        120,
        {
            "abstain-summary": 45,
            "abstain-partial": 15,
            "abstain-plain": 12,
            "answer-with-gap": 36,
            "answer": 12,
        },
        "tuning",  # rules were written from it after its blind scores
        frozenset({"default", "question"}),
        (60, 5000),  # 1-3 sentence abstentions up to ~700-word answers
    ),
    Fixture(
        "long_answers_synthetic_blind6.jsonl",
        "long-answers-synthetic-blind-6",
        "syn6",
        120,
        {
            "abstain-summary": 45,
            "abstain-partial": 15,
            "abstain-plain": 12,
            "answer-with-gap": 36,
            "answer": 12,
        },
        "blind",
        frozenset(),
        (60, 5000),
    ),
]


def _rows(fixture: Fixture) -> list[dict[str, Any]]:
    lines = (FIXTURES / fixture.file).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(params=SETS, ids=[s.prefix for s in SETS])
def fixture(request: pytest.FixtureRequest) -> Fixture:
    return request.param  # type: ignore[no-any-return]


def test_rows_in_order(fixture: Fixture) -> None:
    rows = _rows(fixture)
    assert len(rows) == fixture.size
    expected = [f"{fixture.prefix}-{i:03d}" for i in range(1, fixture.size + 1)]
    assert [row["id"] for row in rows] == expected


def test_fields_and_types(fixture: Fixture) -> None:
    for row in _rows(fixture):
        assert set(row) == FIELDS, row["id"]
        assert isinstance(row["declined"], bool), row["id"]
        for field in STRINGS:
            assert isinstance(row[field], str) and row[field].strip(), (row["id"], field)
        assert row["source"] == "synthetic", row["id"]
        assert "\n" not in row["document"], row["id"]


def test_kind_matches_declined(fixture: Fixture) -> None:
    rows = _rows(fixture)
    for row in rows:
        assert row["kind"] in KINDS, row["id"]
        assert row["declined"] is row["kind"].startswith("abstain-"), row["id"]
    if fixture.counts is not None:
        assert Counter(row["kind"] for row in rows) == fixture.counts


def test_predictions(fixture: Fixture) -> None:
    rows = _rows(fixture)
    for row in rows:
        low, high = fixture.chars
        assert low <= len(row["prediction"]) <= high, row["id"]
    predictions = [row["prediction"] for row in rows]
    assert len(set(predictions)) == len(predictions)


def test_manifest_entry(fixture: Fixture) -> None:
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text(encoding="utf-8"))
    entries = [entry for entry in manifest["sets"] if entry["name"] == fixture.name]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["file"] == fixture.file
    assert (FIXTURES / entry["file"]).is_file()
    assert entry["role"].startswith(fixture.role)
    assert set(entry["floors"]) == fixture.floors
