"""Loading the long context: parent documents under the retriever's filters, rebuilt in order."""

from __future__ import annotations

from typing import Any

import pytest
from llama_index.core import Document
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

import selfroute as sr
from llamaindex_selfroute import (
    CallableContext,
    FixedContext,
    ParentDocuments,
    WordChunkNodeParser,
)
from llamaindex_selfroute._parents import (
    GAP_MARKER,
    matches_filters,
    rebuild_text,
    to_context_documents,
)
from tests.unit.llamaindex_selfroute._scripted import make_node

TEXT = " ".join(f"w{i}" for i in range(100))


def _chunks(doc: Document, words: int = 10, overlap: int = 0) -> list[TextNode]:
    parser = WordChunkNodeParser(chunk_words=words, overlap_words=overlap)
    return parser.get_nodes_from_documents([doc])  # type: ignore[return-value]


def _f(key: str, value: Any, op: FilterOperator = FilterOperator.EQ) -> MetadataFilter:
    return MetadataFilter(key=key, value=value, operator=op)


# -- filters ---------------------------------------------------------------------------------
def test_matches_filters() -> None:
    md = {"tenant": "a", "year": 2020, "tags": ["x", "y"]}
    assert matches_filters(md, None)
    assert matches_filters(md, MetadataFilters(filters=[]))
    assert matches_filters(md, MetadataFilters(filters=[_f("tenant", "a")]))
    assert not matches_filters(md, MetadataFilters(filters=[_f("tenant", "b")]))
    assert not matches_filters({}, MetadataFilters(filters=[_f("tenant", "a")]))
    assert matches_filters(md, MetadataFilters(filters=[_f("year", 2019, FilterOperator.GT)]))
    assert matches_filters(
        md, MetadataFilters(filters=[_f("tenant", ["a", "c"], FilterOperator.IN)])
    )
    either = MetadataFilters(
        filters=[_f("tenant", "b"), _f("year", 2020)], condition=FilterCondition.OR
    )
    assert matches_filters(md, either)
    nested = MetadataFilters(filters=[_f("tenant", "a"), MetadataFilters(filters=[_f("year", 1)])])
    assert not matches_filters(md, nested)
    assert matches_filters(
        md, MetadataFilters(filters=[_f("tenant", "b")], condition=FilterCondition.NOT)
    )


# -- rebuilding --------------------------------------------------------------------------------
@pytest.mark.parametrize("overlap", [0, 3])
def test_rebuild_from_all_chunks_gives_the_document_back(overlap: int) -> None:
    doc = Document(text="  " + TEXT.replace("w5 ", "w5\n\n") + "\n", id_="d")
    chunks = _chunks(doc, overlap=overlap)
    assert len(chunks) > 5
    assert rebuild_text(list(reversed(chunks))) == doc.text.strip()


def test_rebuild_marks_gaps() -> None:
    chunks = _chunks(Document(text=TEXT, id_="d"))
    text = rebuild_text([chunks[0], chunks[2]])
    assert text == chunks[0].text + GAP_MARKER + chunks[2].text.strip()


def test_rebuild_without_offsets_joins_in_order() -> None:
    nodes = [TextNode(text="first part"), TextNode(text="second part")]
    assert rebuild_text(nodes) == "first part\n\nsecond part"


# -- sources ---------------------------------------------------------------------------------
def test_to_context_documents() -> None:
    docs = to_context_documents(
        ["a", Document(text="b", id_="x", metadata={"k": 1}), sr.ContextDocument("c")]
    )
    assert [(d.text, d.doc_id) for d in docs] == [("a", None), ("b", "x"), ("c", None)]
    assert docs[1].metadata == {"k": 1}
    assert to_context_documents(None) is None and to_context_documents([]) is None
    with pytest.raises(sr.InvalidInputError, match="item 1"):
        to_context_documents(["a", 3])
    with pytest.raises(sr.InvalidInputError):
        to_context_documents(3)


async def test_fixed_and_callable_sources() -> None:
    fixed = FixedContext(Document(text="whole", id_="d"))
    assert [d.text for d in fixed.load("q", [])] == ["whole"]
    assert [d.text for d in await fixed.aload("q", [])] == ["whole"]
    source = CallableContext(lambda q, nodes: f"{q}:{len(nodes)}")
    assert (await source.aload("q", [make_node("x")]))[0].text == "q:1"
    only_async = CallableContext(None, afn=lambda q, n: _coro("async"))
    assert (await only_async.aload("q", []))[0].text == "async"
    with pytest.raises(sr.ConfigurationError, match="aquery"):
        only_async.load("q", [])


