"""SelfRoute over real Chroma stores (embedded PersistentClient, ``chroma run`` server) with the
real ChatOpenAI client: parents rebuilt from the store, tenant filters honoured end to end."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import chromadb
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from langchain_selfroute import ChromaParentLoader, HashingEmbeddings, SelfRoute
from selfroute import Route
from tests.integration.langchain_selfroute.helpers import (
    Provider,
    prompts_sent,
    scripted,
    stage_of,
)
from tests.unit.langchain_selfroute.fakes import ScriptedChatModel

pytestmark = pytest.mark.integration

EMBED = HashingEmbeddings(dim=256)


def filler(label: str, n: int) -> str:
    return " ".join(f"{label}{i}" for i in range(n))


def tenant_docs() -> list[Document]:
    return [
        Document(
            page_content=f"{filler('acme', 500)} Acme ships the satellite on May 3. "
            "Every launch follows the shared safety checklist.",
            metadata={"tenant": "acme", "source": "acme/plan.txt"},
        ),
        Document(
            page_content=f"{filler('globex', 500)} Globex ships the satellite on June 9. "
            "Every launch follows the shared safety checklist.",
            metadata={"tenant": "globex", "source": "globex/plan.txt"},
        ),
    ]


def assert_only_acme(provider: Provider) -> None:
    prompts = prompts_sent(provider.server)
    assert any(stage_of(p) == "long_context" for p in prompts)
    for prompt in prompts:
        assert "globex0" not in prompt and "June 9" not in prompt
    assert all("acme0" in p for p in prompts if stage_of(p) == "long_context")


def test_tenant_filter_with_a_persisted_store(tmp_path: Path, openai: Provider) -> None:
    openai.script(scripted("unanswerable", "May 3."))
    SelfRoute.from_documents(
        tenant_docs(),
        llm=openai.llm(),
        embedding=EMBED,
        persist_directory=str(tmp_path),
        collection_name="plans",
    )
    # a new process would reopen the store like this
    reopened = Chroma(
        collection_name="plans", embedding_function=EMBED, persist_directory=str(tmp_path)
    )
    route = SelfRoute.from_vectorstore(
        reopened, llm=openai.llm(), search_kwargs={"filter": {"tenant": "acme"}}
    )
    assert isinstance(route.parent_loader, ChromaParentLoader)
    for question in ("When does Globex ship the satellite?", "What does every launch follow?"):
        out = route.invoke(question)
        assert out.route is Route.LONG_CONTEXT and out.answer == "May 3."
        assert {d.metadata["tenant"] for d in out.sources} == {"acme"}
        assert out.long_context_tokens == 1500  # provider-reported LC input
    assert_only_acme(openai)


async def test_tenant_filter_async_and_streaming(tmp_path: Path, openai: Provider) -> None:
    openai.script(scripted("Unanswerable.", "May 3."))
    route = SelfRoute.from_documents(
        tenant_docs(),
        llm=openai.llm(),
        embedding=EMBED,
        persist_directory=str(tmp_path),
        search_kwargs={"filter": {"tenant": "acme"}},
    )
    out = await route.ainvoke("When does Globex ship the satellite?")
    assert out.answer == "May 3."
    chunks = [c async for c in route.astream("When does Globex ship?")]
    assert "".join(c.text for c in chunks) == "May 3."
    assert_only_acme(openai)


def test_rag_route_prices_the_parents_as_counterfactual(tmp_path: Path, openai: Provider) -> None:
    openai.script(scripted("May 3."))
    route = SelfRoute.from_documents(
        tenant_docs(), llm=openai.llm(), embedding=EMBED, persist_directory=str(tmp_path)
    )
    out = route.invoke("When does Acme ship the satellite?")
    assert out.route is Route.RAG and openai.server.calls == 1
    assert out.long_context_tokens is not None and out.long_context_tokens > 500
    assert out.token_ratio is not None and out.token_ratio < 1


def test_against_a_chroma_server(chroma_server: Any, openai: Provider) -> None:
    openai.script(scripted("unanswerable", "June 9."))
    client = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
    name = f"lc-{uuid.uuid4().hex[:8]}"
    route = SelfRoute.from_documents(
        tenant_docs(),
        llm=openai.llm(),
        embedding=EMBED,
        client=client,
        collection_name=name,
        search_kwargs={"filter": {"tenant": "globex"}},
    )
    out = route.invoke("When does Globex ship the satellite?")
    assert out.answer == "June 9." and out.context is not None and out.context["documents"] == 1
    lc = [p for p in prompts_sent(openai.server) if stage_of(p) == "long_context"]
    assert "globex0" in lc[0] and "acme0" not in lc[0]
    client.delete_collection(name)


def store_retriever(k: int = 4) -> BaseRetriever:
    """The retriever ``SelfRoute.from_texts`` builds (chunk metadata, in-memory Chroma)."""
    texts = [f"Document {i} is about {topic}." for i, topic in enumerate(["cats", "dogs", "owls"])]
    route = SelfRoute.from_texts(
        texts * 2,
        metadatas=[{"copy": n} for n in range(6)],
        llm=ScriptedChatModel(),
        embedding=EMBED,
        k=k,
    )
    assert route.retriever is not None
    return route.retriever  # type: ignore[return-value]


class TestSelfRouteStoreRetriever(RetrieversIntegrationTests):
    """LangChain's standard retriever suite on the retriever ``from_texts`` builds."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return store_retriever  # type: ignore[return-value]

    @property
    def retriever_query_example(self) -> str:
        return "Which document is about owls?"

    def test_chunks_carry_parent_metadata(self, retriever: BaseRetriever) -> None:
        (doc, *_) = retriever.invoke("owls")
        assert {"doc_id", "chunk_index", "chunk_count", "start", "end", "copy"} <= set(doc.metadata)
