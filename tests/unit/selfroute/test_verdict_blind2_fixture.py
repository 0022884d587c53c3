"""The form of blind set 2 of long long-context answers (``long_answers_blind2.jsonl``).

Where it came from and how it was drawn and labelled: its entry in
``tests/fixtures/refusals/MANIFEST.json``; its score: ``python -m benchmarks.verdict_blind2``.
These checks read the file only: they never run the parser on it.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from benchmarks.verdict_blind2 import FIXTURE, STRATA, norm
from tests.support.verdict_scoring import REFUSALS, load_rows

ROWS = load_rows(FIXTURE)
FIELDS = {"id", "source", "model", "task", "stratum", "prediction", "declined", "kind", "ambiguous"}
SOURCES = {"lb": ("longbench-qasper", "qasper"), "ib": ("infinitebench", "longbook_")}


def test_rows_are_well_formed() -> None:
    assert FIXTURE.stat().st_size < 1_000_000
    assert len(ROWS) == 276
    ids = [str(r["id"]) for r in ROWS]
    assert len(set(ids)) == len(ids)
    for row in ROWS:
        assert set(row) == FIELDS, row["id"]
        prefix, line = str(row["id"]).split("-")
        source, task = SOURCES[prefix]
        assert int(line) > 0 and row["source"] == source and str(row["task"]).startswith(task)
        assert row["stratum"] in STRATA
        assert len(str(row["prediction"]).strip()) > 150
        assert isinstance(row["declined"], bool) and isinstance(row["ambiguous"], bool)
        assert row["kind"]


def test_strata_sizes_and_random_balance() -> None:
    assert Counter(str(r["stratum"]) for r in ROWS) == {"random": 150, "enriched": 7, "rest": 119}
    pool = Counter(str(r["model"]) for r in ROWS)
    sample = Counter(str(r["model"]) for r in ROWS if r["stratum"] == "random")
    for model, n in pool.items():
        assert abs(sample[model] - 150 * n / len(ROWS)) <= 1, model


def test_ambiguous_rows_are_the_cut_off_reasoning_traces() -> None:
    traces = {str(r["id"]) for r in ROWS if re.match(r"\s*<think>", str(r["prediction"]))}
    assert traces == {str(r["id"]) for r in ROWS if r["ambiguous"]}
    assert not any(r["declined"] for r in ROWS if r["ambiguous"])


def test_shares_no_output_with_any_other_fixture() -> None:
    mine = {norm(str(r["prediction"])) for r in ROWS}
    assert len(mine) == len(ROWS)
    others: set[str] = set()
    for path in REFUSALS.rglob("*.jsonl"):
        if path != FIXTURE:
            rows: list[dict[str, Any]] = load_rows(path)
            others |= {norm(str(r["prediction"])) for r in rows if "prediction" in r}
    assert not mine & others
