"""Output files: results.jsonl, summary.json, report.md and the two PNG figures."""

from __future__ import annotations

import json
from pathlib import Path

from selfroute import MissingDependencyError, RouteConfig
from selfroute.eval import OracleReader, evaluate
from tests.unit.selfroute.eval._fakes import ITEMS, ScriptedReader

CFG = RouteConfig(chunk_words=20)
PNG = b"\x89PNG\r\n\x1a\n"


def test_outputs_with_several_k(tmp_path: Path) -> None:
    summary = evaluate(
        ITEMS, reader=OracleReader(), ks=[1, 3], config=CFG, cache=False, out=tmp_path
    )
    assert summary.files == {
        "fig2": "fig2_rag_minus_lc.png",
        "fig3": "fig3_k.png",
        "results": "results.jsonl",
        "summary": "summary.json",
        "report": "report.md",
    }
    for png in ("fig2_rag_minus_lc.png", "fig3_k.png"):
        data = (tmp_path / png).read_bytes()
        assert data.startswith(PNG) and len(data) > 5_000
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == len(ITEMS) * 5
    first_sr = next(x for x in lines if x["method"] == "self_route")
    assert first_sr["calls"][0]["prompt_tokens"] > 0 and "output" in first_sr["calls"][0]
    assert {"route", "reason", "score", "token_ratio", "gold"} <= first_sr.keys()
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["oracle"] is True and len(data["rows"]) == 5
    assert data["rows"][0]["label"] == "LC"
    report = (tmp_path / "report.md").read_text()
    assert "**Reader: oracle**" in report
    assert "| Self-Route (k=3) |" in report
    assert "![RAG minus LC score per question](fig2_rag_minus_lc.png)" in report
    assert "fig3_k.png" in report


def test_single_k_has_no_k_figure_and_model_report_has_no_oracle_banner(tmp_path: Path) -> None:
    summary = evaluate(
        ITEMS, reader=ScriptedReader(), ks=[1], config=CFG, cache=False, out=tmp_path
    )
    assert "fig3" not in summary.files and not (tmp_path / "fig3_k.png").exists()
    report = (tmp_path / "report.md").read_text()
    assert "oracle" not in report.lower()
    assert report == summary.to_markdown()


def test_without_lc_there_is_no_comparison_figure(tmp_path: Path) -> None:
    summary = evaluate(
        ITEMS,
        reader=OracleReader(),
        ks=[1],
        config=CFG,
        cache=False,
        out=tmp_path,
        methods=["rag", "self_route"],
    )
    assert "fig2" not in summary.files
    assert "RAG versus LC" not in (tmp_path / "report.md").read_text()


def test_missing_matplotlib_skips_figures_but_keeps_results(tmp_path: Path, monkeypatch) -> None:
    import selfroute.eval._report as report
    import selfroute.eval._runner as runner

    def no_matplotlib():
        raise MissingDependencyError("matplotlib", "eval")

    monkeypatch.setattr(report, "_pyplot", no_matplotlib)
    monkeypatch.setattr(runner, "start_figure_worker", lambda: None)  # drawn here, or not at all
    summary = evaluate(
        ITEMS, reader=OracleReader(), ks=[1, 3], config=CFG, cache=False, out=tmp_path
    )
    assert "fig2" not in summary.files and "fig3" not in summary.files
    assert (tmp_path / "results.jsonl").is_file() and (tmp_path / "summary.json").is_file()
    text = (tmp_path / "report.md").read_text()
    assert "Figures skipped" in text and "[eval]'" in text  # the install line (issue 17)
