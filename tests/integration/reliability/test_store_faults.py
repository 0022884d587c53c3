"""A vector store that goes down or hangs (a real ``chroma run`` server, stopped or frozen with
SIGSTOP mid-session): escalate to long context when a document exists, else a clear
``RetrievalError``; never hang (``retrieval_timeout_s``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import selfroute as sr
from selfroute._threads import in_thread
from tests.integration.reliability._chat import is_rag
from tests.integration.reliability._servers import NoDelayOpenAIServer
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support._loopback import last_user_text
from tests.support.chroma_server import ChromaServer, free_port
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer

chromadb = pytest.importorskip("chromadb")
lcs = pytest.importorskip("langchain_selfroute")
from langchain_core.documents import Document  # noqa: E402

pytestmark = pytest.mark.timeout(120)
BOUND_S = 30.0  # a dead store must fail well within this
TIMEOUT_S = 1.0  # retrieval_timeout_s used against the frozen store
FREEZE_MAX_S = 20.0  # the frozen server is thawed after this long no matter what
DOCUMENT = TENANT_DOCS["acme"][0][1]


class Store:
    """A real Chroma server with an indexed collection, routes over it, and their model server."""

    def __init__(self, server: ChromaServer, model: ScriptedOpenAIServer) -> None:
        self.server = server
        self.model = model
        self.routes: dict[str, Any] = {}
        self.collection: Any = None
        self.frozen = False

    @property
    def pid(self) -> int:
        proc = self.server._proc  # test-support internals: the `chroma run` process
        assert proc is not None
        return int(proc.pid)

    def freeze(self) -> None:
        if self.server._proc is None:  # stopped by an earlier test: bring it back
            self.server.start()
        os.kill(self.pid, signal.SIGSTOP)
        self.frozen = True
        # Fail-safe: never leave the server frozen, whatever happens to this test run.
        self._watchdog = threading.Timer(FREEZE_MAX_S, self.thaw)
        self._watchdog.daemon = True
        self._watchdog.start()

    def thaw(self) -> None:
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None and watchdog is not threading.current_thread():
            watchdog.cancel()
        if self.frozen:
            self.frozen = False
            with contextlib.suppress(ProcessLookupError, AssertionError):
                os.kill(self.pid, signal.SIGCONT)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    model = NoDelayOpenAIServer(
        lambda body: "unanswerable" if is_rag(last_user_text(body)) else "Northern."
    )
    server = ChromaServer(tmp_path_factory.mktemp("chroma-faults"))
    with model:
        server.start()
        state = Store(server, model)
        try:
            client = chromadb.HttpClient(host=server.host, port=server.port)
            docs = [
                Document(page_content=text, metadata={"doc_id": did})
                for did, text in TENANT_DOCS["acme"]
            ]
            llm = chat_openai(model)
            first = lcs.SelfRoute.from_documents(
                docs,
                llm=llm,
                embedding=lcs.HashingEmbeddings(),
                client=client,
                collection_name=f"faults-{uuid.uuid4().hex[:8]}",
                document=DOCUMENT,
            )
            vectorstore = first.retriever.vectorstore
            state.collection = vectorstore._collection
            state.routes = {
                "with_doc": first,
                "parents_only": lcs.SelfRoute.from_vectorstore(
                    vectorstore, llm=llm, long_context="parents"
                ),
                "raise": lcs.SelfRoute.from_vectorstore(
                    vectorstore, llm=llm, document=DOCUMENT, on_retrieval_error="raise"
                ),
            }
            assert first.invoke("Which region grew?").answer  # the store works while up
            yield state
        finally:
            state.thaw()
            server.stop()


@pytest.fixture
def dead(store: Store) -> Store:
    """The store's server is stopped (connections refused)."""
    store.thaw()
    store.server.stop()
    store.model.reset()
    return store


@pytest.fixture
def hung(store: Store) -> Iterator[Store]:
    """The store's server is frozen: it accepts connections and never answers."""
    if sys.platform == "win32":  # pragma: no cover
        pytest.skip("SIGSTOP is POSIX only")
    store.freeze()
    store.model.reset()
    try:
        yield store
    finally:
        store.thaw()


# -- a store that is down ------------------------------------------------------------------------
def test_store_down_escalates_to_the_document(dead: Store) -> None:
    started = time.monotonic()
    out = dead.routes["with_doc"].invoke("Which region grew?")
    assert time.monotonic() - started < BOUND_S
    assert (out.route, out.reason, out.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.RETRIEVAL_ERROR,
        "Northern.",
    )
    assert out.error and out.error.startswith("retrieval: ")
    assert dead.model.calls == 1  # only the LC call: no RAG call without chunks


async def test_store_down_async_escalates_within_bound(dead: Store) -> None:
    out = await asyncio.wait_for(dead.routes["with_doc"].ainvoke("Which region grew?"), BOUND_S)
    assert out.reason is sr.Reason.RETRIEVAL_ERROR


