"""``create_retrieval_chain`` swapped for ``SelfRoute.as_retrieval_chain()``, the rest unchanged.

The downstream steps (a report built from ``input``, ``chat_history``, ``context`` and
``answer``; a ``RunnablePassthrough.assign`` counting the documents; a streaming consumer reading
``answer`` deltas and the ``context`` chunk) are written against ``create_retrieval_chain``
(``langchain_classic``) and run as they are over the swap, through the real ``ChatOpenAI`` on a
loopback server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnableLambda, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_selfroute import HashingEmbeddings, SelfRoute, SelfRouteOutput, index_documents
from selfroute import Route
from tests.integration.composition._shared import (
    ANSWERS,
    DECLINE_Q,
    RAG_Q,
    ROUTES,
    manual_documents,
    manual_text,
)
from tests.support.clients import chat_openai as _chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

classic = pytest.importorskip("langchain_classic.chains")
pytestmark = pytest.mark.integration


def chat_openai(server: ScriptedOpenAIServer, **kw: Any) -> Any:
    """``ChatOpenAI`` with its own async client (the default one is cached per base URL and
    bound to the event loop it first ran on; each test runs its own loop)."""
    return _chat_openai(server, http_async_client=httpx.AsyncClient(timeout=10), **kw)


HISTORY = [HumanMessage("Hi, I have a Zephyr rover."), AIMessage("How can I help?")]


def _store() -> InMemoryVectorStore:
    store = InMemoryVectorStore(HashingEmbeddings())
    index_documents(store, manual_documents())
    return store


def _original(server: ScriptedOpenAIServer, store: InMemoryVectorStore) -> Runnable[Any, Any]:
    from langchain_classic.chains.combine_documents import create_stuff_documents_chain

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {input}")
    combine = create_stuff_documents_chain(chat_openai(server), prompt)
    retriever = store.as_retriever(search_kwargs={"k": 2})
    return classic.create_retrieval_chain(retriever, combine)  # type: ignore[no-any-return]


def _swapped(server: ScriptedOpenAIServer, store: InMemoryVectorStore) -> Runnable[Any, Any]:
    return SelfRoute.from_vectorstore(store, llm=chat_openai(server), k=2).as_retrieval_chain()


def _report(out: dict[str, Any]) -> dict[str, Any]:
    """A downstream step written for create_retrieval_chain's output."""
    assert all(isinstance(d, Document) for d in out["context"])
    return {
        "question": out["input"],
        "turns": len(out["chat_history"]),
        "answer": out["answer"],
        "sources": sorted({d.metadata["doc_id"] for d in out["context"]}),
    }


def _downstream(chain: Runnable[Any, Any]) -> Runnable[Any, Any]:
    counted = RunnablePassthrough.assign(n_docs=lambda x: len(x["context"]))
    return chain | counted | RunnableLambda(lambda x: {**_report(x), "n_docs": x["n_docs"]})


def _consume_stream(chunks: list[dict[str, Any]]) -> tuple[str, list[Document]]:
    """A streaming consumer written for create_retrieval_chain: answer deltas, the context."""
    text, context = "", []
    for chunk in chunks:
        if "answer" in chunk:
            text += chunk["answer"]
        if "context" in chunk:
            context = chunk["context"]
    return text, context


@pytest.fixture(scope="module")
def store() -> InMemoryVectorStore:
    return _store()


def _value(question: str) -> dict[str, Any]:
    return {"input": question, "chat_history": HISTORY}


@pytest.mark.parametrize("make", [_original, _swapped], ids=["create_retrieval_chain", "swap"])
def test_the_same_downstream_chain_runs_over_both(
    make: Callable[..., Runnable[Any, Any]],
    server: ScriptedOpenAIServer,
    store: InMemoryVectorStore,
    question: str,
) -> None:
    chain = make(server, store)
    value = _value(question)
    report = _downstream(chain).invoke(value)
    assert report["question"] == question and report["turns"] == 2
    assert report["answer"] == ANSWERS[question] and "zephyr" in report["sources"]
    assert report["n_docs"] >= 1

    out = chain.invoke(value)
    assert {"input", "chat_history", "context", "answer"} <= set(out)
    assert out["chat_history"] == HISTORY and isinstance(out["answer"], str)
    text, context = _consume_stream(list(chain.stream(value)))
    assert text == out["answer"] and context == out["context"]

    async def arun() -> tuple[Any, Any, list[dict[str, Any]], list[Any]]:
        return (
            await _downstream(chain).ainvoke(value),
            await chain.ainvoke(value),
            [c async for c in chain.astream(value)],
            await chain.abatch([value, _value(RAG_Q)]),
        )

    areport, aout, achunks, batched = asyncio.run(arun())
    assert areport == report and aout["answer"] == out["answer"]
    assert _consume_stream(achunks) == (text, context)
    assert [b["answer"] for b in batched] == [ANSWERS[question], ANSWERS[RAG_Q]]


def test_context_is_what_the_answer_used(
    server: ScriptedOpenAIServer, store: InMemoryVectorStore
) -> None:
    """RAG-routed: the retrieved chunks shown to the RAG step; long-context routed: the whole
    parent documents the long-context model read (not the chunks that did not answer)."""
    chain = _swapped(server, store)
    rag = chain.invoke(_value(RAG_Q))
    full = rag["selfroute"]
    assert isinstance(full, SelfRouteOutput) and full.route is Route.RAG
    assert rag["context"] == full.sources and len(rag["context"]) == 2
    assert all(len(d.page_content) < len(manual_text()) for d in rag["context"])

    escalated = chain.invoke(_value(DECLINE_Q))
    assert escalated["selfroute"].route is ROUTES[DECLINE_Q]
    parents = escalated["context"]
    assert parents == escalated["selfroute"].long_context_documents
    by_id = {d.metadata["doc_id"]: d.page_content for d in parents}
    assert by_id["zephyr"] == manual_text()  # the whole document, not its chunks
    assert {s.metadata["doc_id"] for s in escalated["selfroute"].sources} == set(by_id)
    # streamed the same way
    _, streamed_context = _consume_stream(list(chain.stream(_value(DECLINE_Q))))
    assert streamed_context == parents


def test_swap_streams_nothing_before_the_answer_and_falls_back(
    server: ScriptedOpenAIServer, store: InMemoryVectorStore
) -> None:
    """Every chunk of the swap carries answer text or is the last one (so ``with_fallbacks``
    still switches); a fallback to the original chain works when streamed."""
    from tests.support._loopback import Reply

    with ScriptedOpenAIServer(lambda body: Reply(status=503)) as down:
        broken = SelfRoute.from_vectorstore(
            store, llm=chat_openai(server), long_context_llm=chat_openai(down), k=2
        ).as_retrieval_chain()
        chain = broken.with_fallbacks([_original(server, store)])
        chunks = list(chain.stream(_value(DECLINE_Q)))
    text, context = _consume_stream(chunks)
    assert text == ANSWERS[DECLINE_Q] and context  # the original chain answered
    swapped = list(_swapped(server, store).stream(_value(DECLINE_Q)))
    assert all(c.get("answer") for c in swapped[:-1]) and "context" in swapped[-1]
