"""docs/serve.md as written: its Python examples run against a running ``selfroute serve`` (the
page's ``http://127.0.0.1:8000`` is the test server's address), and its Claude Desktop and VS Code
configurations launch ``selfroute mcp`` through the real stdio MCP client."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.scripted import OIL
from tests.integration.serve.conftest import Served, child_env
from tests.support import docs_runner as dr
from tests.support.openai_server import ScriptedOpenAIServer

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

PAGE = "docs/serve.md"
PAGE_URL = "http://127.0.0.1:8000"


@pytest.fixture(scope="module")
def served(store: Path, module_reader: ScriptedOpenAIServer) -> Iterator[Served]:
    server = Served(store, module_reader)
    yield server
    assert server.close() == 0


def test_the_python_examples_run(served: Served, model: ScriptedOpenAIServer) -> None:
    found = [b for b in dr.blocks(PAGE) if b.kind == "python" and b.marker is None]
    assert len(found) >= 4
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    printed = []
    for block in found:
        out = io.StringIO()
        code = block.code.replace(PAGE_URL, served.url)
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(code, block.where, "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{block.where} failed:\n{block.code}") from exc
        printed.append(out.getvalue())
    assert all(OIL.answer in text for text in printed), printed
    assert "rag answered" in printed[0]


def _configs() -> list[dict[str, Any]]:
    servers = []
    for block in dr.blocks(PAGE):
        if block.kind != "other" or '"command"' not in block.code:
            continue
        data = json.loads(block.code)
        servers += list((data.get("mcpServers") or data.get("servers")).values())
    return servers


@pytest.mark.parametrize("config", _configs(), ids=["claude-desktop", "vscode"])
async def test_the_mcp_configurations_launch(
    config: dict[str, Any], store: Path, model: ScriptedOpenAIServer
) -> None:
    assert config["command"] == "selfroute" and config["args"][0] == "mcp"
    args = [a.replace("/path/to/project/.selfroute", str(store)) for a in config["args"]]
    args = [a.replace("${workspaceFolder}/.selfroute", str(store)) for a in args]
    args = [a for a in args if a != "openai:gpt-4o-mini"]
    args.remove("--model")
    args += ["--collection", "main", "--base-url", model.base_url, "--model", "reader-small"]
    env = child_env(**{k: v for k, v in config.get("env", {}).items()})
    from tests.integration.serve.conftest import command

    cmd = command(*args)
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("ask", {"question": OIL.question})
    assert result.structured_content["answer"] == OIL.answer
