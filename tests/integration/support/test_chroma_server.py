"""The real ``chroma run`` server with the offline hashing embedding function."""

from __future__ import annotations

import uuid

import pytest

from selfroute._embeddings import HashingEmbedding, chroma_embedding_function

pytestmark = pytest.mark.integration


def test_http_collection_with_offline_embeddings(chroma_server):
    client = chroma_server.client()
    assert client.heartbeat() > 0
    name = f"docs-{uuid.uuid4().hex[:8]}"
    collection = client.create_collection(name, embedding_function=chroma_embedding_function())
    collection.add(
        ids=["a", "b", "c"],
        documents=[
            "The Eiffel Tower is in Paris, the capital of France.",
            "Photosynthesis converts sunlight into chemical energy in plants.",
            "The Colosseum is an ancient amphitheatre in Rome.",
        ],
        metadatas=[{"doc_id": "d1"}, {"doc_id": "d2"}, {"doc_id": "d3"}],
    )
    hits = collection.query(query_texts=["Where is the Eiffel Tower?"], n_results=2)
    assert hits["ids"][0][0] == "a"
    stored = collection.get(ids=["b"], include=["embeddings"])["embeddings"][0]
    expected = HashingEmbedding().embed(
        "Photosynthesis converts sunlight into chemical energy in plants."
    )
    assert list(stored) == pytest.approx(expected, abs=1e-6)

    # a second client reopens the collection from the server-side config, no EF passed
    reopened = chroma_server.client().get_collection(name)
    assert reopened.configuration["embedding_function"].name() == "selfroute-hashing"
    assert reopened.configuration["hnsw"]["space"] == "cosine"
    again = reopened.query(query_texts=["sunlight energy in plants"], n_results=1)
    assert again["ids"][0] == ["b"]
