"""`langchain_selfroute._embeddings.HashingEmbeddings` (LangChain ``Embeddings``)."""

from __future__ import annotations

import pytest
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_tests.integration_tests import EmbeddingsIntegrationTests
from langchain_tests.unit_tests import EmbeddingsUnitTests

from langchain_selfroute._embeddings import HashingEmbeddings
from selfroute import InvalidInputError
from selfroute._embeddings import HashingEmbedding


class _Params:
    @property
    def embeddings_class(self) -> type[Embeddings]:
        return HashingEmbeddings

    @property
    def embedding_model_params(self) -> dict:
        return {"dim": 64}


class TestHashingEmbeddingsStandardUnit(_Params, EmbeddingsUnitTests):
    """LangChain's standard unit checks for embeddings."""


class TestHashingEmbeddingsStandard(_Params, EmbeddingsIntegrationTests):
    """LangChain's standard embedding checks (they run offline: no model behind it)."""


def test_matches_the_core_embedding():
    emb = HashingEmbeddings(dim=48, bigrams=True)
    core = HashingEmbedding(48, bigrams=True)
    assert emb.dim == 48
    assert emb.config() == core.config()
    assert emb.embed_query("where is it") == core.embed("where is it")
    assert emb.embed_documents(["a b", "c"]) == core.embed_documents(["a b", "c"])


async def test_async_matches_sync():
    emb = HashingEmbeddings()
    assert await emb.aembed_query("x y") == emb.embed_query("x y")
    assert await emb.aembed_documents(["x", "y"]) == emb.embed_documents(["x", "y"])


def test_in_memory_vector_store_retrieves_the_related_document():
    store = InMemoryVectorStore(HashingEmbeddings())
    store.add_documents(
        [
            Document("Marie Curie won Nobel prizes in physics and chemistry.", id="curie"),
            Document("The Nile is the longest river in Africa.", id="nile"),
            Document("Basalt is a volcanic rock formed from lava.", id="basalt"),
        ]
    )
    hits = store.similarity_search("Which river is the longest in Africa?", k=1)
    assert [doc.id for doc in hits] == ["nile"]


def test_bad_input_is_a_selfroute_error():
    with pytest.raises(InvalidInputError):
        HashingEmbeddings().embed_documents([1, 2])
