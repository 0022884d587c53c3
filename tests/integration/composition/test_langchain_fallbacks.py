"""``route.with_fallbacks([other])`` falls back however it is run.

The primary's RAG model answers (the scripted model of ``_shared``), its long-context provider is
down (every request gets HTTP 503). The RAG-routed question never needs the long-context step:
the primary answers it. The question the RAG step declines needs it: the primary fails with
``LongContextError`` before any answer text, so every way of running the chain (``invoke``,
``batch``, ``stream``, ``astream``, ``astream_events`` with and without filters, a LangGraph node
in every stream mode) must give the backup's answer, and no stream may have sent anything of the
failed primary (``RunnableWithFallbacks`` switches only before the first chunk).
"""

from __future__ import annotations

import asyncio
import functools
import operator
from collections.abc import Iterator
from typing import Any, TypedDict

import httpx
import pytest
from langchain_core.runnables import Runnable

from langchain_selfroute import SelfRoute, SelfRouteChunk
from selfroute import LongContextError, Route
from tests.integration.composition._shared import (
    ANSWERS,
    DECLINE_Q,
    DECLINED_TEXT,
    LC_ANSWER,
    RAG_Q,
    ROUTES,
    canon,
    manual_documents,
)
from tests.support._loopback import Reply
from tests.support.clients import chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

#: The backup's marker in its answers' metadata (the primary's output has no ``served_by`` key).
BACKUP = "backup"


@pytest.fixture(scope="module")
def down() -> Iterator[ScriptedOpenAIServer]:
    """A long-context provider that is down: every request gets HTTP 503."""
    with ScriptedOpenAIServer(lambda body: Reply(status=503, text="overloaded")) as srv:
        yield srv


def _llm(server: ScriptedOpenAIServer, **kw: Any) -> Any:
    """``ChatOpenAI`` with its own async client: the default one is cached per base URL and
    bound to the event loop it first ran on, and each test runs its own loop."""
    return chat_openai(server, http_async_client=httpx.AsyncClient(timeout=10), **kw)


def _primary(server: ScriptedOpenAIServer, down: ScriptedOpenAIServer) -> SelfRoute:
    return SelfRoute(
        llm=_llm(server),
        long_context_llm=_llm(down, model="gpt-4.1"),
        document=manual_documents()[0],
        k=2,
    )


def _backup(server: ScriptedOpenAIServer) -> SelfRoute:
    return SelfRoute(llm=_llm(server), document=manual_documents()[0], k=2)


@pytest.fixture
def chain(server: ScriptedOpenAIServer, down: ScriptedOpenAIServer) -> Runnable[Any, Any]:
    """The primary (named ``primary``) with the backup (named ``backup``) as its fallback."""
    primary = _primary(server, down).with_config(run_name="primary")
    backup = _backup(server).with_config(run_name="backup")
    return primary.with_fallbacks([backup])


def _join(chunks: list[Any]) -> Any:
    assert chunks, "the stream was empty"
    return functools.reduce(operator.add, chunks)


def _fell_back(question: str) -> bool:
    return question == DECLINE_Q


def test_the_primary_alone_fails_before_any_chunk(
    server: ScriptedOpenAIServer, down: ScriptedOpenAIServer
) -> None:
    """What the fallback relies on: the failing primary raises before yielding anything."""
    primary = _primary(server, down)
    seen: list[SelfRouteChunk] = []
    with pytest.raises(LongContextError):
        for chunk in primary.stream(DECLINE_Q):
            seen.append(chunk)
    assert seen == []

    async def astream() -> list[SelfRouteChunk]:
        got: list[SelfRouteChunk] = []
        with pytest.raises(LongContextError):
            async for chunk in primary.astream(DECLINE_Q):
                got.append(chunk)
        return got

    assert asyncio.run(astream()) == []
    assert down.calls >= 2  # the long-context provider was really asked (and refused)


