"""The real MCP client over streamable HTTP, for the ``selfroute serve`` tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized ``ClientSession`` on ``URL/mcp``, with ``Authorization: Bearer KEY``."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def mcp_ask(url: str, question: str, key: str | None = None) -> dict[str, Any]:
    """The structured content of one ``ask`` call in a fresh session."""
    async with mcp_session(url, key) as session:
        result = await session.call_tool("ask", {"question": question})
    assert not result.is_error, result.content
    return dict(result.structured_content)
