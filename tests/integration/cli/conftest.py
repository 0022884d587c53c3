"""Fixtures of the CLI integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from selfroute.stores import DocumentStore
from tests.integration.cli.scripted import copy_docs, reader
from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def reader_server(openai_server: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    """The loopback OpenAI server answering as the scripted reader."""
    openai_server.responder = reader
    return openai_server


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """``(docs, store)``: the vendored documents indexed offline once per module."""
    root = tmp_path_factory.mktemp("indexed")
    docs = copy_docs(root / "docs")
    DocumentStore(root / "store", embedding="offline").index([docs])
    yield docs, root / "store"
