"""Any vector store for parents, stale chunks replaced, the retriever's own k, and the ledger
priced with the long-context model a call's config selects (real ChatOpenAI, loopback)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import ConfigurableField
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore

from langchain_selfroute import (
    HashingEmbeddings,
    SelfRoute,
    StoreParentLoader,
    index_documents,
)
from selfroute import ConfigurationError, PriceTable, Route, Usage
from tests.integration.composition._shared import (
    DECLINE_Q,
    LC_ANSWER,
    RAG_Q,
    manual_documents,
    respond,
)
from tests.support._loopback import Reply
from tests.support.clients import chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

PRICES = PriceTable({"gpt-4o-mini": (0.15, 0.60), "gpt-4.1": (2.00, 8.00)})


def echo_model(body: dict[str, Any]) -> Reply:
    """The scripted model, reporting the requested model name (as a real provider does)."""
    reply = respond(body)
    return Reply(reply, model=None) if isinstance(reply, str) else reply


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(echo_model) as srv:
        yield srv


@pytest.fixture
def store() -> InMemoryVectorStore:
    memory = InMemoryVectorStore(HashingEmbeddings())
    index_documents(memory, manual_documents())
    return memory


class _NoIdsStore(VectorStore):
    """A vector store without get_by_ids (the base class raises NotImplementedError)."""

    def __init__(self, embedding: Embeddings) -> None:
        self.inner = InMemoryVectorStore(embedding)

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, **kw: Any
    ) -> list[str]:
        return self.inner.add_texts(texts, metadatas, **kw)

    def similarity_search(self, query: str, k: int = 4, **kw: Any) -> list[Document]:
        return self.inner.similarity_search(query, k, **kw)

    @classmethod
    def from_texts(  # type: ignore[override]
        cls, texts: list[str], embedding: Embeddings, **kw: Any
    ) -> _NoIdsStore:
        store = cls(embedding)
        store.add_texts(texts)
        return store


def test_parents_come_from_any_store_with_get_by_ids(
    server: ScriptedOpenAIServer, store: InMemoryVectorStore
) -> None:
    route = SelfRoute.from_vectorstore(store, llm=chat_openai(server), k=2)
    assert isinstance(route.parent_loader, StoreParentLoader)
    out = route.invoke(DECLINE_Q)
    assert out.route is Route.LONG_CONTEXT and out.answer == LC_ANSWER
    parents = {d.metadata["doc_id"]: d for d in manual_documents()}
    long_prompt = server.requests[-1]["messages"][-1]["content"]
    for source in out.sources:  # the whole parent of every retrieved chunk was sent
        assert parents[source.metadata["doc_id"]].page_content in long_prompt


def test_a_store_without_get_by_ids_is_refused_when_built(server: ScriptedOpenAIServer) -> None:
    store = _NoIdsStore(HashingEmbeddings())
    with pytest.raises(ConfigurationError, match="does not implement get_by_ids"):
        SelfRoute.from_vectorstore(store, llm=chat_openai(server))
    # with a long context of its own it is fine
    route = SelfRoute.from_vectorstore(
        store, llm=chat_openai(server), document=manual_documents()[0]
    )
    assert route.parent_loader is None


def test_reindexing_replaces_stale_chunks(store: InMemoryVectorStore) -> None:
    before = len(store.store)
    old = manual_documents()[0]
    shorter = Document(page_content="The Zephyr charger needs 24 volts now.", metadata=old.metadata)
    index_documents(store, [shorter])
    assert store.get_by_ids(["zephyr:1", "zephyr:2", "zephyr:3"]) == []
    (first,) = store.get_by_ids(["zephyr:0"])
    assert first.page_content == shorter.page_content and first.metadata["chunk_count"] == 1
    assert len(store.store) < before
    loader = StoreParentLoader(store)
    (parent,) = loader([first])
    assert parent.page_content == shorter.page_content


def test_the_retrievers_own_k_holds_unless_k_is_given(
    server: ScriptedOpenAIServer, store: InMemoryVectorStore
) -> None:
    retriever = store.as_retriever(search_kwargs={"k": 2})
    own = SelfRoute(retriever=retriever, llm=chat_openai(server), document=manual_documents()[0])
    assert len(own.invoke(RAG_Q).sources) == 2 and own.config.k == 2
    given = SelfRoute(
        retriever=retriever, llm=chat_openai(server), document=manual_documents()[0], k=3
    )
    assert len(given.invoke(RAG_Q).sources) == 3
    via_store = SelfRoute.from_vectorstore(store, llm=chat_openai(server), search_kwargs={"k": 1})
    assert len(via_store.invoke(RAG_Q).sources) == 1


@pytest.mark.parametrize("question", [RAG_Q, DECLINE_Q], ids=["rag", "declined"])
def test_counterfactual_priced_with_the_configured_long_context_model(
    server: ScriptedOpenAIServer, store: InMemoryVectorStore, question: str
) -> None:
    strong = chat_openai(server, model="gpt-4o-mini").configurable_fields(
        model_name=ConfigurableField(id="lc_model")
    )
    route = SelfRoute.from_vectorstore(
        store, llm=chat_openai(server), long_context_llm=strong, prices=PRICES, k=2
    )
    out = route.invoke(question, {"configurable": {"lc_model": "gpt-4.1"}})
    assert out.long_context_tokens
    last = out.steps[-1]
    expected = PRICES.cost("gpt-4.1", Usage.of(out.long_context_tokens, last.usage.output_tokens))
    assert out.long_context_cost == pytest.approx(expected)
    if question == DECLINE_Q:  # it ran: the model the provider reported is the one priced
        assert last.model == "gpt-4.1"
        assert out.cost == pytest.approx(sum(PRICES.cost(s.model, s.usage) or 0 for s in out.steps))
    default = route.invoke(question)  # without the config: the constructed model
    assert default.long_context_cost == pytest.approx(
        PRICES.cost(
            "gpt-4o-mini",
            Usage.of(default.long_context_tokens or 0, default.steps[-1].usage.output_tokens),
        )
    )
