"""A blind sample of fresh LongBench Qasper and InfiniteBench answers: form and precision.

Almost none of its 400 outputs declines: what it pins is that the parser calls no committed
answer a refusal, and that what goes to long context without a decline has no answer to serve.
Where it came from: ``tests/fixtures/refusals/MANIFEST.json``.
"""

from __future__ import annotations

import re
from collections import Counter

import selfroute as sr
from tests.support.verdict_scoring import REFUSALS, load_rows

FIXTURE = REFUSALS / "longbench_infinitebench_holdout.jsonl"
FIELDS = {
    "source", "model", "task", "line", "prediction", "declined", "partial", "ambiguous", "note",
    "split",
}  # fmt: skip


def _rows() -> list[dict[str, object]]:
    return load_rows(FIXTURE)


def test_the_sample_is_well_formed_and_fresh() -> None:
    rows = _rows()
    second = load_rows(REFUSALS / "second" / FIXTURE.name)
    assert len(rows) == 400 == len(second)
    assert Counter(str(r["source"]) for r in rows) == {
        "longbench-qasper": 200,
        "infinitebench": 200,
    }
    assert all(set(r) == FIELDS and str(r["prediction"]).strip() for r in rows)
    assert [(r["source"], r["line"]) for r in rows] == [(b["source"], b["line"]) for b in second]
    assert len({(r["source"], r["line"]) for r in rows}) == 400
    tuned = {(r["model"], r["prediction"]) for r in load_rows(REFUSALS / "labelled.jsonl")}
    assert not {(r["model"], r["prediction"]) for r in rows} & tuned
    assert sum(bool(r["declined"]) for r in rows) == 2 == sum(bool(b["declined"]) for b in second)
    assert sum(r["declined"] == b["declined"] for r, b in zip(rows, second, strict=True)) == 398


def test_no_committed_answer_is_read_as_a_refusal() -> None:
    answered = [r for r in _rows() if not r["declined"]]
    kinds = Counter(sr.parse_verdict(str(r["prediction"])).kind for r in answered)
    assert kinds[sr.VerdictKind.REFUSAL] == 0
    assert kinds[sr.VerdictKind.SENTINEL] == 0
    assert kinds[sr.VerdictKind.ANSWERED] >= 330


def test_what_goes_to_long_context_without_a_decline_has_no_answer_to_serve() -> None:
    garbled = [
        str(r["prediction"])
        for r in _rows()
        if sr.parse_verdict(str(r["prediction"])).kind is sr.VerdictKind.GARBLED
    ]
    assert len(garbled) == 66
    for text in garbled:  # a reasoning block never closed, or no letter or digit at all
        assert ("<think>" in text and "</think>" not in text) or not re.search(r"[^\W_]", text)
