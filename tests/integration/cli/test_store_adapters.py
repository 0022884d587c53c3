"""The store's hybrid retriever from both adapters, with real clients on the loopback server.

``langchain_selfroute.SelfRouteStoreRetriever`` (a LangChain ``BaseRetriever``) and
``llamaindex_selfroute.SelfRouteStoreRetriever`` (a LlamaIndex ``BaseRetriever``) wrap the same
:class:`selfroute.stores.HybridRetriever`; Self-Route over either must retrieve the same chunks,
take the same route and report the same usage.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from langchain_core.documents import Document

import selfroute as sr
from langchain_selfroute._store_retriever import SelfRouteStoreRetriever as LCRetriever
from llamaindex_selfroute import get_route_result
from llamaindex_selfroute._store_retriever import SelfRouteStoreRetriever as LIRetriever
from selfroute.stores import HybridRetriever, read_document
from tests.integration.cli.scripted import CLERK, OIL
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


def test_langchain_retriever_returns_documents_and_parents(indexed: tuple[Path, Path]) -> None:
    docs, store = indexed
    retriever = LCRetriever.open(store, k=3)
    chunks = retriever.invoke(OIL.question)
    assert len(chunks) == 3 and all(isinstance(c, Document) for c in chunks)
    core = HybridRetriever.open(store, k=3).retrieve(OIL.question)
    assert [c.page_content for c in chunks] == [p.text for p in core]
    assert [c.id for c in chunks] == [p.metadata["chunk_id"] for p in core]
    assert (
        chunks[0].metadata["doc_id"] == core[0].doc_id
        and chunks[0].metadata["score"] == core[0].score
    )
    assert len(retriever.invoke(OIL.question, k=5)) == 5
    parents = retriever.load_parents(chunks)
    assert [p.metadata["doc_id"] for p in parents] == list(
        dict.fromkeys(c.metadata["doc_id"] for c in chunks)
    )
    html = read_document(docs / "1973_oil_crisis.html")
    assert parents[0].page_content == html.text
    assert asyncio.run(retriever.ainvoke(OIL.question)) == chunks
    assert asyncio.run(retriever.aload_parents(chunks)) == parents


def test_llamaindex_retriever_returns_nodes_with_parent_ids(indexed: tuple[Path, Path]) -> None:
    _, store = indexed
    retriever = LIRetriever.open(store, k=3)
    nodes = retriever.retrieve(OIL.question)
    core = HybridRetriever.open(store, k=3).retrieve(OIL.question)
    assert [n.node.get_content() for n in nodes] == [p.text for p in core]
    assert [n.node.ref_doc_id for n in nodes] == [p.doc_id for p in core]
    assert [n.score for n in nodes] == [p.score for p in core]
    parents = retriever.long_context(OIL.question, nodes)
    assert [d.doc_id for d in parents] == list(dict.fromkeys(p.doc_id for p in core))
    assert asyncio.run(retriever.aretrieve(OIL.question))[0].node.node_id == nodes[0].node.node_id


@pytest.mark.parametrize("fact", [OIL, CLERK], ids=["rag", "long_context"])
def test_both_adapters_route_the_same_over_the_store(
    fact: object, indexed: tuple[Path, Path], reader_server: ScriptedOpenAIServer
) -> None:
    _, store = indexed
    question = fact.question  # type: ignore[attr-defined]
    lc_route = LCRetriever.open(store).as_self_route(chat_openai(reader_server))
    lc_result = lc_route.invoke(question).result
    lc_requests = list(reader_server.requests)
    reader_server.reset()
    engine = LIRetriever.open(store).as_query_engine(llamaindex_openai(reader_server))
    li_result = get_route_result(engine.query(question))
    li_requests = list(reader_server.requests)

    assert li_result.answer == lc_result.answer == fact.answer  # type: ignore[attr-defined]
    assert li_result.route is lc_result.route and li_result.reason is lc_result.reason
    assert [p.text for p in li_result.sources] == [p.text for p in lc_result.sources]
    usage = [(s.stage, s.usage.input_tokens, s.usage.output_tokens) for s in lc_result.steps]
    assert [
        (s.stage, s.usage.input_tokens, s.usage.output_tokens) for s in li_result.steps
    ] == usage
    assert li_result.long_context_tokens == lc_result.long_context_tokens
    # both sent the same prompts (the long context is the parent document from the store)
    assert [r["messages"][-1]["content"] for r in li_requests] == [
        r["messages"][-1]["content"] for r in lc_requests
    ]
    if lc_result.route is sr.Route.LONG_CONTEXT:
        assert "earlier next morning" in lc_requests[-1]["messages"][-1]["content"]
