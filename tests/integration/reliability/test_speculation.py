"""Speculative long context with real clients against the loopback server: the LC request is sent
alongside the RAG request; when the RAG step answers, the LC request is cancelled (its connection
dropped, nothing left in flight) and reported as wasted; when the RAG step declines, the running
LC call is the answer and nothing is sent twice."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._chat import is_rag
from tests.integration.reliability.test_cancellation import other_tasks, wait_until
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.unit.reliability._fakes import DOCUMENT

lcs = pytest.importorskip("langchain_selfroute")
lis = pytest.importorskip("llamaindex_selfroute")
from llama_index.core import Document, VectorStoreIndex  # noqa: E402

QUESTION = "How long did Mara Holt keep the lamp?"


def script(server: ScriptedOpenAIServer, rag_reply: str, gate: Any) -> None:
    import threading

    lc_arrived = threading.Event()

    def responder(body: dict[str, Any]) -> Reply | str:
        if is_rag(last_user_text(body)):
            lc_arrived.wait(10)  # answer only once the speculative LC request is in flight
            return rag_reply
        lc_arrived.set()
        gate.wait(10)  # the LC call stays in flight until released (or the client drops it)
        return "In 1901."

    server.responder = responder


def langchain_route(server: ScriptedOpenAIServer) -> Any:
    return lcs.SelfRoute(llm=chat_openai(server), document=DOCUMENT, speculate_below=1e9)


def llamaindex_engine(server: ScriptedOpenAIServer) -> Any:
    index = VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="doc-1")],
        embed_model=lis.HashingEmbedding(),
        transformations=[lis.WordChunkNodeParser()],
    )
    return lis.SelfRouteQueryEngine.from_index(
        index, llm=llamaindex_openai(server), speculate_below=1e9
    )


async def _run(adapter: str, server: ScriptedOpenAIServer) -> sr.RouteResult:
    if adapter == "langchain":
        return (await langchain_route(server).ainvoke(QUESTION)).result
    return lis.get_route_result(await llamaindex_engine(server).aquery(QUESTION))


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex"])
async def test_rag_answer_cancels_the_speculative_call(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    import threading

    gate = threading.Event()
    script(openai_server, "Thirty-one years.", gate)
    try:
        result = await _run(adapter, openai_server)
    finally:
        gate.set()
    # it returned while the LC reply was still held back: the speculative call was not awaited
    assert result.route is sr.Route.RAG and result.answer == "Thirty-one years."
    assert openai_server.calls == 2  # RAG and the speculative LC request were both sent
    (wasted,) = [s for s in result.steps if s.wasted]
    assert wasted.stage is sr.Stage.LONG_CONTEXT and wasted.usage.is_estimate
    # always-LC is the wasted call's local count in the provider's tokens (issue 17)
    from selfroute._flow._counterfactual import provider_ratio

    ratio = provider_ratio(result.steps)
    scale = ratio if result.long_context_tokens_source == "provider_scaled" else 1.0
    assert ratio is not None and result.long_context_tokens == round(
        wasted.usage.input_tokens * scale
    )
    assert sr.RouteStats([result]).summary()["wasted_usage"]["input_tokens"] > 0
    # the speculative task was cancelled, not left running; the server ends the held request
    await wait_until(lambda: other_tasks() == set())  # cancellation may take a few loop turns
    await wait_until(lambda: openai_server.in_flight == 0)


@pytest.mark.parametrize("adapter", ["langchain", "llamaindex"])
async def test_rag_decline_uses_the_running_call(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    import threading

    gate = threading.Event()
    script(openai_server, "unanswerable", gate)

    async def release_when_both_sent() -> None:
        await wait_until(lambda: openai_server.calls == 2)
        gate.set()

    releaser = asyncio.create_task(release_when_both_sent())
    result = await _run(adapter, openai_server)
    await releaser
    assert result.route is sr.Route.LONG_CONTEXT and result.answer == "In 1901."
    assert openai_server.calls == 2  # the LC call was not sent a second time
    assert not any(s.wasted for s in result.steps)
    assert [s.stage for s in result.steps] == [sr.Stage.RAG, sr.Stage.LONG_CONTEXT]
    assert result.steps[-1].usage.source == "provider"
