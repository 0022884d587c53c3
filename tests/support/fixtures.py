"""Pytest fixtures for the loopback servers (registered from ``tests/conftest.py``).

* ``openai_server`` — fresh `ScriptedOpenAIServer` per test; set ``openai_server.responder``.
* ``gemini_server`` — fresh `ScriptedGeminiServer` per test.
* ``chroma_server`` — one real ``chroma run`` per session (use unique collection names).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.chroma_server import ChromaServer
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["chroma_server", "gemini_server", "openai_server"]


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A running OpenAI-compatible loopback server (default reply: a fixed sentence)."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture
def gemini_server() -> Iterator[ScriptedGeminiServer]:
    """A running Gemini-compatible loopback server (default reply: a fixed sentence)."""
    with ScriptedGeminiServer() as server:
        yield server


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    """A real ``chroma run`` server shared by the session (telemetry off)."""
    with ChromaServer(tmp_path_factory.mktemp("chroma-server")) as server:
        yield server
