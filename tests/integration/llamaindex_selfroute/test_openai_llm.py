"""SelfRouteQueryEngine with the real LlamaIndex ``OpenAI`` LLM against the loopback server."""

from __future__ import annotations

import json

import pytest
from llama_index.core import Document, VectorStoreIndex

import selfroute as sr
from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    get_route_result,
)
from tests.conformance.scenarios import DOCUMENT
from tests.support._loopback import last_user_text
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply

pytestmark = pytest.mark.integration

ANSWERABLE = "How long did Mara Holt keep the lamp?"
UNANSWERABLE = "When was Mara Holt born?"
RAG_MARK = "retrieved from a longer document"  # only the RAG prompts say this


def responder(body: dict) -> Reply:
    """A cheap model that answers from chunks only about the lamp; an LC model that knows more."""
    prompt = last_user_text(body)
    if RAG_MARK in prompt:
        if "keep the lamp" in prompt:
            return Reply(
                "Thirty-one years.",
                prompt_tokens=210,
                completion_tokens=4,
                model="gpt-4o-mini-2024-07-18",
            )
        return Reply(
            "unanswerable", prompt_tokens=205, completion_tokens=1, model="gpt-4o-mini-2024-07-18"
        )
    return Reply(
        "She was born in 1901.", prompt_tokens=1400, completion_tokens=6, model="gpt-4o-2024-08-06"
    )


@pytest.fixture
def engine_parts(openai_server):
    openai_server.responder = responder
    index = VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="grey-point")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=40)],
    )
    cheap = llamaindex_openai(openai_server, model="gpt-4o-mini")
    strong = llamaindex_openai(openai_server, model="gpt-4o")
    return index, cheap, strong


def _requests(server) -> list[tuple[str, str]]:
    return [(r["model"], last_user_text(r)) for r in server.requests]


def _assert_provider_usage(result: sr.RouteResult, expected: list[tuple[int, int]]) -> None:
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in result.steps] == expected
    assert all(s.usage.source == "provider" for s in result.steps)


def test_query_rag_route(openai_server, engine_parts) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong)
    response = engine.query(ANSWERABLE)
    result = get_route_result(response)
    assert (result.route, result.answer) == (sr.Route.RAG, "Thirty-one years.")
    _assert_provider_usage(result, [(210, 4)])
    assert result.steps[0].model == "gpt-4o-mini-2024-07-18"
    # one call, to the cheap model, with the retrieved chunks; the LC call was only priced
    assert [m for m, _ in _requests(openai_server)] == ["gpt-4o-mini"]
    assert result.long_context_tokens and result.token_ratio < 1
    assert response.source_nodes and response.source_nodes[0].node.ref_doc_id == "grey-point"
    json.dumps(response.metadata["selfroute"])


def test_query_long_context_route(openai_server, engine_parts) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong)
    result = get_route_result(engine.query(UNANSWERABLE))
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "She was born in 1901.",
    )
    _assert_provider_usage(result, [(205, 1), (1400, 6)])
    assert [s.model for s in result.steps] == ["gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06"]
    (m1, rag_prompt), (m2, lc_prompt) = _requests(openai_server)
    assert (m1, m2) == ("gpt-4o-mini", "gpt-4o")
    assert RAG_MARK in rag_prompt and RAG_MARK not in lc_prompt
    assert DOCUMENT.strip() in lc_prompt  # the whole document, rebuilt from the docstore
    assert result.long_context_tokens == 1400  # provider-reported when the LC call ran
    assert result.token_ratio == pytest.approx((205 + 1400) / 1400)


async def test_aquery_both_routes(openai_server, engine_parts) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong)
    rag = get_route_result(await engine.aquery(ANSWERABLE))
    lc = get_route_result(await engine.aquery(UNANSWERABLE))
    assert (rag.route, lc.route) == (sr.Route.RAG, sr.Route.LONG_CONTEXT)
    _assert_provider_usage(lc, [(205, 1), (1400, 6)])


def test_streaming_both_routes(openai_server, engine_parts) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong, streaming=True)
    response = engine.query(UNANSWERABLE)
    assert response.source_nodes
    assert "".join(response.response_gen) == "She was born in 1901."
    result = get_route_result(response)
    assert result.route is sr.Route.LONG_CONTEXT
    _assert_provider_usage(result, [(205, 1), (1400, 6)])  # from the final usage chunks
    assert all(r["stream"] is True for r in openai_server.requests)
    assert all(r["stream_options"] == {"include_usage": True} for r in openai_server.requests)
    response = engine.query(ANSWERABLE)
    assert str(response) == "Thirty-one years."
    _assert_provider_usage(get_route_result(response), [(210, 4)])


async def test_async_streaming(openai_server, engine_parts) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong, streaming=True)
    response = await engine.aquery(UNANSWERABLE)
    tokens = [t async for t in response.async_response_gen()]
    assert len(tokens) > 1 and "".join(tokens) == "She was born in 1901."
    _assert_provider_usage(get_route_result(response), [(205, 1), (1400, 6)])


def test_streaming_without_usage_is_estimated(openai_server, engine_parts) -> None:
    index, _, _ = engine_parts
    # no stream_options: the server sends no usage chunk, the core estimates and labels it
    llm = llamaindex_openai(openai_server, additional_kwargs={})
    engine = SelfRouteQueryEngine.from_index(index, llm, streaming=True)
    response = engine.query(UNANSWERABLE)
    "".join(response.response_gen)
    result = get_route_result(response)
    assert [s.usage.source for s in result.steps] == ["tokenizer", "tokenizer"]


def test_rag_provider_error_escalates_and_lc_error_keeps_partial(
    openai_server, engine_parts
) -> None:
    index, cheap, strong = engine_parts
    engine = SelfRouteQueryEngine.from_index(index, cheap, strong)

    def rag_down(body: dict) -> Reply:
        if RAG_MARK in last_user_text(body):
            return Reply("overloaded", status=503)
        return responder(body)

    openai_server.responder = rag_down
    result = get_route_result(engine.query(ANSWERABLE))
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.RAG_ERROR)
    assert result.steps[0].usage.source == "none" and result.steps[1].usage.input_tokens == 1400

    def lc_down(body: dict) -> Reply:
        if RAG_MARK in last_user_text(body):
            return responder(body)
        return Reply("boom", status=500)

    openai_server.responder = lc_down
    with pytest.raises(sr.LongContextError) as err:
        engine.query(UNANSWERABLE)
    assert err.value.partial.stage_usage("rag").input_tokens == 205
