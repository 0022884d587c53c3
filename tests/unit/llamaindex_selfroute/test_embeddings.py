"""`llamaindex_selfroute._embeddings.HashingEmbedding` (LlamaIndex ``BaseEmbedding``)."""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from pydantic import ValidationError

from llamaindex_selfroute._embeddings import HashingEmbedding
from selfroute._embeddings import HashingEmbedding as CoreHashingEmbedding


def test_matches_the_core_embedding():
    emb = HashingEmbedding(dim=48)
    core = CoreHashingEmbedding(48)
    assert emb.dim == 48
    assert emb.model_name == "selfroute-hashing"
    assert emb.get_query_embedding("q text") == core.embed("q text")
    assert emb.get_text_embedding("doc text") == core.embed("doc text")
    assert emb.get_text_embedding_batch(["a", "b c"]) == core.embed_documents(["a", "b c"])


async def test_async_matches_sync():
    emb = HashingEmbedding()
    assert await emb.aget_query_embedding("x y") == emb.get_query_embedding("x y")
    assert await emb.aget_text_embedding_batch(["x", "y"]) == emb.get_text_embedding_batch(
        ["x", "y"]
    )


def test_serialises_its_settings():
    data = HashingEmbedding(dim=32, bigrams=True).to_dict()
    assert data["dim"] == 32
    assert data["bigrams"] is True
    assert data["class_name"] == "SelfRouteHashingEmbedding"


def test_invalid_dim_is_rejected():
    with pytest.raises((ValidationError, ValueError), match="dim"):
        HashingEmbedding(dim=1)


def test_vector_index_retrieves_the_related_node():
    docs = [
        Document(text="Marie Curie won Nobel prizes in physics and chemistry.", doc_id="curie"),
        Document(text="The Nile is the longest river in Africa.", doc_id="nile"),
        Document(text="Basalt is a volcanic rock formed from lava.", doc_id="basalt"),
    ]
    index = VectorStoreIndex.from_documents(docs, embed_model=HashingEmbedding())
    hits = index.as_retriever(similarity_top_k=1).retrieve("Which river is the longest in Africa?")
    assert [hit.node.ref_doc_id for hit in hits] == ["nile"]
