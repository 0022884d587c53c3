"""Fixtures of the composition suites: one loopback server per module, both questions."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.composition._shared import QUESTIONS, respond
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    """The scripted model (``_shared.respond``) behind the real clients, once per module."""
    with ScriptedOpenAIServer(respond) as srv:
        yield srv


@pytest.fixture(params=QUESTIONS, ids=["rag", "declined"])
def question(request: pytest.FixtureRequest) -> str:
    """The RAG-routed question, then the one the RAG step declines."""
    return str(request.param)
