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
