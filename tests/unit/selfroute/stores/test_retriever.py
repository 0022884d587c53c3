"""Hybrid retrieval over the store and loading parent documents as the long context."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

import selfroute as sr
from selfroute.stores import DocumentStore, HybridRetriever, read_document, rrf_fuse
from selfroute.stores import _store as store_module

MakeStore = Callable[..., DocumentStore]


@pytest.fixture
def indexed(docs: Path, make_store: MakeStore) -> DocumentStore:
    make_store().index([docs])
    return make_store(embedding=None)


def test_hybrid_fuses_dense_and_bm25_rankings(indexed: DocumentStore) -> None:
    question = "Who proclaimed the oil embargo in October 1973?"
    hybrid = HybridRetriever(indexed, k=5).retrieve(question)
    dense = HybridRetriever(indexed, mode="dense", k=20).retrieve(question)
    lexical = HybridRetriever(indexed, mode="bm25", k=20).retrieve(question)
    expected = rrf_fuse([[str(p.source) for p in dense], [str(p.source) for p in lexical]])[:5]
    assert [str(p.source) for p in hybrid] == [cid for cid, _ in expected]
    assert [p.score for p in hybrid] == pytest.approx([s for _, s in expected])
    assert any("proclaimed an oil embargo" in p.text for p in hybrid)
    top = hybrid[0]
    assert top.metadata["retrieval"] == "hybrid"
    assert top.metadata["dense_rank"] >= 1 and top.metadata["bm25_rank"] >= 1
    assert top.doc_id == top.metadata["doc_id"]
    assert top.metadata["source"].endswith("1973_oil_crisis.html")
    assert {"chunk_index", "start", "end", "words", "chunk_id"} <= set(top.metadata)


def test_an_exact_token_is_found_lexically(docs: Path, make_store: MakeStore) -> None:
    # the paper's PassKey case: a random token that an embedding blurs, BM25 matches exactly
    filler = " ".join(f"The grass is green and the sky is blue, line {i}." for i in range(200))
    (docs / "haystack.txt").write_text(
        filler + " The pass key is 71432-QX. Remember it. " + filler, encoding="utf-8"
    )
    make_store().index([docs])
    store = make_store(embedding=None)
    hits = HybridRetriever(store, k=3).retrieve("What is the pass key 71432-QX?")
    assert any("71432-QX" in p.text for p in hits)
    bm25 = HybridRetriever(store, mode="bm25", k=1).retrieve("71432-QX")
    assert "71432-QX" in bm25[0].text and bm25[0].metadata["bm25_rank"] == 1


def test_bm25_mode_needs_no_embedding_model(
    indexed: DocumentStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(choice: object) -> object:
        raise AssertionError("bm25 retrieval must not load an embedding model")

    monkeypatch.setattr(store_module, "create_embedding_function", no_model)
    store = DocumentStore(indexed.path, indexed.collection_name)
    hits = HybridRetriever(store, mode="bm25").retrieve("Ghost of Gordon chains")
    assert hits and all(p.metadata["retrieval"] == "bm25" for p in hits)
    assert all("dense_rank" not in p.metadata for p in hits)


def test_dense_mode_scores_are_cosine_similarities(indexed: DocumentStore) -> None:
    hits = HybridRetriever(indexed, mode="dense", k=4).retrieve("recurrent neural network LSTM")
    assert len(hits) == 4
    assert all(-1.0 <= (p.score or 0) <= 1.0 for p in hits)
    assert [p.metadata["dense_rank"] for p in hits] == [1, 2, 3, 4]
    assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True)


def test_long_context_loads_parents_most_relevant_first(docs: Path, indexed: DocumentStore) -> None:
    retriever = HybridRetriever(indexed, k=5)
    passages = retriever.retrieve("oil embargo prices OPEC")
    parents = retriever.long_context(passages)
    order = list(dict.fromkeys(p.doc_id for p in passages))
    assert [d.doc_id for d in parents] == order
    html = read_document(docs / "1973_oil_crisis.html")
    assert parents[0].doc_id == html.doc_id and parents[0].text == html.text
    capped = HybridRetriever(indexed, k=5, max_parent_documents=1).long_context(passages)
    assert [d.doc_id for d in capped] == order[:1]


def test_no_passages_means_no_long_context_unless_the_store_has_one_document(
    tmp_path: Path, indexed: DocumentStore, make_store: MakeStore
) -> None:
    assert HybridRetriever(indexed).long_context([]) == []
    single = tmp_path / "single"
    single.mkdir()
    (single / "only.md").write_text("# Only\n\nThe one document.\n", encoding="utf-8")
    store = make_store(path=tmp_path / "single-store")
    store.index([single])
    assert [d.text for d in HybridRetriever(store).long_context([])] == [
        "# Only\n\nThe one document.\n"
    ]
    assert HybridRetriever(store, mode="bm25").retrieve("zebra") == []


def test_core_flow_runs_over_the_store(indexed: DocumentStore) -> None:
    """The retriever plugs into the framework-free core as-is."""
    retriever = HybridRetriever(indexed, k=3)
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return "unanswerable" if len(prompts) == 1 else "Paul Baran."

    handler = sr.FunctionHandler(
        retrieve=retriever, generate=model, long_context=lambda q, p: retriever.long_context(p)
    )
    result = sr.flow.run_flow(
        sr.flow.self_route_flow("Who developed the concept of packet switching?"), handler
    )
    assert result.route is sr.Route.LONG_CONTEXT and result.answer == "Paul Baran."
    assert "Paul Baran" in prompts[1]  # the whole parent document reached the LC prompt
    assert len(result.sources) == 5  # the flow asks for RouteConfig.k, not the default


def test_async_twins(indexed: DocumentStore) -> None:
    retriever = HybridRetriever(indexed, k=2)

    async def run() -> tuple[list[sr.Passage], list[sr.ContextDocument]]:
        passages = await retriever.aretrieve("Hartman clerk Christmas")
        return passages, await retriever.along_context(passages)

    passages, parents = asyncio.run(run())
    assert passages == retriever.retrieve("Hartman clerk Christmas")
    assert parents == retriever.long_context(passages)


def test_bad_settings_are_refused(indexed: DocumentStore) -> None:
    with pytest.raises(sr.ConfigurationError, match="retrieval mode"):
        HybridRetriever(indexed, mode="sparse")
    with pytest.raises(sr.ConfigurationError, match="k must be"):
        HybridRetriever(indexed, k=0)
    with pytest.raises(sr.ConfigurationError):
        HybridRetriever(indexed, candidates=0)
    assert HybridRetriever(indexed).retrieve("anything", k=0) == []


def test_open_fails_early_on_a_missing_collection(tmp_path: Path) -> None:
    with pytest.raises(sr.SelfRouteError, match="selfroute index"):
        HybridRetriever.open(tmp_path / "absent")
