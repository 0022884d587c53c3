"""selfroute's metrics reproduce the official LongBench scorer on real predictions.

The fixture holds 102 real LongBench v1 Qasper predictions (three models) with the score the
official THUDM/LongBench code gives each one (computed by running that code unchanged; commits in
``longbench_qasper_official.json`` and tests/fixtures/README.md). When the full 600-prediction file
of the shared data folder is present, every one of them is checked too.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

from selfroute.eval.metrics import longbench_aggregate, longbench_score

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "eval"
SAMPLE = [
    json.loads(line)
    for line in (FIXTURES / "longbench_qasper_sample.jsonl").read_text("utf-8").splitlines()
]
OFFICIAL = json.loads((FIXTURES / "longbench_qasper_official.json").read_text("utf-8"))


def _shared_predictions() -> Path | None:
    root = Path(__file__).resolve().parents[4]
    candidates = [
        Path(os.environ["SELFROUTE_DATA"]) if "SELFROUTE_DATA" in os.environ else None,
        root.parent / "shared" / "data",
    ]
    for c in candidates:
        if c is not None and (c / "refusals" / "longbench_qasper_predictions.jsonl").is_file():
            return c / "refusals" / "longbench_qasper_predictions.jsonl"
    return None


def test_fixture_is_a_real_mixed_sample() -> None:
    assert len(SAMPLE) >= 100
    scores = [r["official_score"] for r in SAMPLE]
    assert any(s == 0 for s in scores) and any(s == 1 for s in scores)
    assert any(0 < s < 1 for s in scores)
    assert {r["model"] for r in SAMPLE} == set(OFFICIAL["sample_aggregate"])


@pytest.mark.parametrize("row", SAMPLE, ids=lambda r: f"{r['model']}-{r['index']}")
def test_per_prediction_matches_official(row: dict) -> None:
    assert longbench_score("qasper", row["prediction"], row["answers"]) == row["official_score"]


def test_aggregate_matches_official() -> None:
    by_model: dict[str, list[float]] = defaultdict(list)
    for row in SAMPLE:
        by_model[row["model"]].append(longbench_score("qasper", row["prediction"], row["answers"]))
    ours = {model: longbench_aggregate(s) for model, s in by_model.items()}
    assert ours == OFFICIAL["sample_aggregate"]


def test_all_600_shared_predictions_match_official() -> None:
    path = _shared_predictions()
    if path is None:
        pytest.skip("shared data folder not present (the vendored sample is checked above)")
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    assert len(rows) == 600
    by_model: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        ours = longbench_score("qasper", r["prediction"], r["ground_truth"])
        assert ours == OFFICIAL["full_scores"][r["model"]][str(r["index"])], (
            r["model"],
            r["index"],
        )
        by_model[r["model"]].append(ours)
    assert {m: longbench_aggregate(s) for m, s in by_model.items()} == OFFICIAL["full_aggregate"]
