"""The shared conformance scenarios through every Runnable entry point of ``SelfRoute``."""

from __future__ import annotations

import functools
import operator

import pytest

from langchain_selfroute import SelfRoute, SelfRouteChunk
from tests.conformance.scenarios import LC_MODEL, RAG_MODEL, SCENARIOS, Scenario, check
from tests.unit.langchain_selfroute.fakes import (
    ListRetriever,
    ScriptedChatModel,
    scenario_docs,
    scenario_route,
)

IDS = [s.name for s in SCENARIOS]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_invoke(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    out = route.invoke(scenario.question)
    check(out.result, scenario)
    assert model.modes() == {"sync"}
    assert [d.page_content for d in out.sources] == list(scenario.passages)
    assert [s.model for s in out.steps] == (
        [RAG_MODEL]
        if scenario.route.value == "rag"
        else ([LC_MODEL] if scenario.name == "no_chunks" else [RAG_MODEL, LC_MODEL])
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
async def test_ainvoke(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    out = await route.ainvoke(scenario.question)
    check(out.result, scenario)
    assert model.modes() == {"async"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_stream(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    chunks = list(route.stream(scenario.question))
    assert all(isinstance(c, SelfRouteChunk) for c in chunks)
    assert chunks[0].route is scenario.route and chunks[0].text == ""
    final = chunks[-1].output
    assert final is not None and all(c.output is None for c in chunks[:-1])
    check(final.result, scenario)
    assert model.modes() == {"sync_stream"}
    total = functools.reduce(operator.add, chunks)
    assert total.output == final
    if scenario.route.value == "long_context":
        assert total.text == scenario.lc_output


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
async def test_astream(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    chunks = [c async for c in route.astream(scenario.question)]
    assert chunks[0].route is scenario.route
    assert chunks[-1].output is not None
    check(chunks[-1].output.result, scenario)
    assert model.modes() == {"async_stream"}


def test_batch_runs_every_scenario() -> None:
    routes = [scenario_route(s)[0] for s in SCENARIOS]
    # One SelfRoute per scenario (their scripts differ); batch each over its own question and
    # a shared route over many questions below.
    for route, scenario in zip(routes, SCENARIOS, strict=True):
        (out,) = route.batch([scenario.question])
        check(out.result, scenario)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
async def test_abatch(scenario: Scenario) -> None:
    route, _ = scenario_route(scenario)
    outs = await route.abatch([scenario.question, {"question": scenario.question}])
    for out in outs:
        check(out.result, scenario)


def test_batch_many_questions_keeps_order() -> None:
    scenario = SCENARIOS[0]
    route, model = scenario_route(scenario)
    questions = [f"{scenario.question} ({i})" for i in range(6)]
    outs = route.batch(questions, config={"max_concurrency": 3})
    assert [o.question for o in outs] == questions
    for out in outs:
        assert out.route.value == "rag" and out.answer == scenario.answer
    assert len(model.calls) == 6


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_cheap_and_strong_pair(scenario: Scenario) -> None:
    """A cheap RAG model plus a strong LC model gives the same result as one scripted model."""
    cheap = ScriptedChatModel(rag_output=scenario.rag_output, lc_output="WRONG MODEL")
    strong = ScriptedChatModel(rag_output="WRONG MODEL", lc_output=scenario.lc_output)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=cheap,
        long_context_llm=strong,
        document=scenario.document,
    )
    out = route.invoke(scenario.question)
    check(out.result, scenario)
    assert {c[1] for c in cheap.calls} <= {"rag"}
    assert {c[1] for c in strong.calls} <= {"long_context"}
    assert bool(strong.calls) == (scenario.route.value == "long_context")
