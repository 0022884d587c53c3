"""A password in ``--base-url``/``--chroma-url`` (``http://user:PW@host``) through the real
command: sent as HTTP basic auth to the host after the ``@`` (never resolved as a host name with
the user info in it), and masked in every message (stderr, ``--json`` errors and payloads)."""

from __future__ import annotations

import base64
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

PASSWORD = "Pw-7hunter2"
CHROMA_PASSWORD = "Cp-9swordfish"


@pytest.fixture(autouse=True)
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "SELFROUTE_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def _doc(tmp_path: Path) -> Path:
    doc = tmp_path / "doc.txt"
    doc.write_text("The vault code is 4411. " * 20, encoding="utf-8")
    return doc


def _with_password(url: str, user: str = "alice", password: str = PASSWORD) -> str:
    scheme, rest = url.split("://", 1)
    return f"{scheme}://{user}:{password}@{rest}"


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_a_base_url_password_is_basic_auth_and_never_shown(
    capsys: Any, tmp_path: Path, json_flag: list[str]
) -> None:
    with ScriptedOpenAIServer(lambda body: "4411") as srv:
        url = _with_password(srv.base_url)
        argv = ["ask", "--doc", str(_doc(tmp_path)), "--base-url", url, "--model", "m"]
        code = main([*argv, *json_flag, "What is the vault code?"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert srv.headers, "no request reached the server"
        for headers in srv.headers:
            assert headers["authorization"] == _basic("alice", PASSWORD)
            assert headers["host"] == srv.base_url.split("://")[1].split("/")[0]
    assert "4411" in out
    assert PASSWORD not in out + err
    if json_flag:
        models = json.loads(out)["models"]
        assert "alice:[REDACTED]@127.0.0.1" in models["rag"], models


def test_an_unreachable_base_url_with_a_password_is_masked_and_not_a_host_name(
    capsys: Any, tmp_path: Path
) -> None:
    with ScriptedOpenAIServer(lambda body: "x") as srv:
        url = _with_password(srv.base_url)
    # the server is gone: the port refuses
    argv = ["ask", "--doc", str(_doc(tmp_path)), "--base-url", url, "--model", "m", "--json"]
    code = main([*argv, "--max-retries", "0", "What is the vault code?"])
    out, err = capsys.readouterr()
    assert code == 1
    assert PASSWORD not in out + err
    assert "refused" in err.lower(), err
    assert "Name or service not known" not in err and "gaierror" not in err, err
    assert json.loads(out.splitlines()[-1])["event"] == "error"


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[dict[str, str]]

    def _reply(self) -> None:
        self.seen.append({k.lower(): v for k, v in self.headers.items()})
        body = b'{"error": "scripted"}'
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _reply

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []
    handler = type("Handler", (_Recorder,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("command", ["stats", "ask"])
def test_a_chroma_url_password_is_basic_auth_and_never_shown(
    capsys: Any, tmp_path: Path, recorder: tuple[str, list[dict[str, str]]], command: str
) -> None:
    root, seen = recorder
    url = _with_password(root, "bob", CHROMA_PASSWORD)
    argv = [command, "--chroma-url", url, "--store", str(tmp_path / "s"), "--json"]
    if command == "ask":
        argv += ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "What?"]
    code = main(argv)
    out, err = capsys.readouterr()
    assert code != 0
    assert seen, "the Chroma client never reached the server"
    assert all(h.get("authorization") == _basic("bob", CHROMA_PASSWORD) for h in seen), seen
    assert CHROMA_PASSWORD not in out + err
    assert "bob:[REDACTED]@127.0.0.1" in err, err
