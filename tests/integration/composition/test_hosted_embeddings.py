"""The adapters' store helpers index through selfroute's concurrent hosted-embedding client.

``langchain_selfroute.index_documents`` (on ``Chroma``) with ``HostedEmbeddings`` and
``llamaindex_selfroute.build_index`` with ``HostedEmbedding``, against the loopback
``/v1/embeddings`` server: the server sees several requests at once but never more than the
setting, each stored chunk has its own text's vector, and the async paths await the requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

MODEL = "openai:text-embedding-3-small"
TEXT = " ".join(f"word{i % 503} text" for i in range(9000))  # about 60 chunks


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedOpenAIServer() as srv:
        srv.embeddings.configure(dim=16, base_s=0.05, per_token_s=0.0, max_concurrent=64)
        yield srv


def test_langchain_index_documents_embeds_concurrently(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    from langchain_selfroute import HostedEmbeddings, index_documents

    emb = HostedEmbeddings(MODEL, base_url=server.base_url, concurrency=3)
    store = Chroma("hosted", embedding_function=emb, persist_directory=str(tmp_path / "chroma"))
    index_documents(store, [Document(page_content=TEXT, metadata={"source": "a"})], ids=["a"])
    assert 1 < server.embeddings.max_in_flight <= 3
    got = store.get(include=["embeddings", "documents"])
    assert len(got["ids"]) > 30
    for text, vector in zip(got["documents"], got["embeddings"], strict=True):
        assert np.allclose(vector, server.embeddings.vector(text), atol=1e-6)
    vectors = asyncio.run(emb.aembed_documents(["alpha", "beta"]))
    assert np.allclose(vectors[1], server.embeddings.vector("beta"), atol=1e-6)
    assert np.allclose(asyncio.run(emb.aembed_query("gamma")), server.embeddings.vector("gamma"))


def test_llamaindex_build_index_embeds_concurrently(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from llama_index.core import Document

    from llamaindex_selfroute import HostedEmbedding, build_index

    emb = HostedEmbedding(MODEL, base_url=server.base_url, concurrency=3)
    index = build_index(
        [Document(text=TEXT, id_="a")], embed_model=emb, persist_dir=tmp_path / "index"
    )
    assert 1 < server.embeddings.max_in_flight <= 3
    hits = index.as_retriever(similarity_top_k=1).retrieve("word7 text word8")
    assert hits and server.embeddings.texts[-1] == "word7 text word8"
    vectors = asyncio.run(emb.aget_text_embedding_batch(["alpha", "beta"]))
    assert np.allclose(vectors[0], server.embeddings.vector("alpha"), atol=1e-6)


def _llamaindex_documents() -> list[Any]:
    from llama_index.core import Document

    first = Document(
        text=TEXT,
        id_="a",
        metadata={"source": "a.txt", "tenant": "t1", "pages": 3, "note": None},
        excluded_embed_metadata_keys=["pages"],
    )
    second = Document(text=TEXT.replace("text", "prose")[:20000], id_="b", metadata={"k": 1.5})
    return [first, second]


def _chroma_build(
    server: ScriptedOpenAIServer, store_cls: type[Any], name: str
) -> tuple[dict[str, Any], list[tuple[list[str], list[Any]]]]:
    """Build with ``store_cls`` over a fresh in-memory collection; what it holds, and each
    ``collection.add`` call's ids and embeddings, in order."""
    import chromadb

    from llamaindex_selfroute import HostedEmbedding, build_index

    collection = chromadb.EphemeralClient().get_or_create_collection(name, embedding_function=None)
    calls: list[tuple[list[str], list[Any]]] = []
    add = collection.add

    def spy(**kwargs: Any) -> Any:
        calls.append((list(kwargs["ids"]), list(kwargs["embeddings"])))
        return add(**kwargs)

    collection.add = spy  # type: ignore[method-assign]
    emb = HostedEmbedding(MODEL, base_url=server.base_url, concurrency=3)
    build_index(
        _llamaindex_documents(),
        embed_model=emb,
        vector_store=store_cls(chroma_collection=collection),
        chunk_words=120,
        overlap_words=10,
    )
    got = collection.get(include=["embeddings", "documents", "metadatas"])
    return dict(got), calls


def test_llamaindex_build_index_writes_chroma_as_insert_nodes_would(
    server: ScriptedOpenAIServer,
) -> None:
    """Straight to the collection, a stock ``ChromaVectorStore`` gets exactly what
    ``insert_nodes`` writes (a subclass overriding ``add`` still goes through it): the same ids
    in the same ``add`` calls, the same documents, metadata (``_node_content`` with the
    relationships) and vectors; the vectors go to Chroma as the float32 arrays they came back
    as, not as lists of Python floats."""
    from llama_index.vector_stores.chroma import ChromaVectorStore

    class Overriding(ChromaVectorStore):
        def add(self, nodes: list[Any], **add_kwargs: Any) -> list[str]:
            return super().add(nodes, **add_kwargs)

    fast, fast_calls = _chroma_build(server, ChromaVectorStore, "fast")
    slow, slow_calls = _chroma_build(server, Overriding, "slow")
    assert len(fast["ids"]) > 60 and len(fast_calls) > 2  # several batches, both documents
    assert [ids for ids, _ in fast_calls] == [ids for ids, _ in slow_calls]
    assert fast["ids"] == slow["ids"]
    assert fast["documents"] == slow["documents"]
    assert fast["metadatas"] == slow["metadatas"]
    assert np.array_equal(np.asarray(fast["embeddings"]), np.asarray(slow["embeddings"]))
    for _, vectors in fast_calls:
        assert all(isinstance(v, np.ndarray) and v.dtype == np.float32 for v in vectors)
    for _, vectors in slow_calls:
        assert all(isinstance(v, list) for v in vectors)
