"""One question through either adapter, in any of its four modes, with real loopback clients.

``ask(adapter, server, question, mode, **settings)`` builds a ``langchain_selfroute.SelfRoute``
(real ``ChatOpenAI``) or a ``llamaindex_selfroute.SelfRouteQueryEngine`` (real LlamaIndex
``OpenAI``) over :data:`DOCUMENT`, asks ``question`` with ``invoke``/``ainvoke``/``stream``/
``astream`` (LlamaIndex: ``query``/``aquery``, streaming or not) and returns what the caller sees:
the :class:`~selfroute.RouteResult` and, when streaming, the text shown and whether anything shown
was retracted.
"""

from __future__ import annotations

import asyncio
import functools
import operator
from dataclasses import dataclass
from typing import Any

import pytest

import selfroute as sr
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer
from tests.unit.reliability._fakes import DOCUMENT

ADAPTERS = ("langchain", "llamaindex")
MODES = ("invoke", "ainvoke", "stream", "astream")


@dataclass(frozen=True)
class Asked:
    """What one call gave the caller.

    Attributes:
        result: The route result.
        shown: Streamed text the caller saw as the answer (after retractions); ``None`` when not
            streamed.
        retracted: Whether streamed text was taken back.
    """

    result: sr.RouteResult
    shown: str | None = None
    retracted: bool = False


def langchain_route(server: ScriptedOpenAIServer, client: dict[str, Any], **settings: Any) -> Any:
    lcs = pytest.importorskip("langchain_selfroute")
    return lcs.SelfRoute(llm=chat_openai(server, **client), document=DOCUMENT, **settings)


def llamaindex_engine(
    server: ScriptedOpenAIServer, client: dict[str, Any], streaming: bool, **settings: Any
) -> Any:
    lis = pytest.importorskip("llamaindex_selfroute")
    from llama_index.core import Document, VectorStoreIndex

    index = VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="doc-1")],
        embed_model=lis.HashingEmbedding(),
        transformations=[lis.WordChunkNodeParser()],
    )
    return lis.SelfRouteQueryEngine.from_index(
        index, llm=llamaindex_openai(server, **client), streaming=streaming, **settings
    )


def _langchain(server: ScriptedOpenAIServer, question: str, mode: str, **kw: Any) -> Asked:
    client = kw.pop("client", {})
    route = langchain_route(server, client, **kw)
    if mode == "invoke":
        return Asked(route.invoke(question).result)
    if mode == "ainvoke":
        return Asked(asyncio.run(route.ainvoke(question)).result)
    if mode == "stream":
        chunks = list(route.stream(question))
    else:

        async def collect() -> list[Any]:
            return [c async for c in route.astream(question)]

        chunks = asyncio.run(collect())
    total = functools.reduce(operator.add, chunks)
    assert total.output is not None
    return Asked(total.output.result, total.text, any(c.retracted for c in chunks))


def _llamaindex(server: ScriptedOpenAIServer, question: str, mode: str, **kw: Any) -> Asked:
    lis = pytest.importorskip("llamaindex_selfroute")
    client = kw.pop("client", {})
    streaming = mode in ("stream", "astream")
    engine = llamaindex_engine(server, client, streaming, **kw)
    if mode == "invoke":
        return Asked(lis.get_route_result(engine.query(question)))
    if mode == "ainvoke":
        return Asked(lis.get_route_result(asyncio.run(engine.aquery(question))))
    if mode == "stream":
        response = engine.query(question)
        pieces = list(response.response_gen)
    else:

        async def collect() -> tuple[Any, list[str]]:
            response = await engine.aquery(question)
            return response, [t async for t in response.async_response_gen()]

        response, pieces = asyncio.run(collect())
    retracted = bool(response.metadata.get("selfroute_retracted"))
    result = lis.get_route_result(response)
    shown = "".join(pieces)
    if retracted:  # the engine streams its retraction text ("\n\n"); the answer follows it
        shown = shown.rsplit("\n\n", 1)[-1]
    return Asked(result, shown, retracted)


def ask(adapter: str, server: ScriptedOpenAIServer, question: str, mode: str, **kw: Any) -> Asked:
    """Ask ``question`` through ``adapter`` in ``mode``; ``client=`` passes client options
    (``timeout``, ``max_retries``), other keywords go to the adapter."""
    if adapter == "langchain":
        return _langchain(server, question, mode, **kw)
    return _llamaindex(server, question, mode, **kw)
