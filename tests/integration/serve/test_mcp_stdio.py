"""``selfroute mcp`` with the real MCP client: ``ClientSession`` over ``stdio_client`` spawning
``python -m selfroute mcp``, the model on a loopback OpenAI-compatible server."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.integration.cli.scripted import CLERK, NOT_THERE, OIL, reader
from tests.integration.serve.conftest import child_env, command
from tests.support.openai_server import Reply, ScriptedOpenAIServer

mcp = pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402


@asynccontextmanager
async def session(
    store: Path, server: ScriptedOpenAIServer | str, *extra: str
) -> AsyncIterator[ClientSession]:
    base_url = server if isinstance(server, str) else server.base_url
    cmd = command(
        "mcp",
        "--store",
        str(store),
        "--collection",
        "main",
        "--base-url",
        base_url,
        "--model",
        "reader-small",
        *extra,
    )
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=child_env(), cwd=str(store))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        yield client


async def test_tools_are_listed_with_schemas(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    async with session(store, reader_server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"ask", "search", "stats"}
    ask = tools["ask"]
    assert ask.input_schema["required"] == ["question"]
    props = ask.output_schema["properties"]
    for key in ("answer", "route", "reason", "abstained", "sources", "steps", "token_ratio"):
        assert key in props
    assert "search" in ask.description and "ask" in tools["search"].description
    assert reader_server.calls == 0  # listing tools calls no model


async def test_ask_routes_to_rag_with_sources_and_tokens(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with session(store, reader_server) as client:
        result = await client.call_tool(
            "ask", {"question": OIL.question}, progress_callback=on_progress
        )
    assert not result.is_error
    data: dict[str, Any] = result.structured_content
    assert (data["route"], data["reason"], data["answer"]) == ("rag", "answered", OIL.answer)
    assert data["abstained"] is False and data["collection"] == "main"
    assert data["sources"] and data["sources"][0]["document"].endswith("1973_oil_crisis.html")
    assert all(isinstance(s["chunk"], int) for s in data["sources"])
    rag_prompt = reader_server.requests[0]["messages"][-1]["content"]
    assert [s["stage"] for s in data["steps"]] == ["rag"]
    assert data["steps"][0]["input_tokens"] == len(rag_prompt.split())  # the provider's count
    assert data["tokens"]["source"] == "provider"
    assert 0 < data["token_ratio"] < 1 and data["saved_tokens"] > 0
    text = result.content[0].text
    assert text.startswith(OIL.answer) and "route: rag" in text and "1973_oil_crisis.html" in text
    assert reader_server.calls == 1
    assert [m for _, m in progress][:2] == [
        "retrieving the top 5 chunks",
        "asking the RAG model to answer from the chunks",
    ]


async def test_ask_falls_back_to_long_context(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    async with session(store, reader_server, "--lc-model", "reader-large") as client:
        result = await client.call_tool("ask", {"question": CLERK.question})
    data = result.structured_content
    assert (data["route"], data["reason"], data["answer"]) == (
        "long_context",
        "declined",
        CLERK.answer,
    )
    assert [s["stage"] for s in data["steps"]] == ["rag", "long_context"]
    assert [r["model"] for r in reader_server.requests] == ["reader-small", "reader-large"]
    usage = sum(len(r["messages"][-1]["content"].split()) for r in reader_server.requests)
    assert data["tokens"]["input_tokens"] == usage


async def test_unanswerable_question_abstains(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    async with session(store, reader_server) as client:
        result = await client.call_tool("ask", {"question": NOT_THERE})
    assert not result.is_error
    assert result.structured_content["abstained"] is True


async def test_search_and_stats_call_no_model(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    async with session(store, reader_server) as client:
        found = await client.call_tool("search", {"query": OIL.question, "k": 3})
        stats = await client.call_tool("stats", {})
    hits = found.structured_content["hits"]
    assert len(hits) == 3 and any(OIL.evidence in h["text"] for h in hits)
    assert hits[0]["document"].endswith("1973_oil_crisis.html")
    assert stats.structured_content["documents"] == 4
    assert stats.structured_content["embedding"].startswith("offline:")
    assert reader_server.calls == 0


BAD_INPUT = [
    ("ask", {"question": ""}, "empty"),
    ("ask", {"question": "   \u200b "}, "visible"),
    ("ask", {"question": "why? " * 5000}, "limit"),
    ("ask", {"question": 42}, "question"),
    ("ask", {"question": ["a", "list"]}, "question"),
    ("ask", {}, "question"),
    ("search", {"query": "oil", "k": "many"}, "k"),
    ("search", {"query": "oil", "k": 0}, "between"),
    ("search", {"query": "oil", "k": 500}, "between"),
    ("search", {"query": ""}, "empty"),
]


async def test_bad_input_is_a_tool_error_and_the_server_lives_on(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    async with session(store, reader_server) as client:
        for tool, arguments, needle in BAD_INPUT:
            bad = await client.call_tool(tool, arguments)
            assert bad.is_error, (tool, arguments)
            assert needle in bad.content[0].text, (arguments, bad.content[0].text)
        good = await client.call_tool("ask", {"question": OIL.question})
    assert good.structured_content["answer"] == OIL.answer
    assert reader_server.calls == 1  # no bad call reached the model


async def test_unknown_tool_is_an_error(store: Path, reader_server: ScriptedOpenAIServer) -> None:
    async with session(store, reader_server) as client:
        bad = await client.call_tool("delete_everything", {})
        assert bad.is_error and "delete_everything" in bad.content[0].text
        assert (await client.call_tool("stats", {})).structured_content["documents"] == 4


async def test_model_server_down_is_a_clear_tool_error(store: Path) -> None:
    down = ScriptedOpenAIServer().start()
    base_url = down.base_url
    down.stop()  # a port nothing listens on
    async with session(store, base_url, "--max-retries", "0") as client:
        bad = await client.call_tool("ask", {"question": OIL.question})
    assert bad.is_error
    assert "could not reach the model server" in bad.content[0].text


async def test_a_cancelled_ask_cancels_the_model_call(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    # the reply comes one byte every 0.1 s (a minute in all): only a closed connection ends it
    reader_server.responder = lambda body: Reply(OIL.answer * 20, kind="drip", drip_s=0.1)
    async with session(store, reader_server, "--timeout", "120") as client:
        with pytest.raises(MCPError):
            await client.call_tool("ask", {"question": OIL.question}, read_timeout_seconds=2)
        deadline = time.monotonic() + 15
        while reader_server.in_flight and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert reader_server.calls == 1 and reader_server.in_flight == 0  # the call was cut
        reader_server.responder = reader
        good = await client.call_tool("ask", {"question": OIL.question})  # the server lives on
    assert good.structured_content["answer"] == OIL.answer


def test_malformed_json_rpc_is_dropped_and_the_server_lives_on(
    store: Path, reader_server: ScriptedOpenAIServer
) -> None:
    import json
    import subprocess

    cmd = command(
        "mcp", "--store", str(store), "--collection", "main", "--base-url", reader_server.base_url
    )
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    lines = [
        "this is not json",
        json.dumps({"jsonrpc": "2.0", "id": 7}),  # neither a request nor a response
        json.dumps(init),
    ]
    done = subprocess.run(
        cmd,
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    # the SDK drops a line it cannot parse (it has no id to answer); the next request is served
    assert [r.get("id") for r in replies] == [1] and "result" in replies[0], done.stdout
    assert "Traceback" not in done.stderr
