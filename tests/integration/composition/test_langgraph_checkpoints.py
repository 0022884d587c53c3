"""What SelfRoute puts into LangGraph state survives a checkpoint in strict msgpack mode.

``LANGGRAPH_STRICT_MSGPACK=true`` (LangGraph's announced default) restores only the types on its
allowlist and logs "Blocked deserialization of ..." for the rest. A graph holding SelfRoute's
output (a node's result, or an agent's ``ToolMessage.artifact``) is checkpointed with
``MemorySaver`` and ``SqliteSaver`` in strict mode, interrupted, then resumed by a fresh graph
(for SQLite: a fresh saver on the same database file). Nothing may be blocked (LangGraph's serde
events, which are not deduplicated like its log lines, and the log), and route, answer and usage
must come back whole.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.messages import HumanMessage, ToolMessage

from langchain_selfroute import SelfRoute, SelfRouteOutput
from selfroute import Route, Usage
from tests.integration.composition._shared import ANSWERS, DECLINE_Q, ROUTES, manual_documents
from tests.support.clients import chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[str, Any]]]:
    """Strict msgpack mode, as ``LANGGRAPH_STRICT_MSGPACK=true`` at import sets it; yields the
    serde events (blocked or unregistered types) seen while it is on."""
    import langgraph._internal._serde as graph_serde
    from langgraph.checkpoint.serde import _msgpack, jsonplus
    from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener

    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", True)
    monkeypatch.setattr(graph_serde, "STRICT_MSGPACK_ENABLED", True)
    # the log lines are deduplicated per process: start afresh so each test can see them
    monkeypatch.setattr(jsonplus, "_warned_blocked_types", set())
    monkeypatch.setattr(jsonplus, "_warned_unregistered_types", set())
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(lambda e: events.append(dict(e)))
    try:
        yield events
    finally:
        unregister()


def test_strict_mode_is_on_and_blocks_foreign_types(strict: list[dict[str, Any]]) -> None:
    """The fixture's strict mode really blocks (so the tests below can fail): a selfroute enum
    or dataclass comes back as its raw data, with a blocked event."""
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    serde = JsonPlusSerializer()
    restored = serde.loads_typed(serde.dumps_typed({"r": Route.RAG, "u": Usage.zero()}))
    assert restored["r"] is not Route.RAG and not isinstance(restored["u"], Usage)
    assert {e["name"] for e in strict if e["kind"] == "msgpack_blocked"} == {"Route", "Usage"}


class State(TypedDict, total=False):
    question: str
    user: str
    result: dict[str, Any]
    report: str


def _route(server: ScriptedOpenAIServer) -> SelfRoute:
    return SelfRoute(llm=chat_openai(server), document=manual_documents()[0], k=2)


def _graph(route: SelfRoute, saver: Any) -> Any:
    """answer (SelfRoute) -> report (reads the result back typed); interrupted before report."""
    from langgraph.graph import END, START, StateGraph

    def answer(state: State) -> dict[str, Any]:
        return {"result": route.invoke(state)}

    def report(state: State) -> dict[str, Any]:
        out = SelfRouteOutput.model_validate(state["result"])
        return {"report": f"{out.route.value}:{out.usage.total_tokens}:{out['user']}"}

    builder = StateGraph(State)
    builder.add_node("answer", answer)
    builder.add_node("report", report)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=saver, interrupt_before=["report"])


@contextmanager
def _memory() -> Iterator[Callable[[], Any]]:
    from langgraph.checkpoint.memory import MemorySaver

    saver = MemorySaver()  # one store; each graph gets it, as a process would keep it
    yield lambda: saver


@contextmanager
def _sqlite(path: Path) -> Iterator[Callable[[], Any]]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    connections: list[sqlite3.Connection] = []

    def fresh() -> Any:  # a new connection and saver on the same file: nothing kept in memory
        conn = sqlite3.connect(path, check_same_thread=False)
        connections.append(conn)
        return SqliteSaver(conn)

    try:
        yield fresh
    finally:
        for conn in connections:
            conn.close()


@pytest.fixture(params=["memory", "sqlite"])
def savers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Any]]:
    """A factory of checkpointers sharing one store (``MemorySaver`` or a SQLite file)."""
    with _memory() if request.param == "memory" else _sqlite(tmp_path / "cp.sqlite") as make:
        yield make


def _blocked(events: list[dict[str, Any]], caplog: pytest.LogCaptureFixture) -> list[Any]:
    return [e for e in events if e["kind"].startswith("msgpack")] + [
        r.getMessage() for r in caplog.records if "deserializ" in r.getMessage()
    ]


def test_checkpoint_resumes_in_a_fresh_graph(
    strict: list[dict[str, Any]],
    savers: Callable[[], Any],
    server: ScriptedOpenAIServer,
    question: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    route = _route(server)
    thread: Any = {"configurable": {"thread_id": "ann-1"}}
    first = _graph(route, savers())
    paused = first.invoke({"question": question, "user": "ann"}, thread)
    out = paused["result"]
    assert "report" not in paused and out.answer == ANSWERS[question]

    fresh = _graph(route, savers())  # another graph, another saver object: only the store
    saved = fresh.get_state(thread)
    assert saved.next == ("report",)
    restored = saved.values["result"]
    # equal as a mapping, nothing lost or turned into raw ext data
    assert restored == out and restored["route"] == ROUTES[question].value
    typed = SelfRouteOutput.model_validate(restored)
    assert typed.route is ROUTES[question] and typed.answer == out.answer
    assert typed.usage == out.usage and typed.usage.input_tokens > 0
    assert [s.to_dict() for s in typed.steps] == [s.to_dict() for s in out.steps]
    assert typed.sources == out.sources and typed.token_ratio == out.token_ratio
    assert typed.to_dict() == out.to_dict()

    done = fresh.invoke(None, thread)  # resume: the report node reads the restored result
    assert done["report"] == f"{ROUTES[question].value}:{out.usage.total_tokens}:ann"
    again = _graph(route, savers()).get_state(thread)
    assert again.next == () and again.values["result"] == out
    assert _blocked(strict, caplog) == []


def test_agent_tool_artifact_survives_the_checkpoint(
    strict: list[dict[str, Any]],
    savers: Callable[[], Any],
    server: ScriptedOpenAIServer,
    question: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``create_agent`` with ``as_tool``: the ToolMessage's artifact (the whole result) is in the
    agent's checkpointed messages."""
    from langchain.agents import create_agent

    caplog.set_level(logging.WARNING)
    tool = _route(server).as_tool(name="zephyr_manual", description="Answers about the manual.")

    def agent() -> Any:
        return create_agent(
            chat_openai(server, model="gpt-4o"), tools=[tool], checkpointer=savers()
        )

    thread: Any = {"configurable": {"thread_id": "agent-1"}}
    state = agent().invoke({"messages": [HumanMessage(question)]}, thread)
    (tool_message,) = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    restored = agent().get_state(thread).values["messages"]
    (again,) = [m for m in restored if isinstance(m, ToolMessage)]
    assert again.content == tool_message.content == ANSWERS[question]
    assert again.artifact == tool_message.artifact
    typed = SelfRouteOutput.model_validate(again.artifact)
    assert typed.route is ROUTES[question] and typed.usage.total_tokens > 0
    assert _blocked(strict, caplog) == []


def test_typed_values_from_an_older_checkpoint_are_read_plain(
    server: ScriptedOpenAIServer,
) -> None:
    """A mapping holding the typed values older versions stored reads back the same."""
    out = _route(server).invoke(DECLINE_Q)
    old = {**out, "route": out.route, "usage": out.usage, "steps": list(out.steps)}
    assert SelfRouteOutput.model_validate(old) == out
