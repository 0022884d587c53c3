"""The verdict evaluation script and micro-benchmark run on the vendored labelled fixtures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import stream_replay, verdict_eval, verdict_speed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "refusals"


def test_verdict_eval_reports_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(FIXTURES / "ragtruth_labelled.jsonl")]
    sentinel = "Unable to answer based on given passages"
    assert verdict_eval.main([*files, "--sentinel", sentinel, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    names = set(report)
    assert "plain refusal regex (baseline)" in names
    assert {"default, default sentinel", "strict, default sentinel"} <= names
    assert f"default, sentinel {sentinel!r}, with question" in names
    overall = report["default, default sentinel"]["all"]["all"]
    assert overall["n"] == 531 and overall["tp"] + overall["fn"] == 123
    assert set(report["default, default sentinel"]["model"]) >= {"llama-2-7b-chat"}


def test_verdict_eval_markdown_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict_eval.main([str(FIXTURES / "labelled.jsonl"), "--errors", "2"]) == 0
    out = capsys.readouterr().out
    assert "| default, default sentinel | all | 592 |" in out
    assert "### by source" in out and "### errors of" in out


def test_verdict_eval_rejects_unlabelled_rows(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prediction": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="declined"):
        verdict_eval.load([bad])


def test_verdict_speed_measures_against_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    assert verdict_speed.main([str(FIXTURES / "ragtruth_labelled.jsonl"), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "| baseline regex |" in out and "| parse_verdict with question |" in out


def test_stream_replay_tokens_join_back() -> None:
    text = "Her birth year (1901?) is not mentioned -- see p. 3.\n\nDone_now"
    assert "".join(stream_replay.tokens(text)) == text
    assert stream_replay.tokens("Paris is big.") == ["Paris", " is", " big", "."]


def test_stream_replay_counts_fewer_retractions_with_a_hold(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = verdict_speed.load_texts([FIXTURES / "labelled.jsonl"])
    plain, held = stream_replay.replay(rows, 0), stream_replay.replay(rows, 80)
    assert plain.declines == held.declines > 200 and plain.answers == held.answers
    assert held.declines_shown < plain.declines_shown  # the hold prevents some retractions
    assert held.percentile(0.5) > plain.percentile(0.5)  # ... at a cost in first-token delay
    assert stream_replay.main([str(FIXTURES / "ragtruth_labelled.jsonl"), "--hold", "0"]) == 0
    assert "| 0 |" in capsys.readouterr().out


@pytest.mark.slow
def test_verdict_ab_times_trees_against_the_first() -> None:
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.verdict_ab", str(root), str(root), "--rounds", "1"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith(f"| {root} ")]
    assert len(rows) == 2 and "1.000 / 1.000" in rows[0], out
