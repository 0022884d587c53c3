"""The figures drawn by the worker process are the bytes drawn in-process; a failed worker falls
back to drawing in-process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import selfroute.eval._figures as figures
import selfroute.eval._runner as runner
from selfroute import RouteConfig
from selfroute.eval import OracleReader, evaluate, write_outputs
from tests.unit.selfroute.eval._fakes import ITEMS

CFG = RouteConfig(chunk_words=20)
FIGS = ("fig2_rag_minus_lc.png", "fig3_k.png")


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    outcomes: list[bool] = []
    original = figures.FigureWorker.draw

    def draw(self: figures.FigureWorker, jobs: Any) -> bool:
        outcomes.append(original(self, jobs))
        return outcomes[-1]

    monkeypatch.setattr(figures.FigureWorker, "draw", draw)
    monkeypatch.delitem(sys.modules, "matplotlib.pyplot", raising=False)  # a worker is started
    return outcomes


def test_the_worker_draws_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = _spied(monkeypatch)
    summary = evaluate(
        ITEMS, reader=OracleReader(), ks=[1, 3], config=CFG, cache=False, out=tmp_path / "a"
    )
    assert outcomes == [True]  # drawn by the worker
    monkeypatch.undo()
    write_outputs(summary, tmp_path / "b")  # drawn here
    for name in FIGS:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_a_failed_worker_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = _spied(monkeypatch)

    def broken() -> figures.FigureWorker:
        import subprocess

        code = "import sys; sys.stdin.read(); sys.exit(3)"
        return figures.FigureWorker(
            subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, text=True)
        )

    monkeypatch.setattr(runner, "start_figure_worker", broken)
    summary = evaluate(
        ITEMS, reader=OracleReader(), ks=[1, 3], config=CFG, cache=False, out=tmp_path
    )
    assert outcomes == [False]
    assert {"fig2", "fig3"} <= set(summary.files)
    assert all((tmp_path / name).stat().st_size > 5_000 for name in FIGS)
