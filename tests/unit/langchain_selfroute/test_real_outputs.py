"""Streaming real model outputs through SelfRoute: a decline never survives in the stream.

Uses the vendored, hand-labelled RAG-step outputs of ``tests/fixtures/refusals/labelled.jsonl``
(real LongBench / InfiniteBench predictions, MIT; see ``tests/fixtures/README.md``): every output
labelled as a decline, and the hold-out answers.
"""

from __future__ import annotations

import functools
import json
import operator
from pathlib import Path
from typing import Any

from langchain_selfroute import SelfRoute
from selfroute import Route, Stage
from tests.conformance.scenarios import BY_NAME
from tests.unit.langchain_selfroute.fakes import ListRetriever, ScriptedChatModel, scenario_docs

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "refusals" / "labelled.jsonl"
LC_ANSWER = "The long-context answer."


def cases() -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if r["declined"] or r["split"] == "holdout"]


def strip_markup(text: str) -> str:
    return "".join(ch for ch in text if ch not in "*_`")


def test_streamed_real_outputs_never_leak_a_decline() -> None:
    rows = cases()
    assert len(rows) > 300
    scenario = BY_NAME["answered"]
    model = ScriptedChatModel(piece_chars=5, lc_output=LC_ANSWER)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=model,
        document=scenario.document,
        counterfactual=False,
    )
    declined_as_labelled = retracted = 0
    for row in rows:
        model.rag_output = row["prediction"]
        chunks = list(route.stream("What does the document say?"))
        total = functools.reduce(operator.add, chunks)
        out = total.output
        assert out is not None
        retracted += any(c.retracted for c in chunks)
        if out.route is Route.LONG_CONTEXT:
            # whatever RAG text went out was retracted: the stream adds up to the LC answer only
            assert total.text == LC_ANSWER, row["prediction"]
            rag_text = "".join(c.text for c in chunks if c.stage is Stage.RAG)
            assert not rag_text or any(c.retracted for c in chunks), row["prediction"]
            declined_as_labelled += row["declined"]
        else:
            assert strip_markup(total.text) == strip_markup(out.answer or ""), row["prediction"]
    declined = sum(r["declined"] for r in rows)
    assert declined_as_labelled >= 0.95 * declined  # the verdict parser's recall on real declines
    assert retracted < 0.2 * len(rows)  # retraction is the exception, not the rule
