"""The shared conformance scenarios through SelfRouteQueryEngine: query, aquery and streaming.

Routes, reasons, answers, per-step usage, the counterfactual and the token ratio must be exactly
those of the framework-free core (and so of the LangChain adapter) on the same script.
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
from tests.conformance.scenarios import LC_MODEL, RAG_MODEL, SCENARIOS, Scenario, check
from tests.unit.llamaindex_selfroute._scripted import scenario_parts

IDS = [s.name for s in SCENARIOS]


def _engine(scenario: Scenario, *, streaming: bool = False, chat_model: bool = True):
    retriever, rag, lc = scenario_parts(scenario, chat_model=chat_model)
    engine = SelfRouteQueryEngine(
        retriever, rag, lc, long_context=scenario.document, streaming=streaming
    )
    return engine, retriever, rag, lc


def _check_models(result: sr.RouteResult) -> None:
    models = [(s.stage, s.model) for s in result.steps]
    expected = {sr.Stage.RAG: RAG_MODEL, sr.Stage.LONG_CONTEXT: LC_MODEL}
    assert all(model == expected[stage] for stage, model in models), models


@pytest.mark.parametrize("chat_model", [True, False], ids=["chat", "completion"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_query(scenario: Scenario, chat_model: bool) -> None:
    engine, _, rag, lc = _engine(scenario, chat_model=chat_model)
    response = engine.query(scenario.question)
    assert isinstance(response, Response)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    assert response.response == result.answer
    assert response.metadata["selfroute"]["route"] == scenario.route.value
    # the right model got the right prompt, through the API matching the model type
    method = "chat" if chat_model else "complete"
    assert rag.calls == ([] if scenario.reason is sr.Reason.NO_CHUNKS else [method])
    assert lc.calls == ([method] if scenario.route is sr.Route.LONG_CONTEXT else [])
    if lc.prompts:
        assert scenario.document.strip() in lc.prompts[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
async def test_aquery(scenario: Scenario) -> None:
    engine, retriever, rag, lc = _engine(scenario)
    response = await engine.aquery(scenario.question)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    assert retriever.calls == ["aretrieve"]
    assert set(rag.calls + lc.calls) <= {"achat"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_stream(scenario: Scenario) -> None:
    engine, _, rag, lc = _engine(scenario, streaming=True)
    response = engine.query(scenario.question)
    assert isinstance(response, StreamingResponse)
    # the retrieval ran before the first token: sources are known up front
    assert [n.node.get_content() for n in response.source_nodes] == list(scenario.passages)
    streamed = "".join(response.response_gen)
    result = get_route_result(response)
    check(result, scenario, engine.config)
    _check_models(result)
    assert streamed == result.answer
    assert set(rag.calls + lc.calls) <= {"stream_chat"}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
async def test_astream(scenario: Scenario) -> None:
    engine, retriever, rag, lc = _engine(scenario, streaming=True)
    response = await engine.aquery(scenario.question)
    assert isinstance(response, AsyncStreamingResponse)
    streamed = "".join([t async for t in response.async_response_gen()])
    result = get_route_result(response)
    check(result, scenario, engine.config)
    assert streamed == result.answer
    assert retriever.calls == ["aretrieve"]
    assert set(rag.calls + lc.calls) <= {"astream_chat"}


@pytest.mark.parametrize("style", ["raw", "kwargs"])
def test_usage_reported_either_way(style: str) -> None:
    scenario = SCENARIOS[2]  # sentinel: both stages run
    retriever, rag, lc = scenario_parts(scenario, usage_style=style)
    engine = SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document)
    check(get_route_result(engine.query(scenario.question)), scenario, engine.config)
