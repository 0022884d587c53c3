"""bench 8's retrieval measurement: paired (ABBA) timing, its statistics and its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._common import FIXTURES, BenchResult
from benchmarks.bench_scale import (
    PhaseClock,
    _phase_note,
    _retrieval_rows,
    abba,
    index_ours,
    paired_stats,
    retrieval,
    small_files,
)
from selfroute.stores import DocumentStore

PHASES = ("discover_seconds", "scan_seconds", "files_seconds", "bm25_seconds")


def test_abba_alternates_the_order_per_question_and_drops_the_warm_up() -> None:
    calls: list[tuple[str, str]] = []
    reads = [0]

    def raw(q: str) -> None:
        calls.append(("raw", q))
        reads[0] += 1  # a read during the raw query is not the retriever's

    def ours(q: str) -> None:
        calls.append(("ours", q))
        if q == "q3":
            reads[0] += 1

    timed = abba(raw, ours, [f"q{i}" for i in range(6)], warmup=2, reads=lambda: reads[0])
    assert [side for side, _ in calls] == ["raw", "ours", "ours", "raw"] * 3
    assert [q for _, q in calls] == [f"q{i}" for i in range(6) for _ in (0, 1)]
    assert len(timed["raw"]) == len(timed["ours"]) == 4
    assert timed["lease_reads"] == 1


def test_paired_stats_ratio_and_interval() -> None:
    raw = [0.001 * (1 + i % 17) for i in range(400)]
    same = paired_stats(raw, list(raw))
    assert same["p50"]["ratio"] == pytest.approx(1.0)
    assert same["p95"]["ci"] == pytest.approx([1.0, 1.0])
    slower = paired_stats(raw, [t * 1.2 for t in raw])
    assert slower["p95"]["ratio"] == pytest.approx(1.2)
    assert slower["p50"]["ci"] == pytest.approx([1.2, 1.2])
    noisy = paired_stats(raw, [t * (1.0 + 0.5 * (i % 2)) for i, t in enumerate(raw)])
    lo, hi = noisy["p95"]["ci"]
    assert lo < noisy["p95"]["ratio"] < hi
    assert noisy["n"] == 400


def test_retrieval_measures_every_mode_against_the_raw_query(tmp_path: Path) -> None:
    folder = small_files(tmp_path / "notes", 40, FIXTURES)
    DocumentStore(str(tmp_path / "store"), embedding="offline").index([str(folder)])
    r = retrieval(str(tmp_path / "store"), 12, str(FIXTURES), warmup=3)
    assert r["chunks"] == 40 and r["questions"] == 12 and r["warmup"] == 3
    for mode in ("dense", "bm25", "hybrid"):
        stats = r["modes"][mode]
        assert stats["n"] == 12
        assert stats["lease_reads"] == 0  # embedded: no writer marks to read
        for q in ("p50", "p95"):
            assert stats[q]["raw"] > 0 and stats[q]["ours"] > 0
            assert stats[q]["ci"][0] <= stats[q]["ci"][1]
    result = BenchResult("8", "scale")
    _retrieval_rows(result, [r, r], "embedded store")
    assert len(result.rows) == 6
    dense95 = next(row for row in result.rows if "dense retrieval p95" in row.metric)
    ratio = r["modes"]["dense"]["p95"]["ratio"]
    assert dense95.ratio.startswith(f"{ratio:.3f} (runs {ratio:.2f}, {ratio:.2f}")
    assert dense95.met is (ratio <= 1.1)
    assert "2 run(s), 12 questions each" in dense95.metric


def test_phase_clock_splits_the_run_at_its_events() -> None:
    clock = PhaseClock()
    clock.start = 10.0  # the timestamps are given, not measured
    for event, at in (("discover", 11.0), ("files", 12.0), ("file", 14.0), ("bm25", 17.0)):
        clock.first[event] = at
    clock("file", None)  # a later event of a kind already seen moves nothing
    assert clock.first["file"] == 14.0
    assert clock.phases(21.0) == {
        "discover_seconds": 1.0,
        "scan_seconds": 2.0,
        "files_seconds": 3.0,
        "bm25_seconds": 4.0,
    }
    del clock.first["bm25"]  # no BM25 update: the files run to the end
    assert clock.phases(21.0)["files_seconds"] == 7.0
    assert clock.phases(21.0)["bm25_seconds"] == 0.0


def test_index_ours_times_the_phases_of_the_first_run_and_both_reruns(tmp_path: Path) -> None:
    folder = small_files(tmp_path / "notes", 30, FIXTURES)
    out = index_ours(str(folder), str(tmp_path / "store"), rerun=3)
    assert out["files"] == out["chunks"] == 30
    assert out["rerun"]["replaced"] == out["rerun_replaced"] == 3
    assert out["rerun_new"]["added"] == 3
    for run in (out, out["rerun"], out["rerun_new"]):
        phases = [run[k] for k in PHASES]
        assert all(p >= 0 for p in phases)
        # the phases lie inside the run, one after another (how much of it they cover depends on
        # the machine's load: the benchmark reports that share, a test does not assert it)
        assert sum(phases) <= run["seconds"] + 1e-6
        assert run["phase_share"] == pytest.approx(sum(phases) / run["seconds"])
        assert run["files_seconds"] > 0 and run["scan_seconds"] > 0
        assert run["bm25_seconds"] > 0  # every one of these runs changed the store
    note = _phase_note(30, out)
    assert f"first run {out['phase_share']:.0%}" in note
    assert f"10 new {out['rerun_new']['phase_share']:.0%}" in note
