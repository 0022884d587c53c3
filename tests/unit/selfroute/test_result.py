"""Results, the price table and the stats aggregator."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

import selfroute as sr
from tests.unit.selfroute._scripted import Scripted, run


def _result(**kw: Any) -> sr.RouteResult:
    defaults: dict[str, Any] = {
        "question": "q?",
        "answer": "a",
        "route": sr.Route.RAG,
        "reason": sr.Reason.ANSWERED,
        "steps": (sr.StepRecord(sr.Stage.RAG, sr.Usage.of(100, 5), model="m"),),
        "long_context_tokens": 1000,
    }
    defaults.update(kw)
    return sr.RouteResult(**defaults)


def test_to_dict_round_trips_through_json() -> None:
    prices = sr.PriceTable({"rag-model": (1.0, 2.0), "lc-model": (3.0, 4.0)})
    result = run(Scripted(rag="unanswerable"), prices=prices)
    d = result.to_dict()
    again = json.loads(json.dumps(d))
    assert again == d
    assert again["route"] == "long_context" and again["reason"] == "declined"
    assert again["usage"]["input_tokens"] == result.usage.input_tokens
    assert set(again["usage_by_stage"]) == {"rag", "long_context"}
    assert again["sources"][0]["doc_id"] == "doc-1" and "source" not in again["sources"][0]
    assert [s["stage"] for s in again["steps"]] == ["rag", "long_context"]
    assert again["token_ratio"] == pytest.approx(result.token_ratio)
    assert again["cost"] == pytest.approx(result.cost)
    assert again["context"]["strategy"] == "none"


def test_token_ratio() -> None:
    assert _result().token_ratio == pytest.approx(0.1)
    assert _result(long_context_tokens=None).token_ratio is None
    assert _result(long_context_tokens=0).token_ratio is None
    two = (
        sr.StepRecord(sr.Stage.RAG, sr.Usage.of(100, 5)),
        sr.StepRecord(sr.Stage.LONG_CONTEXT, sr.Usage.of(1000, 5)),
    )
    assert _result(steps=two).token_ratio == pytest.approx(1.1)


def test_stage_usage_and_answered_from_chunks() -> None:
    r = _result()
    assert r.stage_usage("rag") == sr.Usage.of(100, 5)
    assert r.stage_usage(sr.Stage.LONG_CONTEXT) == sr.Usage.zero()
    assert r.answered_from_chunks
    assert not _result(reason=sr.Reason.OVER_BUDGET).answered_from_chunks
    with pytest.raises(ValueError):
        r.stage_usage("middle")


def test_price_table_longest_prefix_and_cached_input() -> None:
    table = sr.PriceTable(
        {"gpt-4o": (2.5, 10.0), "gpt-4o-mini": (0.15, 0.6)}, cached_input={"gpt-4o": 1.25}
    )
    usage = sr.Usage.of(1_000_000, 1_000_000)
    assert table.cost("gpt-4o-2024-08-06", usage) == pytest.approx(12.5)
    assert table.cost("gpt-4o-mini-2024-07-18", usage) == pytest.approx(0.75)  # longest key wins
    cached = sr.Usage.of(1_000_000, 0, cached_input_tokens=400_000)
    assert table.cost("gpt-4o", cached) == pytest.approx(0.6 * 2.5 + 0.4 * 1.25)
    # No cached price for the mini family: cached tokens cost the input price.
    assert table.cost("gpt-4o-mini", cached) == pytest.approx(0.15)
    assert table.cost("claude-3", usage) is None and table.cost(None, usage) is None
    assert table.knows("gpt-4o-x") and not table.knows("o1")


@pytest.mark.parametrize("pair", [(1.0,), (1.0, -2.0), ("1", 2.0), 3.0])
def test_price_table_rejects_bad_prices(pair: Any) -> None:
    with pytest.raises(sr.ConfigurationError, match="gpt"):
        sr.PriceTable({"gpt": pair})


def test_route_stats_aggregates() -> None:
    results = [
        _result(cost=0.1, long_context_cost=1.0),
        _result(
            route=sr.Route.LONG_CONTEXT,
            reason=sr.Reason.DECLINED,
            steps=(
                sr.StepRecord(sr.Stage.RAG, sr.Usage.of(100, 5)),
                sr.StepRecord(sr.Stage.LONG_CONTEXT, sr.Usage.of(1000, 5)),
            ),
            cost=1.1,
            long_context_cost=1.0,
        ),
        _result(long_context_tokens=None),
    ]
    stats = sr.RouteStats(results)
    s = stats.summary()
    assert s["calls"] == 3 and s["answered_from_chunks"] == 2
    assert s["answerable_ratio"] == pytest.approx(2 / 3)
    assert s["reasons"] == {"answered": 2, "declined": 1}
    assert s["usage"]["input_tokens"] == 1300
    assert s["long_context_tokens"] == 2000
    # Only calls with a counterfactual enter the ratio: (100 + 1100) / 2000.
    assert s["token_ratio"] == pytest.approx(0.6)
    assert s["cost"] == pytest.approx(1.2) and s["long_context_cost"] == pytest.approx(2.0)
    assert json.loads(json.dumps(s)) == s
    empty = sr.RouteStats().summary()
    assert empty["answerable_ratio"] is None and empty["token_ratio"] is None
    assert empty["cost"] is None


def test_route_stats_is_thread_safe() -> None:
    stats = sr.RouteStats()
    one = _result()

    def add_many() -> None:
        for _ in range(500):
            stats.add(one)

    threads = [threading.Thread(target=add_many) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stats.calls == 4000
    assert stats.usage.input_tokens == 400_000
    assert stats.reasons == {"answered": 4000}
