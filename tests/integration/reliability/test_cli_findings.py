"""Issue 16, finding 17 (and the CLI side of 3 and 9): what the ``selfroute`` command prints when
things go wrong, with a real ``ChatOpenAI`` on the loopback server.

* ``--json``: an error is a JSON object on stdout (it used to be plain text with empty stdout).
* A connection reset while the RAG answer streams is not reported as "the model declined".
* ``chat`` after questions that failed (their RAG step paid) does not say "no questions asked".
* Terminal escape sequences in file names and answers are shown escaped, never sent raw.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.reliability._chat import is_rag
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support._loopback import Completion, last_user_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

cli = pytest.importorskip("selfroute.cli")
pytest.importorskip("langchain_selfroute")

KEY = "sk-proj-CliFindingsKey0123456789abcdefgh"
ESC = "\x1b"
DOC = TENANT_DOCS["acme"][0][1]


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (tmp_path / "doc.txt").write_text(DOC)
    return tmp_path


def ask(server: ScriptedOpenAIServer, *extra: str, question: str = "Which region grew?") -> int:
    argv = ["ask", question, "--doc", "doc.txt", "--base-url", server.base_url, "--model", "m"]
    return int(cli.main([*argv, "--max-retries", "0", *extra]))


def test_json_errors_are_json_on_stdout(
    cwd: Path, openai_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    openai_server.responder = lambda body: Reply("overloaded", kind="error", status=503)
    assert ask(openai_server, "--json") == 1
    out, err = capsys.readouterr()
    payload = json.loads(out)
    assert payload["event"] == "error"
    assert payload["error"]["type"] == "LongContextError" and payload["error"]["exit_code"] == 1
    assert "503" in payload["error"]["message"]
    assert payload["partial"]["steps"][0]["stage"] == "rag"  # what was already attempted
    assert "503" in err  # stderr keeps its one-line message
    # A usage error too (exit 2), and streamed JSON ends with an error event.
    assert ask(openai_server, "--json", question="   ") == 2
    assert json.loads(capsys.readouterr().out)["error"]["exit_code"] == 2
    assert ask(openai_server, "--json", "--stream") == 1
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[-1]["event"] == "error"


class ResettingServer(ScriptedOpenAIServer):
    """Streams the first pieces of the RAG answer, then drops the connection (a reset)."""

    def stream_events(self, done: Completion) -> Iterable[bytes]:
        events = list(super().stream_events(done))
        if not is_rag(last_user_text(done.body)):
            yield from events
            return
        yield from events[:8]
        raise ConnectionResetError("simulated reset mid-stream")


def test_reset_mid_stream_is_not_called_a_decline(
    cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rag = "The northern region grew the most according to the operations report this quarter."
    with ResettingServer() as server:
        server.responder = lambda body: rag if is_rag(last_user_text(body)) else "Northern."
        capsys.readouterr()
        assert ask(server, "--stream") == 0
    out = capsys.readouterr().out
    assert "The northern region" in out  # RAG text was shown before the reset
    assert "declined after all" not in out
    assert "withdrawn" in out and "[rag_error]" in out  # the report says what happened


def test_chat_summary_counts_failed_paid_questions(
    cwd: Path,
    openai_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def responder(body: dict[str, Any]) -> Reply:  # RAG declines (paid), then the LC call fails
        if is_rag(last_user_text(body)):
            return Reply("unanswerable", prompt_tokens=120, completion_tokens=2)
        return Reply("down", kind="error", status=503)

    openai_server.responder = responder
    monkeypatch.setattr("sys.stdin", io.StringIO("Which region grew?\nWho approved it?\n"))
    argv = ["chat", "--doc", "doc.txt", "--base-url", openai_server.base_url, "--model", "m"]
    assert cli.main([*argv, "--max-retries", "0"]) == 0
    err = capsys.readouterr().err
    assert "no questions asked" not in err
    assert "2 question(s)" in err and "2 failed" in err
    assert "240 input" in err  # the two paid RAG calls are in the summary


def test_terminal_escapes_in_file_names_and_answers_are_neutralised(
    cwd: Path, openai_server: ScriptedOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    evil = f"The northern region{ESC}]0;owned{chr(7)} grew {ESC}[2J\u202e."
    openai_server.responder = lambda body: evil
    capsys.readouterr()
    assert ask(openai_server) == 0
    out = capsys.readouterr().out
    assert ESC not in out and "\u202e" not in out
    assert "\\x1b]0;owned" in out  # shown, escaped
    docs = cwd / "docs"
    docs.mkdir()
    (docs / f"report{ESC}[31mred.txt").write_text(DOC)
    (docs / "bad\nname.pdf").write_bytes(b"not a pdf")
    assert cli.main(["index", "docs", "--embedding", "offline", "--progress", "never"]) == 0
    assert cli.main(["stats", "--documents"]) == 0
    out, err = capsys.readouterr()
    assert ESC not in out + err
    assert "report\\x1b[31mred.txt" in out and "bad\\x0aname.pdf" in out
