"""The shared conformance scenarios through SelfRouteQueryEngine: query, aquery and streaming.

Routes, reasons, answers, per-step usage, the counterfactual and the token ratio must be exactly
those of the framework-free core (and so of the LangChain adapter) on the same script -- for the
paper's scenarios and the policy ones (abstention, grounded mode, k-ladder, pre-routing, verdict
modes), each run with its ``settings`` passed to the engine under the same names.
"""

from __future__ import annotations

import pytest
from llama_index.core.base.response.schema import (
    AsyncStreamingResponse,
    Response,
    StreamingResponse,
)

import selfroute as sr
from llamaindex_selfroute import SelfRouteQueryEngine, get_route_result
from llamaindex_selfroute._response import shown_answer
from tests.conformance.scenarios import (
    ALL_SCENARIOS,
    LC_MODEL,
    RAG_MODEL,
    SCENARIOS,
    Scenario,
    check,
    expected_stages,
)
from tests.unit.llamaindex_selfroute._scripted import scenario_parts

IDS = [s.name for s in ALL_SCENARIOS]


def _engine(scenario: Scenario, *, streaming: bool = False, chat_model: bool = True):
    retriever, rag, lc = scenario_parts(scenario, chat_model=chat_model)
    engine = SelfRouteQueryEngine(
        retriever,
        rag,
        lc,
        long_context=scenario.document,
        streaming=streaming,
        **scenario.settings,
    )
    return engine, retriever, rag, lc


def _check_calls(scenario: Scenario, rag, lc, method: str) -> None:
    """Each LLM got exactly the calls the scenario's stages say (a k-ladder: one per rung)."""
    stages = expected_stages(scenario)
    assert rag.calls == [method] * stages.count(sr.Stage.RAG), (scenario.name, rag.calls)
    assert lc.calls == [method] * stages.count(sr.Stage.LONG_CONTEXT), (scenario.name, lc.calls)


def _check_models(result: sr.RouteResult) -> None:
    models = [(s.stage, s.model) for s in result.steps]
    expected = {sr.Stage.RAG: RAG_MODEL, sr.Stage.LONG_CONTEXT: LC_MODEL}
    assert all(model == expected[stage] for stage, model in models), models


@pytest.mark.parametrize("chat_model", [True, False], ids=["chat", "completion"])
@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
def test_query(scenario: Scenario, chat_model: bool) -> None:
    engine, _, rag, lc = _engine(scenario, chat_model=chat_model)
    response = engine.query(scenario.question)
    assert isinstance(response, Response)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    # people read the answer, or "Not found in the documents." (the model's words stay in the
    # metadata); every call style gives this same text
    assert response.response == str(response) == shown_answer(result)
    assert response.metadata["selfroute"]["answer"] == result.answer
    assert response.metadata["selfroute"]["route"] == scenario.route.value
    # the right model got the right prompt, through the API matching the model type
    _check_calls(scenario, rag, lc, "chat" if chat_model else "complete")
    assert response.metadata["selfroute"]["abstained"] is result.abstained
    if lc.prompts:
        assert scenario.document.strip() in lc.prompts[0]


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
async def test_aquery(scenario: Scenario) -> None:
    engine, retriever, rag, lc = _engine(scenario)
    response = await engine.aquery(scenario.question)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    assert retriever.calls == ["aretrieve"]
    _check_calls(scenario, rag, lc, "achat")


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
def test_stream(scenario: Scenario) -> None:
    engine, _, rag, lc = _engine(scenario, streaming=True)
    response = engine.query(scenario.question)
    assert isinstance(response, StreamingResponse)
    # the retrieval ran before the first token: sources are known up front
    shown = list(scenario.passages[: engine.config.k])
    assert [n.node.get_content() for n in response.source_nodes] == shown
    streamed = "".join(response.response_gen)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    assert streamed == shown_answer(result), (streamed, result.answer)
    _check_calls(scenario, rag, lc, "stream_chat")


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=IDS)
async def test_astream(scenario: Scenario) -> None:
    engine, retriever, rag, lc = _engine(scenario, streaming=True)
    response = await engine.aquery(scenario.question)
    assert isinstance(response, AsyncStreamingResponse)
    streamed = "".join([t async for t in response.async_response_gen()])
    result = get_route_result(response)
    check(result, scenario, engine.config)
    assert streamed == shown_answer(result), (streamed, result.answer)
    assert retriever.calls == ["aretrieve"]
    _check_calls(scenario, rag, lc, "astream_chat")


@pytest.mark.parametrize("style", ["raw", "kwargs"])
def test_usage_reported_either_way(style: str) -> None:
    scenario = SCENARIOS[2]  # sentinel: both stages run
    retriever, rag, lc = scenario_parts(scenario, usage_style=style)
    engine = SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document)
    check(get_route_result(engine.query(scenario.question)), scenario, engine.config)
