"""The LongBench / InfiniteBench labelled set (labelled.jsonl): its form and the kinds of its verdicts.

Where it came from and its precision / recall floors: ``tests/fixtures/refusals/MANIFEST.json``
(scored by ``test_verdict_accuracy.py``).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import selfroute as sr
from benchmarks.verdict_eval import Confusion

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "refusals" / "labelled.jsonl"


def _load() -> list[dict[str, object]]:
    with FIXTURE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ROWS = _load()


def _confusion(rows: list[dict[str, object]], *, strict: bool) -> Confusion:
    c = Confusion()
    for row in rows:
        c.add(sr.parse_verdict(str(row["prediction"]), strict=strict).declined, row)
    return c


def test_fixture_is_well_formed() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    assert len(ROWS) >= 400
    for row in ROWS:
        assert set(row) == {"source", "model", "task", "prediction", "declined", "note", "split"}
        assert isinstance(row["declined"], bool)
        assert row["note"]
        assert row["split"] in {"tuning", "holdout"}
    models = Counter(str(row["model"]) for row in ROWS)
    assert len(models) == 10  # 3 LongBench + 7 InfiniteBench models
    declined = sum(bool(row["declined"]) for row in ROWS)
    assert 0.3 < declined / len(ROWS) < 0.7  # both classes well represented
    # Every LongBench output that contains the sentinel is in the set.
    assert sum("unanswerable" in str(r["prediction"]).lower() for r in ROWS) >= 78


def test_strict_never_declines_what_default_answers() -> None:
    for row in ROWS:
        text = str(row["prediction"])
        if sr.parse_verdict(text, strict=True).declined:
            assert sr.parse_verdict(text).declined, text


def test_sentinel_outputs_are_found_in_both_modes() -> None:
    """LongBench Qasper asked for the literal sentinel: strict mode must catch those declines."""
    rows = [
        r
        for r in ROWS
        if r["source"] == "longbench-qasper" and "unanswerable" in str(r["prediction"]).lower()
    ]
    declined = [r for r in rows if r["declined"] and "<think>" not in str(r["prediction"])]
    answered = [r for r in rows if not r["declined"]]
    assert declined and answered  # the word also appears in answers (follow-up questions)
    for row in declined:
        verdict = sr.parse_verdict(str(row["prediction"]), strict=True)
        assert verdict.kind is sr.VerdictKind.SENTINEL, row["prediction"]
    for row in answered:
        assert sr.parse_verdict(str(row["prediction"])).answered, row["prediction"]


def test_declined_outputs_keep_their_kind() -> None:
    """Empty outputs are EMPTY, cut-off reasoning is GARBLED, worded declines are REFUSAL."""
    kinds: Counter[str] = Counter()
    for row in ROWS:
        v = sr.parse_verdict(str(row["prediction"]))
        text = str(row["prediction"])
        if not text.strip():
            assert v.kind is sr.VerdictKind.EMPTY
        elif text.lstrip().startswith("<think>") and "</think>" not in text:
            assert v.kind is sr.VerdictKind.GARBLED
        kinds[v.kind.value] += 1
    assert kinds["refusal"] > 100 and kinds["sentinel"] > 50 and kinds["garbled"] > 20