async def _coro(value: str) -> str:
    return value


def _docstore(*docs: Document) -> SimpleDocumentStore:
    store = SimpleDocumentStore()
    store.add_documents(list(docs))
    return store


def test_parents_from_docstore_in_rank_order() -> None:
    a = Document(text="Alpha document.", id_="A", metadata={"tenant": "t"})
    b = Document(text="Beta document.", id_="B", metadata={"tenant": "t"})
    source = ParentDocuments(docstore=_docstore(a, b))
    nodes = [make_node("x", "B"), make_node("y", "A"), make_node("z", "B"), make_node("n", None)]
    docs = source.load("q", nodes)
    assert [(d.doc_id, d.text) for d in docs] == [("B", "Beta document."), ("A", "Alpha document.")]
    assert source.load("q", [make_node("x", "missing")]) is None
    assert source.load("q", []) is None


def test_parents_need_a_store() -> None:
    with pytest.raises(sr.ConfigurationError, match="docstore"):
        ParentDocuments()


def test_parent_failing_the_filter_is_rebuilt_from_allowed_chunks_only() -> None:
    # the document itself lacks the chunk-level key: only the chunks passing the filter may be used
    doc = Document(text=TEXT, id_="D")
    chunks = _chunks(doc)
    for i, c in enumerate(chunks):
        c.metadata["section"] = "public" if i != 1 else "private"
    store = _docstore(doc)
    store.add_documents(chunks)
    source = ParentDocuments(
        docstore=store, filters=MetadataFilters(filters=[_f("section", "public")])
    )
    docs = source.load("q", [make_node("w0", "D")])
    assert len(docs) == 1
    assert chunks[1].text.strip() not in docs[0].text
    assert GAP_MARKER.strip() in docs[0].text
    assert docs[0].metadata["selfroute_rebuilt_from_chunks"] == len(chunks) - 1


class _FakeVectorStore:
    """Just enough of a vector store for ParentDocuments (records the filters it gets)."""

    def __init__(self, nodes: list[TextNode], *, ignore_filters: bool = False) -> None:
        self.nodes = nodes
        self.ignore_filters = ignore_filters
        self.filters: list[MetadataFilters] = []

    def get_nodes(self, node_ids, filters=None):
        self.filters.append(filters)
        if self.ignore_filters:
            return list(self.nodes)
        return [
            n
            for n in self.nodes
            if matches_filters({**n.metadata, "ref_doc_id": n.ref_doc_id}, filters)
        ]


def _tenant_chunks(doc_id: str, tenant: str, text: str) -> list[TextNode]:
    return _chunks(Document(text=text, id_=doc_id, metadata={"tenant": tenant}))


def test_parents_rebuilt_from_the_vector_store_with_the_filters() -> None:
    a = _tenant_chunks("A", "a", TEXT)
    b = _tenant_chunks("B", "b", "secret " * 30)
    store = _FakeVectorStore(a + b)
    tenant = MetadataFilters(filters=[_f("tenant", "a")])
    source = ParentDocuments(vector_store=store, filters=tenant)  # type: ignore[arg-type]
    docs = source.load("q", [make_node("w3", "A")])
    assert [d.text for d in docs] == [TEXT]
    sent = store.filters[0]
    assert sent.filters[0].key == "ref_doc_id" and sent.filters[0].value == "A"
    assert sent.filters[1] is tenant


def test_a_store_ignoring_filters_cannot_leak_another_tenant() -> None:
    a = _tenant_chunks("A", "a", TEXT)
    b = _tenant_chunks("B", "b", "secret " * 30)
    for n in b:  # a misbehaving store returns another tenant's chunks under A's id
        n.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id="A")
    store = _FakeVectorStore(a + b, ignore_filters=True)
    source = ParentDocuments(
        vector_store=store,  # type: ignore[arg-type]
        filters=MetadataFilters(filters=[_f("tenant", "a")]),
    )
    docs = source.load("q", [make_node("w3", "A")])
    assert "secret" not in docs[0].text and docs[0].text == TEXT


async def test_aload_matches_load() -> None:
    source = ParentDocuments(docstore=_docstore(Document(text="Alpha.", id_="A")))
    nodes = [make_node("x", "A")]
    assert await source.aload("q", nodes) == source.load("q", nodes)
