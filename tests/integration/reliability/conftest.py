"""Fixtures of the reliability integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.reliability._servers import NoDelayOpenAIServer
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A running OpenAI-compatible loopback server (no Nagle delay)."""
    with NoDelayOpenAIServer() as server:
        yield server
