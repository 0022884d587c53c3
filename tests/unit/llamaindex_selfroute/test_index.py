"""Chunking and the in-memory index path: from_index as a drop-in for index.as_query_engine()."""

from __future__ import annotations

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import MetadataFilter, MetadataFilters

import selfroute as sr
from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    build_index,
    get_route_result,
    load_index,
)
from tests.conformance.scenarios import DOCUMENT
from tests.unit.llamaindex_selfroute._scripted import ScriptedLLM

LONG = " ".join(f"word{i}" for i in range(650))


# -- chunking --------------------------------------------------------------------------------
def test_word_chunks_are_exact_300_word_slices() -> None:
    doc = Document(text=LONG, id_="long", metadata={"title": "T"})
    nodes = WordChunkNodeParser().get_nodes_from_documents([doc])
    assert [len(n.text.split()) for n in nodes] == [300, 300, 50]
    assert [n.node_id for n in nodes] == ["long:0", "long:1", "long:2"]
    for n in nodes:
        assert doc.text[n.start_char_idx : n.end_char_idx] == n.text
        assert n.ref_doc_id == "long" and n.metadata == {"title": "T"}
    assert "".join(n.text for n in nodes) == doc.text


def test_offsets_survive_repeated_text() -> None:
    doc = Document(text="same words here " * 40, id_="rep")
    nodes = WordChunkNodeParser(chunk_words=12).get_nodes_from_documents([doc])
    assert [n.start_char_idx for n in nodes] == sorted({n.start_char_idx for n in nodes})
    assert "".join(doc.text[n.start_char_idx : n.end_char_idx] for n in nodes) == doc.text


def test_chunking_settings_are_checked() -> None:
    with pytest.raises(sr.ConfigurationError, match="overlap_words"):
        WordChunkNodeParser(chunk_words=10, overlap_words=10)
    with pytest.raises(ValueError):
        WordChunkNodeParser(chunk_words=0)
    assert WordChunkNodeParser().get_nodes_from_documents([Document(text="  ")]) == []


# -- from_index ------------------------------------------------------------------------------
TENANT_A = Document(
    text="Tenant A handbook. The Grey Point lighthouse keeper was Mara Holt. " + DOCUMENT,
    id_="a-handbook",
    metadata={"tenant": "a"},
)
TENANT_B = Document(
    text="Tenant B secrets. The Grey Point lighthouse vault code is 7781 and the keeper is Zed. "
    * 20,
    id_="b-secrets",
    metadata={"tenant": "b"},
)


def _index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [TENANT_A, TENANT_B],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=40)],
    )


@pytest.mark.parametrize("use_async", [False, True])
async def test_tenant_filter_applies_to_retrieval_and_long_context(use_async: bool) -> None:
    rag = ScriptedLLM(reply="unanswerable")
    lc = ScriptedLLM(reply="Mara Holt.")
    tenant_a = MetadataFilters(filters=[MetadataFilter(key="tenant", value="a")])
    engine = SelfRouteQueryEngine.from_index(_index(), rag, lc, filters=tenant_a)
    question = "Who is the Grey Point lighthouse keeper and what is the vault code?"
    response = await engine.aquery(question) if use_async else engine.query(question)
    result = get_route_result(response)
    assert result.route is sr.Route.LONG_CONTEXT and result.answer == "Mara Holt."
    assert {n.node.metadata["tenant"] for n in response.source_nodes} == {"a"}
    prompts = rag.prompts + lc.prompts
    assert len(prompts) == 2
    assert all("7781" not in p and "Tenant B" not in p for p in prompts)
    # the LC step saw tenant A's whole handbook, rebuilt in order from the docstore's chunks
    assert TENANT_A.text.strip() in lc.prompts[0]


def test_unfiltered_engine_reaches_both_tenants() -> None:
    # the control: without the filter the same question does pull tenant B's text
    lc = ScriptedLLM(reply="x")
    engine = SelfRouteQueryEngine.from_index(_index(), ScriptedLLM(reply="unanswerable"), lc, k=5)
    engine.query("Who is the Grey Point lighthouse keeper and what is the vault code?")
    assert "7781" in lc.prompts[0]


def test_with_retriever_switches_tenant() -> None:
    index = _index()
    rag, lc = ScriptedLLM(reply="unanswerable"), ScriptedLLM(reply="x")
    engine = SelfRouteQueryEngine.from_index(index, rag, lc)
    only_b = index.as_retriever(
        similarity_top_k=5,
        filters=MetadataFilters(filters=[MetadataFilter(key="tenant", value="b")]),
    )
    engine.with_retriever(only_b).query("Who is the keeper?")
    assert "Mara" not in lc.prompts[0] and "7781" in lc.prompts[0]


def test_build_index_with_llamaindex_simple_store_round_trip(tmp_path) -> None:
    index = build_index(
        [TENANT_A],
        embed_model=HashingEmbedding(),
        vector_store=SimpleVectorStore(),
        persist_dir=tmp_path,
        chunk_words=50,
    )
    assert index.docstore.get_document("a-handbook").text == TENANT_A.text
    assert (tmp_path / "docstore.json").is_file()
    # reopened from disk alone (LlamaIndex persisted its simple vector store beside the docstore)
    again = load_index(tmp_path, embed_model=HashingEmbedding())
    lc = ScriptedLLM(reply="Mara Holt.")
    engine = SelfRouteQueryEngine.from_index(again, ScriptedLLM(reply="unanswerable"), lc)
    engine.query("Who kept the lamp at Grey Point?")
    assert TENANT_A.text.strip() in lc.prompts[0]


def test_reingesting_a_document_replaces_its_chunks(tmp_path) -> None:
    kw = {"embed_model": HashingEmbedding(), "vector_store": SimpleVectorStore(), "chunk_words": 20}
    build_index([Document(text="old keeper Zed " * 30, id_="d")], persist_dir=tmp_path, **kw)
    kw["vector_store"] = None
    index = build_index(
        [Document(text="new keeper Mara " * 10, id_="d"), TENANT_B], persist_dir=tmp_path, **kw
    )
    texts = [
        n.node.get_content() for n in index.as_retriever(similarity_top_k=50).retrieve("keeper")
    ]
    assert texts and not any("Zed" in t and "old" in t for t in texts)
    assert index.docstore.get_document("d").text.startswith("new keeper")
    assert len(index.docstore.get_ref_doc_info("d").node_ids) == 2


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ("text", "list of LlamaIndex Document"),
        ([], "empty"),
        (["text"], r"documents\[0\] must be a LlamaIndex Document"),
        ([Document(text=" ", id_="e")], r"documents\[0\] \(id 'e'\) has no text"),
        ([Document(text="x", id_="d"), Document(text="y", id_="d")], "repeats the id 'd'"),
    ],
)
def test_build_index_rejects_bad_documents(documents, message) -> None:
    with pytest.raises(sr.InvalidInputError, match=message):
        build_index(documents, embed_model=HashingEmbedding(), vector_store=SimpleVectorStore())


def test_load_index_errors(tmp_path) -> None:
    with pytest.raises(sr.ConfigurationError, match="does not exist"):
        load_index(tmp_path / "nope")
    with pytest.raises(sr.ConfigurationError, match="holds no index"):
        load_index(tmp_path, embed_model=HashingEmbedding())
