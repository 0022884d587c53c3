"""The ``selfroute`` command never prints an API key, even when the provider echoes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.reliability._chat import is_rag
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support._loopback import last_user_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

cli = pytest.importorskip("selfroute.cli")

FAKE_KEY = "sk-proj-CliEchoKey0123456789abcdefghijkl"


@pytest.fixture
def indexed_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "acme.txt").write_text(TENANT_DOCS["acme"][0][1])
    assert cli.main(["index", "docs", "--embedding", "offline", "--progress", "never"]) == 0
    return tmp_path


def ask(server: ScriptedOpenAIServer, *extra: str) -> int:
    return int(
        cli.main(
            ["ask", "Which region grew?", "--base-url", server.base_url, "--model", "m", *extra]
        )
    )


def test_cli_never_prints_the_key(
    indexed_cwd: Path,
    openai_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    echo = Reply(f"Incorrect API key provided: {FAKE_KEY}.", status=401)
    transient = Reply(f"Service unavailable for key {FAKE_KEY}.", status=503)
    capsys.readouterr()
    # RAG call fails transiently and escalates: the JSON result records the (redacted) error.
    # (A rejection such as 401 is not escalated: issue #16, finding 10.)
    openai_server.responder = lambda body: (
        transient if is_rag(last_user_text(body)) else "Northern."
    )
    assert ask(openai_server, "--json", "--max-retries", "0") == 0
    first = capsys.readouterr()
    result = json.loads(first.out)
    assert result["reason"] == "rag_error" and "503" in result["error"]
    # Both calls fail: a one-line error on stderr.
    openai_server.responder = lambda body: echo
    assert ask(openai_server) != 0
    second = capsys.readouterr()
    assert "401" in second.err
    for text in (first.out, first.err, second.out, second.err):
        assert FAKE_KEY not in text