def test_store_down_without_document_is_a_retrieval_error(dead: Store) -> None:
    started = time.monotonic()
    with pytest.raises(sr.RetrievalError, match="no long context is available"):
        dead.routes["parents_only"].invoke("Which region grew?")
    assert time.monotonic() - started < BOUND_S
    assert dead.model.calls == 0


def test_store_down_raises_when_configured(dead: Store) -> None:
    with pytest.raises(sr.RetrievalError, match="retrieval failed"):
        dead.routes["raise"].invoke("Which region grew?")
    assert dead.model.calls == 0


def test_client_to_a_closed_port_fails_fast_and_clearly() -> None:
    started = time.monotonic()
    with pytest.raises(Exception, match="Could not connect to a Chroma server"):
        chromadb.HttpClient(host="127.0.0.1", port=free_port())
    assert time.monotonic() - started < BOUND_S


# -- a store that hangs ----------------------------------------------------------------------------
#: Awaits ``fn(*args)`` run in a daemon thread. Unlike ``asyncio.to_thread``, an abandoned call
#: (stuck on the frozen server) never blocks the event loop's shutdown (the library's helper).
in_daemon_thread = in_thread


def _chat_handler(store: Store, model: ScriptedOpenAIServer) -> Any:
    """A core handler querying the Chroma collection directly, answering through ``model``.

    ``model`` is a per-test server: langchain-openai caches its async HTTP client per endpoint,
    and a client made in one test's event loop cannot serve another's."""
    from tests.integration.reliability._chat import ChatHandler

    embed = lcs.HashingEmbeddings()

    def retrieve(question: str, k: int) -> list[sr.Passage]:
        got = store.collection.query(query_embeddings=[embed.embed_query(question)], n_results=k)
        return [sr.Passage(text=t) for t in got["documents"][0]]

    class Handler(ChatHandler):
        async def aretrieve(self, step: sr.flow.Retrieve) -> list[sr.Passage]:
            return list(await in_daemon_thread(retrieve, step.question, step.k))

    model.responder = store.model.responder
    return Handler(chat_openai(model), retrieve=retrieve, document=DOCUMENT)


def test_hung_store_sync_escalates_after_retrieval_timeout(
    hung: Store, openai_server: ScriptedOpenAIServer
) -> None:
    config = sr.RouteConfig(retrieval_timeout_s=TIMEOUT_S)
    started = time.monotonic()
    result = sr.flow.run_flow(
        sr.flow.self_route_flow("Which region grew?", config), _chat_handler(hung, openai_server)
    )
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert (result.reason, result.answer) == (sr.Reason.RETRIEVAL_ERROR, "Northern.")
    assert "did not answer within 1s" in (result.error or "")


async def test_hung_store_async_escalates_after_retrieval_timeout(
    hung: Store, openai_server: ScriptedOpenAIServer
) -> None:
    config = sr.RouteConfig(retrieval_timeout_s=TIMEOUT_S)
    started = time.monotonic()
    result = await sr.flow.arun_flow(
        sr.flow.self_route_flow("Which region grew?", config), _chat_handler(hung, openai_server)
    )
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert result.reason is sr.Reason.RETRIEVAL_ERROR
    assert openai_server.calls == 1


def test_hung_store_without_document_is_a_retrieval_error(
    hung: Store, openai_server: ScriptedOpenAIServer
) -> None:
    handler = _chat_handler(hung, openai_server)
    handler.document = None
    config = sr.RouteConfig(retrieval_timeout_s=TIMEOUT_S)
    with pytest.raises(sr.RetrievalError, match="did not answer within"):
        sr.flow.run_flow(sr.flow.self_route_flow("Which region grew?", config), handler)
    assert openai_server.calls == 0


def test_hung_store_llamaindex_engine_escalates(hung: Store) -> None:
    lis = pytest.importorskip("llamaindex_selfroute")
    from llama_index.core import VectorStoreIndex
    from llama_index.vector_stores.chroma import ChromaVectorStore

    index = VectorStoreIndex.from_vector_store(
        ChromaVectorStore(chroma_collection=hung.collection), embed_model=lis.HashingEmbedding()
    )
    engine = lis.SelfRouteQueryEngine.from_index(
        index,
        llm=llamaindex_openai(hung.model),
        long_context=DOCUMENT,
        retrieval_timeout_s=TIMEOUT_S,
    )
    started = time.monotonic()
    result = lis.get_route_result(engine.query("Which region grew?"))
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert (result.reason, result.answer) == (sr.Reason.RETRIEVAL_ERROR, "Northern.")


def test_hung_store_langchain_selfroute_escalates(hung: Store) -> None:
    """Sync only: LangChain runs a sync retriever's async path in the default executor, whose
    shutdown would wait for the abandoned call."""
    route = lcs.SelfRoute.from_vectorstore(
        hung.routes["with_doc"].retriever.vectorstore,
        llm=chat_openai(hung.model),
        document=DOCUMENT,
        retrieval_timeout_s=TIMEOUT_S,
    )
    started = time.monotonic()
    out = route.invoke("Which region grew?")
    assert time.monotonic() - started < TIMEOUT_S + 5
    assert (out.reason, out.answer) == (sr.Reason.RETRIEVAL_ERROR, "Northern.")
