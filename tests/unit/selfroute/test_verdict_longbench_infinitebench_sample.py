"""Verdict parsing on a blind sample of fresh LongBench Qasper and InfiniteBench answers.

400 non-empty predictions (200 per source, ``random.Random(20261223)``) whose (model, prediction)
is in no row of ``labelled.jsonl``, drawn by the lead (positions only, no text read) and labelled
blind by two engineers who saw no project code (``second/`` holds the second labels). Both sources
were read when the rules were written, so this is a fresh *sample* of tuning sources, not a
held-out source. It was scored once on ``5707ede`` (docs/verdict.md): committed answers of ten
long-context models on long documents, almost none of them declines (2 and 2 of 400, the
labellers splitting on which). What it pins is the other side of precision: the parser calls no
committed answer with text a refusal, and everything it sends to long context without a decline
is output with no answer to serve (a reasoning trace cut off before any answer, or punctuation).
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
