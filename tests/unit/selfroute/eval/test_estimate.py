"""--dry-run estimates: exact for LC and RAG, a range that brackets Self-Route, no calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfroute import PriceTable, RouteConfig
from selfroute.eval import OracleReader, estimate, evaluate
from tests.unit.selfroute.eval._fakes import ITEMS, ScriptedReader

CFG = RouteConfig(chunk_words=20)


def test_estimate_matches_the_run_it_predicts() -> None:
    oracle = OracleReader()  # its usage is the local count of each prompt
    est = estimate(ITEMS, reader=oracle, ks=[1, 2], config=CFG, cache=False)
    run = evaluate(ITEMS, reader=oracle, ks=[1, 2], config=CFG, cache=False)
    rows = {(r.method, r.k): r for r in est.rows}
    assert rows[("lc", None)].input_tokens_max == run.row("lc").input_tokens
    for k in (1, 2):
        assert rows[("rag", k)].input_tokens_min == run.row("rag", k).input_tokens
        sr = rows[("self_route", k)]
        actual = run.row("self_route", k)
        # the fallbacks equal the LC baseline's prompts, which the run pays once
        first_steps = sum(
            c.usage.input_tokens
            for r in run.records
            if r.method == "self_route" and r.k == k
            for c in r.calls
            if c.stage.value == "rag"
        )
        assert sr.input_tokens_min == first_steps
        assert sr.calls_min == len(ITEMS) and sr.calls_max == 2 * len(ITEMS)
        assert sr.cached_calls == len(ITEMS)  # shared with LC when both run
        assert sr.input_tokens_min <= actual.input_tokens


def test_estimate_prices_and_text() -> None:
    prices = PriceTable({"scripted": (1.0, 4.0)}, currency="EUR")
    est = estimate(
        ITEMS,
        reader=ScriptedReader(),
        ks=[1],
        config=CFG,
        cache=False,
        prices=prices,
        output_tokens_per_call=10,
    )
    lc = est.rows[0]
    assert lc.cost_max == pytest.approx((lc.input_tokens_max * 1.0 + 3 * 10 * 4.0) / 1e6)
    text = est.to_text()
    assert "Dry run: 3 items, no model called" in text and "EUR" in text
    assert "Self-Route (k=1)" in text
    no_price = estimate(ITEMS, reader=ScriptedReader(), ks=[1], config=CFG, cache=False)
    assert no_price.cost_max is None and "no price" in no_price.to_text()


def test_estimate_counts_cached_prompts_as_free(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    reader = ScriptedReader()
    evaluate(ITEMS, reader=reader, ks=[1], config=CFG, cache=path)
    calls = len(reader.requests)
    est = estimate(ITEMS, reader=reader, ks=[1], config=CFG, cache=path)
    assert len(reader.requests) == calls  # estimating called nothing
    assert all(r.cached_calls == r.calls_max for r in est.rows)
    assert est.input_tokens_max == 0
