"""``selfroute eval --batch`` on the bundled SQuAD sample with the oracle reader: the batch run
routes, scores and spends exactly what the online harness does, at half the price."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfroute import PriceTable
from selfroute.eval import OracleReader, evaluate, load_sample
from selfroute.eval._batch import evaluate_batch

PRICES = PriceTable({"oracle": (2.5, 10.0)})


def test_batch_eval_equals_the_online_harness() -> None:
    items = load_sample()[:40]
    online = evaluate(
        items,
        reader=OracleReader(),
        ks=[5],
        methods=["self_route"],
        cache=False,
        progress=False,
        prices=PRICES,
    ).row("self_route", 5)
    report = evaluate_batch(items, reader=OracleReader(), k=5, prices=PRICES)
    assert report.batches == 2 and all(o.ok for o in report.outcomes)
    assert 100 * report.score == pytest.approx(online.score)
    assert report.answerable_ratio == pytest.approx(online.answerable_ratio)
    assert report.cost is not None
    assert report.cost.self_route_online == pytest.approx(online.cost)
    assert report.cost.self_route_batch == pytest.approx(online.cost * 0.5)
    assert report.cost.always_lc_batch == pytest.approx(report.cost.always_lc_online * 0.5)
    assert report.cost.self_route_online < report.cost.always_lc_online


def test_eval_cli_batch(tmp_path: Path, capsys: Any) -> None:
    from selfroute.cli import main

    code = main(
        [
            "eval",
            "--sample",
            "--reader",
            "oracle",
            "--batch",
            "--limit",
            "20",
            "--prices",
            "oracle=2.5/10",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "| Self-Route, batch |" in out and "20 questions" in out
    data = json.loads((tmp_path / "batch-report.json").read_text())
    assert len(data["outcomes"]) == 20 and data["batches"] == 2
    assert (tmp_path / "batch-job.json").is_file()
    code = main(
        [  # a rerun answers from the job file
            "eval",
            "--sample",
            "--reader",
            "oracle",
            "--batch",
            "--limit",
            "20",
            "--prices",
            "oracle=2.5/10",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 0
    again = json.loads((tmp_path / "batch-report.json").read_text())
    assert again["cost"] == data["cost"] and again["batches"] == 0
