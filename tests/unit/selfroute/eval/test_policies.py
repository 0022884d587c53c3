"""Self-Route policies in the harness: k-ladder, pre-routing, structured verdict, latency."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfroute import ConfigurationError, Generation, Passage, PreRoute, RouteConfig, Usage
from selfroute.eval import (
    EvalItem,
    LatencyModel,
    ModelRequest,
    OracleReader,
    estimate,
    evaluate,
)
from selfroute.eval.cli import main
from selfroute.flow import load_structured
from tests.unit.selfroute.eval._fakes import ITEMS, PARAGRAPHS, ScriptedReader, item

CFG = RouteConfig(chunk_words=20)


def in_order(item: EvalItem, k: int) -> list[Passage]:
    """Every paragraph, in document order, scored 6, 5, 4, ... (so k picks a known prefix)."""
    return [
        Passage(text, doc_id=item.doc_id, score=float(6 - i), metadata={"chunk_index": i})
        for i, text in enumerate(PARAGRAPHS)
    ][:k]


def _by(summary, method="self_route"):
    return {r.item.id: r for r in summary.records if r.method == method}


def run(config: RouteConfig, items=ITEMS, **kw):
    kw.setdefault("reader", OracleReader())
    return evaluate(
        items, ks=[1], methods=["self_route"], config=config, cache=False, retriever=in_order, **kw
    )


def test_k_ladder_climbs_before_long_context_and_records_the_rungs() -> None:
    plain = _by(run(CFG))
    assert plain["elsewhere"].rungs == [1] and plain["elsewhere"].route == "long_context"
    summary = run(RouteConfig(chunk_words=20, k_ladder=(6,)))
    laddered = _by(summary)
    rec = laddered["elsewhere"]
    assert rec.rungs == [1, 6] and rec.answered_from_chunks and rec.route == "rag"
    assert [c.k for c in rec.calls] == [1, 6]
    assert laddered["impossible"].rungs == [1, 6] and laddered["impossible"].abstained
    assert laddered["in-chunk"].rungs == [1]
    row = summary.row("self_route", 1)
    assert row.rag_calls == 5 and row.answerable_ratio == pytest.approx(2 / 3)
    assert summary.policy["k_ladder"] == [6]
    assert "k-ladder" in summary.to_markdown()


def test_pre_routing_global_questions_and_weak_retrieval() -> None:
    overall = item("overall", "Overall, what was the lighthouse built from?", ("granite blocks",))
    summary = run(RouteConfig(chunk_words=20, pre_route=PreRoute()), items=[*ITEMS, overall])
    rec = _by(summary)["overall"]
    assert rec.reason == "global_question" and rec.rungs == [] and rec.route == "long_context"
    assert rec.prediction == "granite blocks" and rec.top_score == 6.0
    assert _by(summary)["in-chunk"].reason == "answered"
    assert summary.row("self_route", 1).pre_routed == 1
    weak = run(RouteConfig(chunk_words=20, pre_route=PreRoute(min_top_score=7.0)))
    assert {r.reason for r in weak.records} == {"weak_retrieval"}
    assert all(r.rag_input_tokens == 0 and r.lc_input_tokens > 0 for r in weak.records)
    assert weak.policy["pre_route"] == {"global_questions": True, "min_top_score": 7.0}


def test_structured_verdict_with_the_oracle() -> None:
    summary = run(RouteConfig(chunk_words=20, verdict="structured"))
    rec = _by(summary)["in-chunk"]
    assert rec.calls[0].structured and json.loads(rec.calls[0].output)["answerable"] is True
    assert rec.prediction == "granite blocks" and rec.answered_from_chunks
    assert _by(summary)["impossible"].abstained


def test_structured_needs_a_reader_that_supports_it() -> None:
    reader = ScriptedReader()
    with pytest.raises(ConfigurationError, match="structured output"):
        run(RouteConfig(chunk_words=20, verdict="structured"), reader=reader)
    assert reader.requests == []  # refused before any call
    summary = run(RouteConfig(chunk_words=20, verdict="auto"), reader=reader)
    assert not any(c.structured for r in summary.records for c in r.calls)
    assert _by(summary)["in-chunk"].prediction == "granite blocks"


class StructuredScripted(ScriptedReader):
    """A cacheable reader that answers structured requests as JSON text."""

    supports_structured = True

    async def agenerate(self, request: ModelRequest) -> Generation:
        gen = await super().agenerate(request)
        if request.structured is None:
            return gen
        obj = {"answerable": gen.text != "unanswerable", "answer": gen.text}
        return Generation(json.dumps(obj), Usage.of(9, 9), gen.model, structured=obj)


def test_a_cached_structured_answer_is_read_back(tmp_path: Path) -> None:
    cache = tmp_path / "cache.sqlite"
    cfg = RouteConfig(chunk_words=20, verdict="structured")
    reader = StructuredScripted()
    kw = {"ks": [1], "methods": ["self_route"], "config": cfg, "retriever": in_order}
    one = evaluate(ITEMS, reader=reader, cache=cache, **kw)
    two = evaluate(ITEMS, reader=StructuredScripted(), cache=cache, **kw)
    assert two.model_calls == 0
    assert [r.route for r in two.records] == [r.route for r in one.records]
    assert _by(two)["in-chunk"].prediction == "granite blocks"
    assert load_structured(_by(two)["in-chunk"].calls[0].output) == {
        "answerable": True,
        "answer": "granite blocks",
    }


def test_k_ladder_must_climb_above_every_k() -> None:
    with pytest.raises(ConfigurationError, match="k_ladder"):
        evaluate(
            ITEMS,
            reader=OracleReader(),
            ks=[1, 6],
            methods=["self_route"],
            config=RouteConfig(k_ladder=(5,)),
            cache=False,
        )


def test_simulated_latency_is_deterministic_and_labelled() -> None:
    reader = OracleReader(latency=LatencyModel(1.0, 0.0, 0.0))
    summary = run(CFG, reader=reader)
    for rec in summary.records:
        assert rec.latency_s == pytest.approx(len(rec.calls))
    assert summary.latency_model == LatencyModel(1.0, 0.0, 0.0).describe()
    assert summary.to_dict()["latency_simulated"] is True
    assert "Latency is **simulated**" in summary.to_markdown()
    assert run(CFG).latency_model is None


def test_estimate_covers_grounded_and_pre_routing() -> None:
    cfg = RouteConfig(chunk_words=20, pre_route=PreRoute(min_top_score=7.0))
    est = estimate(
        ITEMS,
        reader=OracleReader(),
        ks=[1],
        methods=["lc", "self_route", "self_route_grounded"],
        config=cfg,
        retriever=in_order,
        cache=False,
    )
    rows = {r.method: r for r in est.rows}
    lc = rows["lc"]
    sr = rows["self_route"]
    # every question is pre-routed: exactly one long-context call each, shared with LC
    assert sr.calls_min == sr.calls_max == 3 and sr.cached_calls == 3
    grounded = rows["self_route_grounded"]
    assert grounded.calls_min == grounded.calls_max == 3
    assert grounded.input_tokens_min > lc.input_tokens_min  # its prompt asks for quotes
    assert "Self-Route grounded" in est.to_text()


def test_eval_cli_with_policies_and_scripted_readers(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "--sample",
            "--reader",
            "fabricating-oracle",
            "--fabricated-quote",
            "irrelevant",
            "--limit",
            "10",
            "--methods",
            "lc,rag,self-route,self-route-grounded",
            "--k-ladder",
            "10",
            "--pre-route",
            "--verdict",
            "structured",
            "--simulate-latency",
            "--out",
            str(out),
            "--no-cache",
            "--no-progress",
        ]
    )
    assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "| Self-Route grounded (k=5) |" in printed and "simulated" in printed
    data = json.loads((out / "summary.json").read_text())
    assert data["policy"]["k_ladder"] == [10] and data["policy"]["verdict"] == "structured"
    assert data["latency_simulated"] and "fabricating-oracle" in data["reader"]
    assert {a["method"] for a in data["abstention"]} == {
        "lc",
        "rag",
        "self_route",
        "self_route_grounded",
    }
    line = json.loads((out / "results.jsonl").read_text().splitlines()[-1])
    assert "top_score" in line and "rungs" in line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--k", "5", "--k-ladder", "5"], "k_ladder"),
        (["--simulate-latency", "x"], "latency model"),
    ],
)
def test_eval_cli_policy_errors(argv: list[str], message: str, tmp_path: Path, capsys) -> None:
    code = main(
        ["--sample", "--reader", "oracle", "--limit", "2", "--no-cache", "--no-progress",
         "--out", str(tmp_path), *argv]
    )  # fmt: skip
    assert code == 2
    assert message in capsys.readouterr().err


def test_speculative_long_context_overlaps_and_counts_the_wasted_tokens() -> None:
    latency = LatencyModel()
    plain = _by(run(CFG, reader=OracleReader(latency=latency)))
    spec = _by(
        run(
            RouteConfig(chunk_words=20, speculate_below=100.0),  # every question speculates
            reader=OracleReader(latency=latency),
        )
    )
    for item_id, p in plain.items():
        s = spec[item_id]
        assert s.route == p.route and s.prediction == p.prediction, item_id
        (lc_call,) = [c for c in s.calls if c.stage.value == "long_context"]
        assert lc_call.speculative
        if p.route == "long_context":  # the LC call ran alongside the RAG call: max, not sum
            rag = sum(c.latency_s for c in s.calls if c.stage.value == "rag")
            assert s.latency_s == pytest.approx(max(rag, lc_call.latency_s))
            assert s.latency_s < p.latency_s
            assert s.input_tokens == p.input_tokens
        else:  # RAG answered: the cancelled LC call's tokens are the price
            assert s.latency_s == pytest.approx(p.latency_s)
            assert s.input_tokens == p.input_tokens + lc_call.usage.input_tokens
    assert {r.route for r in plain.values()} == {"rag", "long_context"}