def test_invoke_batch_stream_astream_agree(chain: Runnable[Any, Any], question: str) -> None:
    invoked = chain.invoke(question)
    assert invoked.answer == ANSWERS[question]
    assert invoked.route is ROUTES[question]
    batched = chain.batch([question, question])
    streamed = list(chain.stream(question))

    async def runs() -> tuple[Any, list[Any], Any]:
        achunks = [c async for c in chain.astream(question)]
        return await chain.ainvoke(question), achunks, await chain.abatch([question])

    ainvoked, achunks, abatched = asyncio.run(runs())
    expected = canon(invoked)
    for got in (*batched, _join(streamed), ainvoked, _join(achunks), *abatched):
        assert canon(got) == expected
    for chunks in (streamed, achunks):
        # every chunk is the answering route's, the first one already carries answer text
        assert chunks[0].text and chunks[0].route is ROUTES[question]
        assert DECLINED_TEXT not in "".join(c.text for c in chunks).lower()
        assert chunks[-1].output is not None


def test_astream_events_fall_back(chain: Runnable[Any, Any], question: str) -> None:
    async def events(**filters: Any) -> list[dict[str, Any]]:
        return [dict(e) async for e in chain.astream_events(question, version="v2", **filters)]

    async def runs() -> tuple[list[dict[str, Any]], ...]:
        # one event loop: ChatOpenAI's pooled async client is bound to the loop it first ran on
        return (
            await events(),
            await events(include_names=["primary", "backup"]),
            await events(include_types=["chat_model"], exclude_tags=["nostream"]),
        )

    everything, by_name, tokens = asyncio.run(runs())
    final = next(
        e["data"]["output"]
        for e in everything
        if e["event"] == "on_chain_end" and not e["parent_ids"]
    )
    assert final.answer == ANSWERS[question]
    streams = [e for e in everything if e["event"] == "on_chain_stream"]
    top = [e["data"]["chunk"] for e in streams if not e["parent_ids"]]
    assert canon(_join(top)) == canon(final)
    names = {e["name"] for e in streams if e["parent_ids"]}
    # only the route that answered streamed anything: the failed primary sent no chunk
    assert names == ({"backup"} if _fell_back(question) else {"primary"})

    # filters: the clean event of each route, and model tokens without the RAG step's
    chunks = [e["data"]["chunk"] for e in by_name if e["event"] == "on_chain_stream"]
    assert {e["name"] for e in by_name if e["event"] == "on_chain_stream"} == names
    assert _join(chunks).text == ANSWERS[question]
    text = "".join(e["data"]["chunk"].text for e in tokens if e["event"] == "on_chat_model_stream")
    # the RAG-routed question's tokens are all nostream; the fallen-back one shows the backup's
    # long-context answer, never a decline
    assert text == (LC_ANSWER if _fell_back(question) else "")


def test_batch_with_exceptions_falls_back_per_input(chain: Runnable[Any, Any]) -> None:
    outs = chain.batch([RAG_Q, DECLINE_Q], return_exceptions=True)
    assert [o.answer for o in outs] == [ANSWERS[RAG_Q], ANSWERS[DECLINE_Q]]
    aouts = asyncio.run(chain.abatch([DECLINE_Q, RAG_Q], return_exceptions=True))
    assert [o.answer for o in aouts] == [ANSWERS[DECLINE_Q], ANSWERS[RAG_Q]]


def test_answer_only_chain_streams_the_fallback(
    server: ScriptedOpenAIServer, down: ScriptedOpenAIServer
) -> None:
    """The string form (``answer_only``) falls back when streamed too."""
    chain = _primary(server, down).answer_only().with_fallbacks([_backup(server).answer_only()])
    assert "".join(chain.stream(DECLINE_Q)) == LC_ANSWER

    async def astream() -> str:
        return "".join([c async for c in chain.astream(DECLINE_Q)])

    assert asyncio.run(astream()) == LC_ANSWER


def test_only_the_handled_errors_fall_back(
    server: ScriptedOpenAIServer, down: ScriptedOpenAIServer
) -> None:
    """``exceptions_to_handle=(LongContextError,)``: the failure is that type when streamed."""
    chain = _primary(server, down).with_fallbacks(
        [_backup(server)], exceptions_to_handle=(LongContextError,)
    )
    assert _join(list(chain.stream(DECLINE_Q))).answer == LC_ANSWER
    other = _primary(server, down).with_fallbacks(
        [_backup(server)], exceptions_to_handle=(KeyError,)
    )
    with pytest.raises(LongContextError):
        list(other.stream(DECLINE_Q))


