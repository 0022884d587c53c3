"""Schema of the blind synthetic long-answer fixture (``long_answers_synthetic_blind4.jsonl``).

The rows were hand-written and labelled blind to the verdict rules. This test only checks the
file's shape and its MANIFEST entry; it never runs the parser on the rows.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "refusals"
FILE = "long_answers_synthetic_blind4.jsonl"
NAME = "long-answers-synthetic-blind-4"
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
COUNTS = {
    "abstain-summary": 45,
    "abstain-partial": 15,
    "abstain-plain": 12,
    "answer-with-gap": 36,
    "answer": 12,
}


def _rows() -> list[dict[str, Any]]:
    lines = (FIXTURES / FILE).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return _rows()


def test_hundred_and_twenty_rows_in_order(rows: list[dict[str, Any]]) -> None:
    assert len(rows) == 120
    assert [row["id"] for row in rows] == [f"syn4-{i:03d}" for i in range(1, 121)]


def test_fields_and_types(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert set(row) == FIELDS, row["id"]
        assert isinstance(row["declined"], bool), row["id"]
        for field in STRINGS:
            assert isinstance(row[field], str) and row[field].strip(), (row["id"], field)
        assert row["source"] == "synthetic", row["id"]
        assert "\n" not in row["document"], row["id"]


def test_kind_matches_declined(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert row["kind"] in KINDS, row["id"]
        assert row["declined"] is row["kind"].startswith("abstain-"), row["id"]


def test_kind_counts(rows: list[dict[str, Any]]) -> None:
    assert Counter(row["kind"] for row in rows) == COUNTS


def test_predictions(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert 150 <= len(row["prediction"]) <= 1500, row["id"]
    predictions = [row["prediction"] for row in rows]
    assert len(set(predictions)) == len(predictions)


def test_manifest_entry() -> None:
    manifest = json.loads((FIXTURES / "MANIFEST.json").read_text(encoding="utf-8"))
    entries = [entry for entry in manifest["sets"] if entry["name"] == NAME]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["file"] == FILE
    assert (FIXTURES / entry["file"]).is_file()
    assert entry["floors"] == {}
