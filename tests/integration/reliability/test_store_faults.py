"""A vector store that goes down (a real ``chroma run`` server, stopped mid-session): escalate to
long context when a document exists, else a clear ``RetrievalError``; never hang."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._chat import is_rag
from tests.integration.reliability._servers import NoDelayOpenAIServer
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support._loopback import last_user_text
from tests.support.chroma_server import ChromaServer, free_port
from tests.support.clients import chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

chromadb = pytest.importorskip("chromadb")
lcs = pytest.importorskip("langchain_selfroute")
from langchain_core.documents import Document  # noqa: E402

pytestmark = pytest.mark.timeout(120)
BOUND_S = 30.0  # a dead store must fail well within this


class DeadStore:
    """Routes over a Chroma collection whose server has been stopped, and their model server."""

    def __init__(self, model: ScriptedOpenAIServer, routes: dict[str, Any]) -> None:
        self.model = model
        self.routes = routes


@pytest.fixture(scope="module")
def dead_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeadStore]:
    """One real ``chroma run`` server, indexed, then stopped; three routes over it: with a fixed
    document to fall back to, with the store as the only long context, and raising."""
    model = NoDelayOpenAIServer(
        lambda body: "unanswerable" if is_rag(last_user_text(body)) else "Northern."
    )
    with model:
        server = ChromaServer(tmp_path_factory.mktemp("chroma-down"))
        server.start()
        try:
            client = chromadb.HttpClient(host=server.host, port=server.port)
            docs = [
                Document(page_content=text, metadata={"doc_id": did})
                for did, text in TENANT_DOCS["acme"]
            ]
            common = {
                "llm": chat_openai(model),
                "embedding": lcs.HashingEmbeddings(),
                "client": client,
                "collection_name": f"down-{uuid.uuid4().hex[:8]}",
            }
            document = TENANT_DOCS["acme"][0][1]
            first = lcs.SelfRoute.from_documents(docs, document=document, **common)
            store = first.retriever.vectorstore
            llm = common["llm"]
            routes = {
                "with_doc": first,
                "parents_only": lcs.SelfRoute.from_vectorstore(
                    store, llm=llm, long_context="parents"
                ),
                "raise": lcs.SelfRoute.from_vectorstore(
                    store, llm=llm, document=document, on_retrieval_error="raise"
                ),
            }
            assert routes["with_doc"].invoke("Which region grew?").answer  # works while up
        finally:
            server.stop()
        yield DeadStore(model, routes)


@pytest.fixture
def dead(dead_store: DeadStore) -> DeadStore:
    dead_store.model.reset()
    return dead_store


def test_store_down_escalates_to_the_document(dead: DeadStore) -> None:
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


async def test_store_down_async_escalates_within_bound(dead: DeadStore) -> None:
    out = await asyncio.wait_for(dead.routes["with_doc"].ainvoke("Which region grew?"), BOUND_S)
    assert out.reason is sr.Reason.RETRIEVAL_ERROR


def test_store_down_without_document_is_a_retrieval_error(dead: DeadStore) -> None:
    started = time.monotonic()
    with pytest.raises(sr.RetrievalError, match="no long context is available"):
        dead.routes["parents_only"].invoke("Which region grew?")
    assert time.monotonic() - started < BOUND_S
    assert dead.model.calls == 0


def test_store_down_raises_when_configured(dead: DeadStore) -> None:
    with pytest.raises(sr.RetrievalError, match="retrieval failed"):
        dead.routes["raise"].invoke("Which region grew?")
    assert dead.model.calls == 0


def test_client_to_a_closed_port_fails_fast_and_clearly() -> None:
    started = time.monotonic()
    with pytest.raises(Exception, match="Could not connect to a Chroma server"):
        chromadb.HttpClient(host="127.0.0.1", port=free_port())
    assert time.monotonic() - started < BOUND_S
