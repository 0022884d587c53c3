"""Unanswerable questions are scored by whether the final answer declined; grounded mode."""

from __future__ import annotations

import json
from pathlib import Path

from selfroute import Generation, RouteConfig, Stage, Usage
from selfroute.eval import (
    FabricatingOracleReader,
    ModelRequest,
    OracleReader,
    evaluate,
    load_longbench,
)
from tests.unit.selfroute.eval._fakes import ITEMS, ScriptedReader

CFG = RouteConfig(chunk_words=20)
ALL = ["lc", "rag", "self_route", "self_route_grounded"]


def _by(summary, method):
    return {r.item.id: r for r in summary.records if r.method == method}


def test_oracle_every_method_declines_the_impossible_question() -> None:
    summary = evaluate(ITEMS, reader=OracleReader(), ks=[1], methods=ALL, config=CFG, cache=False)
    for method in ALL:
        rec = _by(summary, method)["impossible"]
        assert rec.abstained is True and rec.abstention == "declined" and rec.score == 1.0
        row = summary.row(method, 1)
        assert (row.unanswerable_items, row.correct_declines) == (1, 1)
        assert row.correct_decline_rate == 1.0
    # the RAG baseline declines an answerable question whose answer it was not shown: the price
    assert summary.row("rag", 1).declined_answerable == 1
    assert summary.row("self_route", 1).declined_answerable == 0
    grounded = _by(summary, "self_route_grounded")
    assert (
        grounded["in-chunk"].verified is True
        and grounded["in-chunk"].prediction == "granite blocks"
    )
    assert grounded["elsewhere"].verified is True  # the LC answer quoted the document
    assert (
        summary.row("self_route_grounded", 1).answerable_ratio
        == summary.row("self_route", 1).answerable_ratio
    )
    data = summary.to_dict()
    rates = {a["label"]: a["correct_decline_rate"] for a in data["abstention"]}
    assert rates["Self-Route grounded (k=1)"] == 1.0 and rates["LC"] == 1.0


def test_fabricated_answers_with_invented_quotes_are_caught_by_grounded_mode_only() -> None:
    reader = FabricatingOracleReader(quote="invented")
    summary = evaluate(ITEMS, reader=reader, ks=[1], methods=ALL, config=CFG, cache=False)
    assert _by(summary, "lc")["impossible"].abstained is False
    assert _by(summary, "lc")["impossible"].score == 0.0
    assert _by(summary, "rag")["impossible"].abstained is True  # RAG never fabricates here
    plain = _by(summary, "self_route")["impossible"]
    assert plain.abstained is False and plain.disputed is True and plain.score == 0.0
    grounded = _by(summary, "self_route_grounded")["impossible"]
    assert grounded.abstained is True and grounded.abstention == "ungrounded"
    assert grounded.prediction == "unanswerable" and grounded.unverified_answer
    assert grounded.score == 1.0 and grounded.verified is False
    rates = {r.method: r.correct_decline_rate for r in summary.rows}
    assert rates == {"lc": 0.0, "rag": 1.0, "self_route": 0.0, "self_route_grounded": 1.0}
    report = summary.to_markdown()
    assert "## Abstention: questions the document does not answer" in report
    assert "Scripted hallucination" in report


def test_irrelevant_real_quotes_pass_the_check() -> None:
    reader = FabricatingOracleReader(quote="irrelevant")
    summary = evaluate(ITEMS, reader=reader, ks=[1], methods=ALL, config=CFG, cache=False)
    grounded = _by(summary, "self_route_grounded")["impossible"]
    assert grounded.abstained is False and grounded.verified is True and grounded.score == 0.0
    assert summary.row("self_route_grounded", 1).correct_decline_rate == 0.0


class RefusingLC(ScriptedReader):
    """Declines in its own words in the long-context call."""

    async def agenerate(self, request: ModelRequest) -> Generation:
        gen = await super().agenerate(request)
        if request.stage is Stage.LONG_CONTEXT and gen.text == "unanswerable":
            return Generation("The text does not mention it.", Usage.of(5, 6), gen.model)
        return gen


def test_baselines_are_classified_with_the_verdict_parser() -> None:
    summary = evaluate(ITEMS, reader=RefusingLC(), ks=[1], methods=ALL, config=CFG, cache=False)
    lc = _by(summary, "lc")["impossible"]
    assert lc.prediction == "The text does not mention it." and lc.abstained and lc.score == 1.0
    sr = _by(summary, "self_route")["impossible"]
    assert sr.abstained and sr.abstention == "declined" and sr.score == 1.0
    assert _by(summary, "lc")["in-chunk"].abstained is False
    line = summary.records[0].to_dict()
    assert {"abstained", "abstention", "top_score", "rungs", "rag_input_tokens"} <= set(line)


def test_longbench_unanswerable_golds_are_marked(tmp_path: Path) -> None:
    rows = [
        {"input": "q1", "context": "doc", "answers": ["Unanswerable"]},
        {"input": "q2", "context": "doc", "answers": ["unanswerable", "Unanswerable."]},
        {"input": "q3", "context": "doc", "answers": ["Unanswerable", "BLEU"]},
        {"input": "q4", "context": "doc", "answers": ["BLEU"]},
    ]
    path = tmp_path / "qasper.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    items = load_longbench(path)
    assert [i.unanswerable for i in items] == [True, True, False, False]
    assert items[0].answers == ("Unanswerable",)  # kept for reference
