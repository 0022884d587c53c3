"""Fixtures of the ``selfroute mcp`` / ``selfroute serve`` tests: the vendored documents indexed
offline into two collections, and the scripted reader model on a loopback server."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
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


def free_port() -> int:
    """A port nothing listens on now (the server binds it a moment later)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Served:
    """A running ``selfroute serve`` child process.

    Attributes:
        url: ``http://127.0.0.1:PORT``.
        process: The child.
    """

    def __init__(self, store: Path, model: ScriptedOpenAIServer | str, *extra: str) -> None:
        base_url = model if isinstance(model, str) else model.base_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command(
                "serve",
                "--store",
                str(store),
                "--collection",
                "main",
                "--base-url",
                base_url,
                "--model",
                "reader-small",
                "--port",
                str(self.port),
                *extra,
            ),
            env=child_env(),
            cwd=str(store),
            stdout=self.log,
            stderr=self.log,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"selfroute serve exited: {self.output()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"selfroute serve did not start: {self.output()}")

    def output(self) -> str:
        """Everything the child wrote so far."""
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def stop(self) -> int:
        """SIGTERM, then wait; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return int(self.process.returncode)

    def close(self) -> int:
        """Stop, then drop the log; the exit code."""
        code = self.stop()
        self.log.close()
        return code


@pytest.fixture(scope="module")
def module_reader() -> Iterator[ScriptedOpenAIServer]:
    """The scripted reader for a whole module (reset before each test that uses ``model``)."""
    with ScriptedOpenAIServer(reader) as server:
        yield server


@pytest.fixture
def model(module_reader: ScriptedOpenAIServer) -> ScriptedOpenAIServer:
    """The module's reader with its records cleared."""
    module_reader.responder = reader
    module_reader.latency_s = 0.0
    module_reader.reset()
    return module_reader
