"""Parent documents as the long context: the hook, the Chroma loader, tenant isolation."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.documents import Document

import selfroute as sr
from langchain_selfroute import (
    TAG_PARENTS,
    ChromaParentLoader,
    HashingEmbeddings,
    SelfRoute,
    chunk_documents,
    index_documents,
)
from selfroute import Reason, Route
from tests.unit.langchain_selfroute.fakes import ListRetriever, ScriptedChatModel
from tests.unit.langchain_selfroute.test_tracing import Collector

EMBED = HashingEmbeddings(dim=128)


def words(label: str, n: int) -> str:
    return " ".join(f"{label}{i}" for i in range(n))


def tenant_docs() -> list[Document]:
    shared = "The launch checklist is shared by every team. " * 5
    return [
        Document(
            page_content=f"{words('acme', 400)} Acme launches the rocket on May 3. {shared}",
            metadata={"tenant": "acme", "title": "Acme plan"},
        ),
        Document(
            page_content=f"{words('globex', 400)} Globex launches the rocket on June 9. {shared}",
            metadata={"tenant": "globex", "title": "Globex plan"},
        ),
        # the very same text uploaded by both tenants: two separate parents
        Document(page_content=shared, metadata={"tenant": "acme"}),
        Document(page_content=shared, metadata={"tenant": "globex"}),
    ]


# chunking and indexing ------------------------------------------------------------------------
def test_chunk_documents_metadata_and_ids() -> None:
    doc = Document(page_content=words("w", 650), metadata={"title": "T"})
    chunks = chunk_documents([doc], ids=["parent-1"])
    assert [c.id for c in chunks] == ["parent-1:0", "parent-1:1", "parent-1:2"]
    assert [len(c.page_content.split()) for c in chunks] == [300, 300, 50]
    assert chunks[1].metadata == {
        "title": "T",
        "doc_id": "parent-1",
        "chunk_index": 1,
        "chunk_count": 3,
        "start": chunks[1].metadata["start"],
        "end": chunks[1].metadata["end"],
    }
    assert "".join(c.page_content for c in chunks) == doc.page_content
    assert doc.page_content[chunks[2].metadata["start"] :] == chunks[2].page_content
    same_text = chunk_documents(tenant_docs()[2:])
    assert len({c.metadata["doc_id"] for c in same_text}) == 2  # metadata is part of the id


def test_chunk_documents_rejects_bad_input() -> None:
    with pytest.raises(sr.InvalidInputError, match="documents\\[1\\] is empty"):
        chunk_documents([Document(page_content="ok"), Document(page_content="  ")])
    with pytest.raises(sr.InvalidInputError, match="different document"):
        chunk_documents(
            [Document(page_content="a"), Document(page_content="b")], ids=["same", "same"]
        )
    with pytest.raises(sr.InvalidInputError, match="ids has 1 entries"):
        chunk_documents([Document(page_content="a"), Document(page_content="b")], ids=["x"])
    with pytest.raises(sr.InvalidInputError, match="langchain Document"):
        chunk_documents(["plain string"])  # type: ignore[list-item]
    dup = Document(page_content="same", metadata={"k": 1})
    assert len(chunk_documents([dup, dup])) == 1  # identical duplicates collapse


# from_documents with an in-memory Chroma ------------------------------------------------------
def test_filtered_retriever_never_brings_another_tenants_parent() -> None:
    model = ScriptedChatModel(rag_output="unanswerable", lc_output="May 3.")
    route = SelfRoute.from_documents(
        tenant_docs(),
        llm=model,
        embedding=EMBED,
        search_kwargs={"filter": {"tenant": "acme"}},
    )
    for question in ("When does Globex launch the rocket?", "What is the launch checklist?"):
        out = route.invoke(question)
        assert out.route is Route.LONG_CONTEXT and out.answer == "May 3."
        assert {d.metadata["tenant"] for d in out.sources} == {"acme"}
    for _, stage, prompt in model.calls:
        assert "globex0" not in prompt and "June 9" not in prompt, stage
    lc_prompts = [p for _, stage, p in model.calls if stage == "long_context"]
    assert all("Acme launches the rocket" in p for p in lc_prompts)


def test_loader_applies_the_filter_again() -> None:
    route = SelfRoute.from_documents(tenant_docs(), llm=ScriptedChatModel(), embedding=EMBED)
    loader = route.parent_loader
    assert isinstance(loader, ChromaParentLoader)
    store = loader.vectorstore
    globex_chunk = store.similarity_search("Globex launches", k=1, filter={"tenant": "globex"})
    assert loader(globex_chunk)[0].metadata["tenant"] == "globex"
    assert loader(globex_chunk, filter={"tenant": "acme"}) == []  # defence in depth
    parent = loader(globex_chunk)[0]
    assert parent.page_content == tenant_docs()[1].page_content  # rebuilt exactly
    assert parent.metadata == {"tenant": "globex", "title": "Globex plan", "doc_id": parent.id}


def test_parents_are_ordered_by_relevance_and_fitted() -> None:
    docs = [
        Document(page_content=f"{words('alpha', 350)} The alpha fact is red.", metadata={"n": 1}),
        Document(page_content=f"{words('beta', 350)} The beta fact is blue.", metadata={"n": 2}),
    ]
    model = ScriptedChatModel(rag_output="unanswerable")
    route = SelfRoute.from_documents(docs, llm=model, embedding=EMBED, k=2)
    route.invoke("beta beta fact blue")
    lc = model.stage_calls("long_context")[0][2]
    assert lc.index("beta fact is blue") < lc.index("alpha fact is red")
    small = SelfRoute.from_vectorstore(
        route.parent_loader.vectorstore,  # type: ignore[union-attr]
        llm=model,
        k=2,
        long_context_window=500,
        answer_tokens=50,
    )
    out = small.invoke("beta beta fact blue")
    assert out.context is not None and out.context["truncated"] and out.context["documents"] == 2
    assert "beta fact is blue" in model.stage_calls("long_context")[-1][2]


def test_counterfactual_counts_the_parents_on_the_rag_route() -> None:
    model = ScriptedChatModel(rag_output="May 3.")
    route = SelfRoute.from_documents(tenant_docs()[:1], llm=model, embedding=EMBED)
    out = route.invoke("When does Acme launch?")
    assert out.route is Route.RAG and len(model.calls) == 1
    assert out.long_context_tokens is not None and out.long_context_tokens > 400
    no_cf = SelfRoute.from_documents(
        tenant_docs()[:1], llm=model, embedding=EMBED, counterfactual=False
    )
    assert no_cf.invoke("When does Acme launch?").long_context_tokens is None


def test_reindexing_replaces_chunks_and_incomplete_parents_are_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    route = SelfRoute.from_texts(
        [words("old", 900)], ids=["doc"], llm=ScriptedChatModel(), embedding=EMBED
    )
    loader = route.parent_loader
    assert isinstance(loader, ChromaParentLoader)
    store = loader.vectorstore
    index_documents(store, [Document(page_content=words("new", 320))], ids=["doc"])
    assert len(store.get()["ids"]) == 2  # the three old chunks are gone
    (parent,) = loader([Document(page_content="x", metadata={"doc_id": "doc"})])
    assert parent.page_content == words("new", 320)
    store.delete(ids=["doc:1"])
    with caplog.at_level(logging.WARNING):
        assert loader([Document(page_content="x", metadata={"doc_id": "doc"})]) == []
    assert "1 of 2 chunks" in caplog.text


def test_from_texts_validation() -> None:
    with pytest.raises(sr.InvalidInputError, match="single str"):
        SelfRoute.from_texts("one text", llm=ScriptedChatModel(), embedding=EMBED)  # type: ignore[arg-type]
    with pytest.raises(sr.InvalidInputError, match="metadatas has 1 entries for 2 texts"):
        SelfRoute.from_texts(["a", "b"], metadatas=[{}], llm=ScriptedChatModel(), embedding=EMBED)
    with pytest.raises(sr.ConfigurationError, match="Embeddings"):
        SelfRoute.from_texts(["a"], llm=ScriptedChatModel(), embedding=object())  # type: ignore[arg-type]


# the parent_loader hook -----------------------------------------------------------------------
CHUNKS = [
    Document(page_content="chunk of B", metadata={"doc_id": "B", "tenant": "t1"}),
    Document(page_content="chunk of A", metadata={"doc_id": "A", "tenant": "t1"}),
]
PARENTS = {
    "A": Document(page_content="PARENT A", metadata={"doc_id": "A"}),
    "B": Document(page_content="PARENT B", metadata={"doc_id": "B"}),
    "X": Document(page_content="PARENT X of another tenant", metadata={"doc_id": "X"}),
}


def hook_route(**kwargs: Any) -> tuple[SelfRoute, ScriptedChatModel]:
    model = ScriptedChatModel(rag_output="unanswerable")
    return SelfRoute(retriever=ListRetriever(docs=CHUNKS), llm=model, **kwargs), model


def test_hook_gets_chunks_and_parents_are_put_in_retrieval_order() -> None:
    seen: list[list[str]] = []

    def loader(chunks: Sequence[Document]) -> list[Document]:
        seen.append([c.page_content for c in chunks])
        return [PARENTS["A"], PARENTS["B"]]  # loader order does not matter

    route, model = hook_route(parent_loader=loader)
    tracer = Collector()
    out = route.invoke("Q?", {"callbacks": [tracer]})
    assert seen[0] == ["chunk of B", "chunk of A"]
    lc = model.stage_calls("long_context")[0][2]
    assert lc.index("PARENT B") < lc.index("PARENT A")
    assert out.answer == "In 1901."
    assert TAG_PARENTS in [c.name for c in tracer.roots[0].child_runs]


def test_hook_with_filter_keyword_receives_the_retriever_filter() -> None:
    from langchain_core.vectorstores import InMemoryVectorStore

    store = InMemoryVectorStore(EMBED)
    store.add_documents(CHUNKS)
    got: list[Any] = []

    def loader(chunks: Sequence[Document], *, filter: Any = None) -> list[Document]:
        got.append(filter)
        return [PARENTS[c.metadata["doc_id"]] for c in chunks]

    def only_t1(doc: Document) -> bool:
        return doc.metadata["tenant"] == "t1"

    retriever = store.as_retriever(search_kwargs={"filter": only_t1})
    route = SelfRoute(
        retriever=retriever.with_retry(stop_after_attempt=2),
        llm=ScriptedChatModel(rag_output="unanswerable"),
        parent_loader=loader,
    )
    route.invoke("chunk")
    assert got == [only_t1]


def test_hook_returning_a_foreign_parent_is_refused() -> None:
    route, model = hook_route(parent_loader=lambda chunks: [PARENTS["B"], PARENTS["X"]])
    with pytest.raises(sr.ConfigurationError, match="'X', which none of the retrieved chunks"):
        route.invoke("Q?")
    assert not model.stage_calls("long_context")


def test_hook_returning_garbage_is_refused() -> None:
    route, _ = hook_route(parent_loader=lambda chunks: "not a list")
    with pytest.raises(sr.ConfigurationError, match="expected a list of Document"):
        route.invoke("Q?")


def test_hook_returning_nothing_raises_long_context_error() -> None:
    route, _ = hook_route(parent_loader=lambda chunks: [])
    with pytest.raises(sr.LongContextError) as info:
        route.invoke("Q?")
    assert info.value.partial.reason is Reason.DECLINED


async def test_async_hook_and_sync_hook_in_async_calls() -> None:
    calls: list[str] = []

    async def aloader(chunks: Sequence[Document]) -> list[Document]:
        calls.append("async")
        return [PARENTS["B"]]

    def loader(chunks: Sequence[Document]) -> list[Document]:
        calls.append("sync")
        return [PARENTS["A"]]

    both, _ = hook_route(parent_loader=loader, aparent_loader=aloader)
    assert (await both.ainvoke("Q?")).answer == "In 1901."
    both.invoke("Q?")
    assert calls == ["async", "sync"]
    sync_only, model = hook_route(parent_loader=loader)
    await sync_only.ainvoke("Q?")  # runs in a worker thread
    assert calls[-1] == "sync" and "PARENT A" in model.stage_calls("long_context")[0][2]
    async_only, _ = hook_route(aparent_loader=aloader)
    assert (await async_only.ainvoke("Q?")).answer == "In 1901."
    with pytest.raises(sr.ConfigurationError, match="only aparent_loader"):
        async_only.invoke("Q?")


def test_parents_mode_requires_the_hook_and_rejects_per_call_documents() -> None:
    route, _ = hook_route(parent_loader=lambda chunks: [PARENTS["A"]], long_context="parents")
    with pytest.raises(sr.InvalidInputError, match="from 'parents'"):
        route.invoke({"question": "Q?", "document": "text"})
    auto, model = hook_route(parent_loader=lambda chunks: [PARENTS["A"]])
    auto.invoke({"question": "Q?", "document": "PER CALL"})  # auto: the per-call document wins
    assert "PER CALL" in model.stage_calls("long_context")[0][2]
