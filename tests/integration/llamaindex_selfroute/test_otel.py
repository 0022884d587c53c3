"""OpenTelemetry spans of ``SelfRouteQueryEngine`` with the real LlamaIndex ``OpenAI`` LLM on
loopback: ``query``, ``aquery``, streaming and async streaming, both routes and a failure."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

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
from tests.integration.llamaindex_selfroute.test_openai_llm import (
    ANSWERABLE,
    RAG_MARK,
    UNANSWERABLE,
    responder,
)
from tests.support._loopback import last_user_text
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply
from tests.support.spans import SpanRecorder

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.trace import StatusCode

pytestmark = pytest.mark.integration

LC_ROUTE = [
    "selfroute.retrieve",
    "selfroute.rag",
    "selfroute.load_long_context",
    "selfroute.long_context",
]


@pytest.fixture
def make_engine(openai_server: Any) -> Any:
    openai_server.responder = responder
    index = VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="grey-point")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=40)],
    )
    cheap = llamaindex_openai(openai_server, model="gpt-4o-mini")
    strong = llamaindex_openai(openai_server, model="gpt-4o")

    def make(tracing: Any, **kw: Any) -> SelfRouteQueryEngine:
        return SelfRouteQueryEngine.from_index(index, cheap, strong, tracing=tracing, **kw)

    return make


def check_lc_routed(recorder: SpanRecorder) -> None:
    root = recorder.root()
    assert [n for n, _ in recorder.shape(root)] == LC_ROUTE
    a = root.attributes
    assert (a["selfroute.route"], a["selfroute.reason"]) == ("long_context", "declined")
    assert a["output.value"] == "She was born in 1901."
    assert a["selfroute.tokens.total"] == 205 + 1 + 1400 + 6
    rag = recorder.child(root, "selfroute.rag").attributes
    assert rag["llm.model_name"] == "gpt-4o-mini-2024-07-18"
    assert rag["selfroute.verdict"] == "sentinel" and rag["llm.token_count.prompt"] == 205
    lc = recorder.child(root, "selfroute.long_context").attributes
    assert lc["llm.model_name"] == "gpt-4o-2024-08-06"
    assert (lc["llm.token_count.prompt"], lc["llm.token_count.completion"]) == (1400, 6)
    docs = recorder.child(root, "selfroute.retrieve").attributes
    assert docs["openinference.span.kind"] == "RETRIEVER"
    assert isinstance(docs["retrieval.documents.0.document.score"], float)
    assert "retrieval.documents.0.document.content" in docs


def check_rag_routed(recorder: SpanRecorder) -> None:
    root = recorder.root()
    a = root.attributes
    assert (a["selfroute.route"], a["selfroute.verdict"]) == ("rag", "answered")
    assert a["output.value"] == "Thirty-one years." and a["selfroute.always_lc_tokens"] > 0
    rag = recorder.child(root, "selfroute.rag").attributes
    assert (rag["llm.token_count.prompt"], rag["llm.token_count.completion"]) == (210, 4)


def test_query_both_routes(make_engine: Any, recorder: SpanRecorder) -> None:
    engine = make_engine(recorder.provider)
    assert str(engine.query(UNANSWERABLE)) == "She was born in 1901."
    check_lc_routed(recorder)
    recorder.clear()
    assert str(engine.query(ANSWERABLE)) == "Thirty-one years."
    check_rag_routed(recorder)


async def test_aquery(make_engine: Any, recorder: SpanRecorder) -> None:
    engine = make_engine(recorder.provider)
    assert get_route_result(await engine.aquery(UNANSWERABLE)).route is sr.Route.LONG_CONTEXT
    check_lc_routed(recorder)


def test_streaming_consumed_in_another_thread(make_engine: Any, recorder: SpanRecorder) -> None:
    """The stream is read where the application reads it: the spans still close in order."""
    engine = make_engine(recorder.provider, streaming=True)
    response = engine.query(UNANSWERABLE)
    with ThreadPoolExecutor(1) as pool:
        text = pool.submit(lambda: "".join(response.response_gen)).result()
    assert text == "She was born in 1901."
    check_lc_routed(recorder)


async def test_async_streaming(make_engine: Any, recorder: SpanRecorder) -> None:
    engine = make_engine(recorder.provider, streaming=True)
    response = await engine.aquery(UNANSWERABLE)
    assert "".join([t async for t in response.async_response_gen()]) == "She was born in 1901."
    check_lc_routed(recorder)


def test_long_context_failure_is_recorded(
    openai_server: Any, make_engine: Any, recorder: SpanRecorder
) -> None:
    engine = make_engine(recorder.provider)

    def lc_down(body: dict[str, Any]) -> Reply:
        if RAG_MARK in last_user_text(body):
            return responder(body)
        return Reply("boom", status=500)

    openai_server.responder = lc_down
    with pytest.raises(sr.LongContextError):
        engine.query(UNANSWERABLE)
    root = recorder.root()
    assert root.status.status_code is StatusCode.ERROR
    assert [e.name for e in root.events] == ["exception"]
    lc = recorder.child(root, "selfroute.long_context")
    assert lc.status.status_code is StatusCode.ERROR and lc.events[0].name == "exception"


def test_nothing_is_emitted_when_tracing_is_off(
    make_engine: Any, global_provider: SpanRecorder
) -> None:
    engine = make_engine(False)
    engine.query(ANSWERABLE)
    "".join(make_engine(False, streaming=True).query(UNANSWERABLE).response_gen)
    assert global_provider.spans() == []