class _State(TypedDict, total=False):
    question: str
    answer: str
    route: str


def _graph(chain: Runnable[Any, Any], *, streamed: bool) -> Any:
    from langgraph.graph import END, START, StateGraph

    def node(state: _State) -> dict[str, Any]:
        if streamed:  # a node that streams the chain (and so its tokens) itself
            out = _join(list(chain.stream(state["question"])))
        else:
            out = chain.invoke(state["question"])
        return {"answer": out.answer, "route": out.route.value}

    async def anode(state: _State) -> dict[str, Any]:
        if streamed:
            out = _join([c async for c in chain.astream(state["question"])])
        else:
            out = await chain.ainvoke(state["question"])
        return {"answer": out.answer, "route": out.route.value}

    builder = StateGraph(_State)
    builder.add_node("answer", node, afunc=anode)  # type: ignore[call-overload]
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile()


@pytest.mark.parametrize("streamed", [False, True], ids=["node_invokes", "node_streams"])
def test_inside_a_langgraph_node(chain: Runnable[Any, Any], question: str, streamed: bool) -> None:
    graph = _graph(chain, streamed=streamed)
    value = {"question": question}
    expected = {"question": question, "answer": ANSWERS[question], "route": ROUTES[question].value}
    assert graph.invoke(value) == expected
    assert list(graph.stream(value, stream_mode="values"))[-1] == expected
    messages = list(graph.stream(value, stream_mode="messages"))

    async def arun() -> tuple[Any, Any, list[Any]]:
        values = [v async for v in graph.astream(value, stream_mode="values")]
        amessages = [m async for m in graph.astream(value, stream_mode="messages")]
        final = None
        async for event in graph.astream_events(value, version="v2"):
            if event["event"] == "on_chain_end" and not event["parent_ids"]:
                final = event["data"]["output"]
        return values[-1], final, amessages

    avalue, final, amessages = asyncio.run(arun())
    assert avalue == final == expected
    for got in (messages, amessages):
        # "messages" mode skips the nostream RAG runs: only long-context tokens show, and only
        # the backup's (the primary's long-context call never produced one)
        text = "".join(m.text for m, _ in got)
        assert DECLINED_TEXT not in text.lower()
        assert text == (LC_ANSWER if _fell_back(question) else "")


def test_primary_route_reported_when_it_answers(chain: Runnable[Any, Any]) -> None:
    """The RAG-routed question never touches the long-context provider: no fallback."""
    out = chain.invoke(RAG_Q)
    assert out.route is Route.RAG and out.answer == ANSWERS[RAG_Q]


@pytest.mark.parametrize(
    "settings",
    [{"rag_down": True}, {"speculate_below": 1e9}, {"stream_hold_chars": 80}],
    ids=["both_providers_down", "speculating", "holding_rag_text"],
)
def test_stream_falls_back_off_the_happy_path(
    server: ScriptedOpenAIServer, down: ScriptedOpenAIServer, settings: dict[str, Any]
) -> None:
    """The RAG provider down too (the failed RAG call escalates, then the long-context one
    fails), a speculative long-context call, RAG text held for its first sentence: the stream
    still has sent nothing when the primary fails, so the fallback answers."""
    rag_down = settings.pop("rag_down", False)
    primary = SelfRoute(
        llm=_llm(down if rag_down else server),
        long_context_llm=_llm(down, model="gpt-4.1"),
        document=manual_documents()[0],
        k=2,
        **settings,
    )
    chain = primary.with_fallbacks([_backup(server)])
    question = RAG_Q if rag_down else DECLINE_Q
    streamed: list[Any] = list(chain.stream(question))
    assert _join(streamed).answer == ANSWERS[question] and streamed[0].text

    async def astream() -> list[Any]:
        return [c async for c in chain.astream(question)]

    achunks = asyncio.run(astream())
    assert _join(achunks).answer == ANSWERS[question] and achunks[0].text
