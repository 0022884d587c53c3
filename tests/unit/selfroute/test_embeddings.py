"""`selfroute._embeddings`: the offline hashing embedding and its Chroma embedding function."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfroute import ConfigurationError, InvalidInputError
from selfroute._embeddings import (
    CHROMA_EMBEDDING_NAME,
    DEFAULT_EMBEDDING_DIM,
    HashingEmbedding,
    chroma_embedding_function,
)

ROOT = Path(__file__).resolve().parents[3]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def norm(v: list[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# -- shape, normalisation, determinism -------------------------------------------------------


def test_default_dimension_and_custom_dimension():
    assert DEFAULT_EMBEDDING_DIM == 384
    assert len(HashingEmbedding().embed_query("hello world")) == 384
    assert len(HashingEmbedding(dim=7).embed("hello world")) == 7
    docs = HashingEmbedding(dim=16).embed_documents(["a", "b c", ""])
    assert [len(v) for v in docs] == [16, 16, 16]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_every_text_gets_a_unit_vector(text):
    vec = HashingEmbedding(dim=32).embed(text)
    assert norm(vec) == pytest.approx(1.0, abs=1e-9)
    assert all(math.isfinite(x) for x in vec)


@pytest.mark.parametrize("text", ["", "   ", "!!! ... ---", "\n\t"])
def test_text_without_words_is_a_fixed_unit_vector(text):
    emb = HashingEmbedding(dim=16)
    vec = emb.embed(text)
    assert sorted(abs(x) for x in vec)[-1] == 1.0
    assert sum(1 for x in vec if x) == 1
    assert vec == emb.embed("")


def test_deterministic_across_instances():
    text = "The quick brown fox jumps over the lazy dog."
    assert HashingEmbedding().embed(text) == HashingEmbedding().embed(text)
    assert HashingEmbedding().embed_documents([text]) == [HashingEmbedding().embed_query(text)]


def test_deterministic_across_processes_with_different_hash_seeds():
    text = "Résumé of the Self-Route paper: 300-word chunks, k=5."
    code = (
        "import json, sys; from selfroute._embeddings import HashingEmbedding; "
        "print(json.dumps(HashingEmbedding(dim=64, bigrams=True).embed(sys.argv[1])))"
    )
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [sys.executable, "-c", code, text],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outputs.append(json.loads(proc.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0] == HashingEmbedding(dim=64, bigrams=True).embed(text)


def test_hashing_scheme_is_pinned():
    """Persisted collections depend on these exact buckets and signs: changing the scheme
    requires bumping the scheme version (and re-indexing), never a silent change."""
    vec = HashingEmbedding(dim=8).embed("alpha beta beta")
    beta, alpha = 1.0 + math.log(2), 1.0
    scale = math.hypot(alpha, beta)
    assert vec == pytest.approx([-beta / scale, 0, 0, alpha / scale, 0, 0, 0, 0], abs=1e-12)
    big = HashingEmbedding().embed("Self-Route answers from retrieved chunks")
    nonzero = {i: round(x * math.sqrt(6)) for i, x in enumerate(big) if x}
    assert nonzero == {43: -1, 62: 1, 67: 1, 158: -1, 203: 1, 346: -1}


# -- similarity behaviour ----------------------------------------------------------------------


def test_similar_texts_are_closer_than_unrelated_ones():
    emb = HashingEmbedding()
    query = emb.embed_query("When was the Eiffel Tower built in Paris?")
    related = emb.embed("The Eiffel Tower in Paris was built between 1887 and 1889.")
    unrelated = emb.embed("Photosynthesis turns sunlight and water into glucose in leaves.")
    assert cosine(query, related) > 0.3
    assert cosine(query, related) > cosine(query, unrelated) + 0.2


def test_identical_text_has_cosine_one_and_case_is_folded():
    emb = HashingEmbedding()
    assert cosine(emb.embed("Paris, France"), emb.embed("PARIS france")) == pytest.approx(1.0)
    cased = HashingEmbedding(lowercase=False)
    assert cosine(cased.embed("Paris"), cased.embed("paris")) < 0.5


def test_term_frequency_is_sublinear():
    vec = HashingEmbedding(dim=4096).embed("apple " * 10 + "pear")
    weights = sorted(abs(x) for x in vec if x)
    assert weights[1] / weights[0] == pytest.approx(1.0 + math.log(10))


def test_bigrams_make_word_order_matter():
    plain, bi = HashingEmbedding(), HashingEmbedding(bigrams=True)
    a, b = "dog bites man", "man bites dog"
    assert cosine(plain.embed(a), plain.embed(b)) == pytest.approx(1.0)
    assert cosine(bi.embed(a), bi.embed(b)) < 0.9


def test_unicode_words_are_tokenised():
    emb = HashingEmbedding()
    assert cosine(emb.embed("zürich—straße"), emb.embed("ZÜRICH straße")) == pytest.approx(1.0)
    assert cosine(emb.embed("zürich"), emb.embed("zurich")) < 0.5  # no accent folding
    assert cosine(emb.embed("Zürich, straße!"), emb.embed("zürich straße")) == pytest.approx(1.0)


# -- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -5, 2.5, "384", True, None])
def test_invalid_dim_is_a_configuration_error(dim):
    with pytest.raises(ConfigurationError, match="dim"):
        HashingEmbedding(dim=dim)


def test_non_string_inputs_are_rejected():
    emb = HashingEmbedding()
    with pytest.raises(InvalidInputError, match="expects str, got int"):
        emb.embed(42)
    with pytest.raises(InvalidInputError, match="expects str, got NoneType"):
        emb.embed_documents(["ok", None])
    with pytest.raises(InvalidInputError, match="sequence of strings"):
        emb.embed_documents("a single string")


def test_config_equality_and_repr():
    emb = HashingEmbedding(dim=12, bigrams=True)
    assert emb.config() == {"dim": 12, "bigrams": True, "lowercase": True, "version": 1}
    assert emb == HashingEmbedding(dim=12, bigrams=True)
    assert emb != HashingEmbedding(dim=12)
    assert "dim=12" in repr(emb)


# -- Chroma embedding function -----------------------------------------------------------------


def test_chroma_embedding_function_contract():
    from chromadb.utils.embedding_functions import known_embedding_functions

    ef = chroma_embedding_function(dim=32)
    assert ef.name() == CHROMA_EMBEDDING_NAME == "selfroute-hashing"
    assert known_embedding_functions["selfroute-hashing"] is type(ef)
    assert ef.is_legacy() is False
    assert ef.default_space() == "cosine"
    assert ef.get_config() == {"dim": 32, "bigrams": False, "lowercase": True, "version": 1}
    rebuilt = type(ef).build_from_config(ef.get_config())
    vectors = ef(["alpha beta"])
    assert [list(v) for v in vectors] == [list(v) for v in rebuilt(["alpha beta"])]
    assert list(vectors[0]) == pytest.approx(HashingEmbedding(dim=32).embed("alpha beta"))
    assert list(ef.embed_query(["alpha"])[0]) == pytest.approx(HashingEmbedding(32).embed("alpha"))


def test_chroma_config_guards():
    ef = chroma_embedding_function(dim=32)
    with pytest.raises(ConfigurationError, match="scheme v2"):
        type(ef).build_from_config({"dim": 32, "version": 2})
    with pytest.raises(ConfigurationError, match="'dim'"):
        ef.validate_config_update(ef.get_config(), {"dim": 64})
    ef.validate_config_update(ef.get_config(), {"dim": 32})  # unchanged: fine


def test_chroma_persistent_collection_reopens_without_passing_the_function(tmp_path):
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False, allow_reset=True)
    path = str(tmp_path / "db")
    name = f"c-{uuid.uuid4().hex[:8]}"
    docs = [
        "The Amazon river flows through Brazil into the Atlantic Ocean.",
        "Mount Everest is the highest mountain above sea level.",
        "The Great Barrier Reef lies off the coast of Queensland, Australia.",
    ]
    client = chromadb.PersistentClient(path=path, settings=settings)
    collection = client.create_collection(name, embedding_function=chroma_embedding_function())
    collection.add(ids=["0", "1", "2"], documents=docs)
    first = collection.query(query_texts=["highest mountain"], n_results=3)
    del collection, client
    SharedSystemClient.clear_system_cache()  # force a real reopen from disk

    reopened = chromadb.PersistentClient(path=path, settings=settings).get_collection(name)
    config = reopened.configuration
    assert config["embedding_function"].name() == "selfroute-hashing"
    assert config["hnsw"]["space"] == "cosine"
    again = reopened.query(query_texts=["highest mountain"], n_results=3)
    assert again["ids"] == first["ids"]
    assert again["ids"][0][0] == "1"
    assert again["distances"][0] == pytest.approx(first["distances"][0])
    stored = reopened.get(ids=["2"], include=["embeddings"])["embeddings"][0]
    assert list(stored) == pytest.approx(HashingEmbedding().embed(docs[2]), abs=1e-6)
    SharedSystemClient.clear_system_cache()
