"""The shared conformance scenarios through every Runnable entry point of ``SelfRoute``.

Every scenario (the paper's and the policy ones: abstention, grounded mode, k-ladder,
pre-routing, structured verdicts) runs with its ``settings`` passed to ``SelfRoute`` under the
``RouteConfig`` names, and must give the framework-free core's result.
"""

from __future__ import annotations

import functools
import operator

import pytest
from langchain_core.runnables import ConfigurableField

import selfroute as sr
from langchain_selfroute import SelfRoute, SelfRouteChunk
from tests.conformance.scenarios import (
    ALL_SCENARIOS,
    LC_MODEL,
    RAG_MODEL,
    Scenario,
    check,
    expected_stages,
)
from tests.unit.langchain_selfroute.fakes import (
    ListRetriever,
    ScriptedChatModel,
    scenario_docs,
    scenario_route,
)

IDS = [s.name for s in ALL_SCENARIOS]


def expected_models(scenario: Scenario) -> list[str]:
    return [RAG_MODEL if s is sr.Stage.RAG else LC_MODEL for s in expected_stages(scenario)]


def expected_calls(scenario: Scenario) -> list[str]:
    return ["rag" if s is sr.Stage.RAG else "long_context" for s in expected_stages(scenario)]


def check_stream(chunks: list[SelfRouteChunk], scenario: Scenario) -> sr.RouteResult:
    """What every stream must satisfy: nothing before answer text or the result (so
    ``with_fallbacks`` can still switch), the route known from the first chunk, result last,
    and the text adds up."""
    assert all(isinstance(c, SelfRouteChunk) for c in chunks)
    assert all(c.text or c.is_final for c in chunks), [c for c in chunks if not c.text]
    assert chunks[0].route is scenario.route
    final = chunks[-1].output
    assert final is not None and all(c.output is None for c in chunks[:-1])
    result = final.result
    check(result, scenario)
    total = functools.reduce(operator.add, chunks)
    assert total.output == final and total.route is result.route
    held = bool(scenario.settings.get("grounded"))
    if result.route is sr.Route.RAG or held:
        # RAG text is released once it cannot be a decline; grounded text once verified: either
        # way what was streamed is the final answer (a withheld LC answer streams the sentinel).
        assert total.text == result.answer, (scenario.name, total.text, result.answer)
    else:
        # An unheld long-context answer streams as the model writes it (a decline too).
        assert total.text == scenario.lc_output, (scenario.name, total.text)
    return result


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
def test_invoke(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    out = route.invoke(scenario.question)
    check(out.result, scenario)
    assert model.modes() <= {"sync"}
    assert [c[1] for c in model.calls] == expected_calls(scenario)
    assert [d.page_content for d in out.sources] == list(scenario.passages)
    assert [s.model for s in out.steps] == expected_models(scenario)
    assert out.abstained == (scenario.abstention is not None)
    assert (out.abstention, out.verified) == (scenario.abstention, scenario.verified)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
async def test_ainvoke(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    out = await route.ainvoke(scenario.question)
    check(out.result, scenario)
    assert model.modes() <= {"async"}
    assert [c[1] for c in model.calls] == expected_calls(scenario)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
def test_stream(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    chunks = list(route.stream(scenario.question))
    check_stream(chunks, scenario)
    assert model.modes() <= {"sync_stream"}
    assert [c[1] for c in model.calls] == expected_calls(scenario)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
async def test_astream(scenario: Scenario) -> None:
    route, model = scenario_route(scenario)
    chunks = [c async for c in route.astream(scenario.question)]
    check_stream(chunks, scenario)
    assert model.modes() <= {"async_stream"}


def test_batch_runs_every_scenario() -> None:
    routes = [scenario_route(s)[0] for s in ALL_SCENARIOS]
    # One SelfRoute per scenario (their scripts differ); batch each over its own question and
    # a shared route over many questions below.
    for route, scenario in zip(routes, ALL_SCENARIOS, strict=True):
        (out,) = route.batch([scenario.question])
        check(out.result, scenario)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
async def test_abatch(scenario: Scenario) -> None:
    route, _ = scenario_route(scenario)
    outs = await route.abatch([scenario.question, {"question": scenario.question}])
    for out in outs:
        check(out.result, scenario)


def test_batch_many_questions_keeps_order() -> None:
    scenario = ALL_SCENARIOS[0]
    route, model = scenario_route(scenario)
    questions = [f"{scenario.question} ({i})" for i in range(6)]
    outs = route.batch(questions, config={"max_concurrency": 3})
    assert [o.question for o in outs] == questions
    for out in outs:
        assert out.route.value == "rag" and out.answer == scenario.answer
    assert len(model.calls) == 6


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
def test_cheap_and_strong_pair(scenario: Scenario) -> None:
    """A cheap RAG model plus a strong LC model gives the same result as one scripted model."""
    cheap = ScriptedChatModel(rag_output=scenario.rag_output, lc_output="WRONG MODEL")
    strong = ScriptedChatModel(rag_output="WRONG MODEL", lc_output=scenario.lc_output)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=cheap,
        long_context_llm=strong,
        document=scenario.document,
        **scenario.settings,
    )
    out = route.invoke(scenario.question)
    check(out.result, scenario)
    assert {c[1] for c in cheap.calls} <= {"rag"}
    assert {c[1] for c in strong.calls} <= {"long_context"}
    assert bool(strong.calls) == (scenario.route.value == "long_context")


WITH_SETTINGS = [s for s in ALL_SCENARIOS if s.settings]


@pytest.mark.parametrize("scenario", WITH_SETTINGS, ids=[s.name for s in WITH_SETTINGS])
def test_settings_are_configurable_per_call(scenario: Scenario) -> None:
    """The routing options are ``configurable_fields`` like any other setting."""
    route = SelfRoute(  # built with the defaults; the scenario's options come per call
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=ScriptedChatModel(rag_output=scenario.rag_output, lc_output=scenario.lc_output),
        document=scenario.document,
    )
    fields = {name: ConfigurableField(id=name) for name in scenario.settings}
    tunable = route.configurable_fields(**fields)
    out = tunable.with_config(configurable=dict(scenario.settings)).invoke(scenario.question)
    check(out.result, scenario)
