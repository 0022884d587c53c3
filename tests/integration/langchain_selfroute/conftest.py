"""Fixtures of the LangChain adapter's integration tests: loopback servers started once per
module (reset before each test) and the real clients pointed at them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.langchain_selfroute.helpers import PROVIDERS, Provider
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def loopback_servers() -> Iterator[dict[str, Any]]:
    """Both loopback servers, started once per module (each test resets them)."""
    with ScriptedOpenAIServer() as openai, ScriptedGeminiServer() as gemini:
        yield {"openai": openai, "gemini": gemini}


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest, loopback_servers: dict[str, Any]) -> Provider:
    """Each real client family in turn, its server reset for the test."""
    server = loopback_servers[request.param]
    server.reset()
    return Provider(request.param, server)


@pytest.fixture
def openai(loopback_servers: dict[str, Any]) -> Provider:
    """The real ChatOpenAI family only."""
    server = loopback_servers["openai"]
    server.reset()
    return Provider("openai", server)
