"""Fixtures of the ``selfroute mcp`` / ``selfroute serve`` tests: the vendored documents indexed
offline into two collections, and the scripted reader model on a loopback server."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from selfroute.stores import DocumentStore
from tests.integration.cli.scripted import FIXTURE_DOCS, copy_docs, reader
from tests.support.openai_server import ScriptedOpenAIServer

KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a ``selfroute`` child process: no keys, no ``SELFROUTE_*``."""
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("SELFROUTE_")}
    env.update(ANONYMIZED_TELEMETRY="False", PYTHONUNBUFFERED="1", **extra)
    return env


def command(*args: str) -> list[str]:
    """``python -m selfroute ARGS`` (the tree under test, as PYTHONPATH says)."""
    return [sys.executable, "-m", "selfroute", *args]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store with three collections, indexed offline once per module: ``main`` (every vendored
    document), ``oil`` (only the oil crisis article) and ``packets`` (only the packet switching
    PDF)."""
    root = tmp_path_factory.mktemp("served")
    docs = copy_docs(root / "docs")
    DocumentStore(root / "store", "main", embedding="offline").index([docs])
    for name, file in (("oil", "1973_oil_crisis.html"), ("packets", "packet_switching.pdf")):
        folder = root / name
        folder.mkdir()
        (folder / file).write_bytes((FIXTURE_DOCS / file).read_bytes())
        DocumentStore(root / "store", name, embedding="offline").index([folder])
    yield root / "store"


@pytest.fixture
def reader_server() -> Iterator[ScriptedOpenAIServer]:
    """The loopback OpenAI server answering as the scripted reader."""
    with ScriptedOpenAIServer(reader) as server:
        yield server
