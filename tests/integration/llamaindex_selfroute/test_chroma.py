"""from_documents on Chroma: persisted to disk and reopened, tenant filters, a real chroma server."""

from __future__ import annotations

import math
import uuid
from typing import Any

import chromadb
import pytest
from llama_index.core import Document
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters
from llama_index.vector_stores.chroma import ChromaVectorStore

import selfroute as sr
from llamaindex_selfroute import HashingEmbedding, SelfRouteQueryEngine, get_route_result
from tests.conformance.scenarios import DOCUMENT
from tests.unit.llamaindex_selfroute._scripted import ScriptedLLM

pytestmark = pytest.mark.integration

LONG_A = " ".join(f"Grey Point log entry {i}: the keeper trimmed the wick." for i in range(120))
TENANT_A = Document(text=DOCUMENT + " " + LONG_A, id_="a-log", metadata={"tenant": "a"})
TENANT_B = Document(
    text="Grey Point lighthouse keeper vault code 7781. " * 80,
    id_="b-vault",
    metadata={"tenant": "b"},
)
QUESTION = "What did the Grey Point lighthouse keeper do, and what is the vault code?"
TENANT_A_FILTER = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])


def _build(**kwargs: Any) -> tuple[SelfRouteQueryEngine, ScriptedLLM, ScriptedLLM]:
    """Both tenants' documents indexed; a RAG model that always declines."""
    rag, lc = ScriptedLLM(reply="unanswerable"), ScriptedLLM(reply="She trimmed the wick.")
    engine = SelfRouteQueryEngine.from_documents(
        [TENANT_A, TENANT_B], llm=rag, long_context_llm=lc, embed_model=HashingEmbedding(), **kwargs
    )
    return engine, rag, lc


def test_persist_and_reopen_round_trip(tmp_path) -> None:
    engine, rag, lc = _build(persist_dir=tmp_path)
    first = engine.query(QUESTION)
    assert (tmp_path / "chroma").is_dir() and (tmp_path / "docstore.json").is_file()
    store = engine.retriever._vector_store  # the embedded client, never an HttpClient
    assert isinstance(store, ChromaVectorStore)
    assert type(store.client._client).__name__ != "HttpClient"
    chunks = store.client.get(include=["metadatas"])
    words = [len(d.text.split()) for d in (TENANT_A, TENANT_B)]
    assert len(chunks["ids"]) == sum(math.ceil(w / 300) for w in words)  # 300-word chunks
    del engine, store

    rag2, lc2 = ScriptedLLM(reply="unanswerable"), ScriptedLLM(reply="She trimmed the wick.")
    reopened = SelfRouteQueryEngine.from_persist_dir(
        str(tmp_path), llm=rag2, long_context_llm=lc2, embed_model=HashingEmbedding()
    )
    second = reopened.query(QUESTION)
    assert [n.node.node_id for n in second.source_nodes] == [
        n.node.node_id for n in first.source_nodes
    ]
    assert rag2.prompts == rag.prompts and lc2.prompts == lc.prompts
    r1, r2 = get_route_result(first), get_route_result(second)
    assert r1.long_context_tokens == r2.long_context_tokens
    # the LC step got the original documents from the docstore, most relevant first, whole
    assert TENANT_B.text.strip() in lc2.prompts[0] or TENANT_A.text.strip() in lc2.prompts[0]


def test_reopen_errors(tmp_path) -> None:
    with pytest.raises(sr.ConfigurationError, match="holds no index"):
        SelfRouteQueryEngine.from_persist_dir(
            str(tmp_path), llm=ScriptedLLM(), embed_model=HashingEmbedding()
        )
    SelfRouteQueryEngine.from_documents(
        [TENANT_A], llm=ScriptedLLM(), embed_model=HashingEmbedding(), persist_dir=tmp_path
    )
    with pytest.raises(sr.ConfigurationError, match="no Chroma collection 'other'"):
        SelfRouteQueryEngine.from_persist_dir(
            str(tmp_path),
            llm=ScriptedLLM(),
            embed_model=HashingEmbedding(),
            collection_name="other",
        )


def test_in_memory_indexes_do_not_share_a_collection() -> None:
    rag, lc = ScriptedLLM(reply="unanswerable"), ScriptedLLM(reply="x")
    one = SelfRouteQueryEngine.from_documents(
        [TENANT_A], llm=rag, long_context_llm=lc, embed_model=HashingEmbedding()
    )
    two = SelfRouteQueryEngine.from_documents(
        [TENANT_B], llm=rag, long_context_llm=lc, embed_model=HashingEmbedding()
    )
    assert {n.node.ref_doc_id for n in one.retrieve(QUESTION)} == {"a-log"}
    assert {n.node.ref_doc_id for n in two.retrieve(QUESTION)} == {"b-vault"}


@pytest.mark.parametrize("empty_docstore", [False, True], ids=["docstore", "rebuilt-from-chroma"])
async def test_tenant_isolation(tmp_path, empty_docstore: bool) -> None:
    kwargs = {"docstore": SimpleDocumentStore()} if empty_docstore else {}
    engine, rag, lc = _build(filters=TENANT_A_FILTER, persist_dir=tmp_path, **kwargs)
    result = get_route_result(await engine.aquery(QUESTION))
    result_sync = get_route_result(engine.query(QUESTION))
    assert result.route is result_sync.route is sr.Route.LONG_CONTEXT
    assert len(rag.prompts) == len(lc.prompts) == 2
    for prompt in rag.prompts + lc.prompts:
        assert "7781" not in prompt
    # tenant A's document arrives whole (from the docstore, or rebuilt in order from its chunks)
    assert " ".join(TENANT_A.text.split()) in " ".join(lc.prompts[0].split())
    doc_meta = result.context
    assert doc_meta["documents"] == 1


def test_chroma_server_collection(chroma_server) -> None:
    """Your own Chroma server collection (HttpClient) as the vector store."""
    client = chromadb.HttpClient(host=chroma_server.host, port=chroma_server.port)
    collection = client.create_collection(f"li-{uuid.uuid4().hex[:8]}", embedding_function=None)
    store = ChromaVectorStore(chroma_collection=collection)
    engine, rag, lc = _build(
        vector_store=store,
        filters=TENANT_A_FILTER,
        docstore=SimpleDocumentStore(),  # force rebuilding tenant A's document from the server
    )
    result = get_route_result(engine.query(QUESTION))
    assert result.route is sr.Route.LONG_CONTEXT
    assert all("7781" not in p for p in rag.prompts + lc.prompts)
    assert " ".join(TENANT_A.text.split()) in " ".join(lc.prompts[0].split())
    assert collection.count() > 2
