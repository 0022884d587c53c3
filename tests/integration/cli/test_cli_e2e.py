"""End to end: the real ``selfroute`` console script against a loopback OpenAI-compatible server.

Each test runs the installed command in a subprocess (as a user would), with the offline
embedding and real vendored documents: index, ask questions that route each way, re-index without
duplicates, survive a SIGKILL in the middle of ``index``, and give the same answers from a real
``chroma run`` server.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from selfroute import chunk_text
from selfroute.stores import read_document
from tests.integration.cli.scripted import CLERK, OIL, copy_docs
from tests.support.chroma_server import ChromaServer
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


def _command() -> list[str]:
    script = Path(sys.executable).parent / "selfroute"
    return [str(script)] if script.exists() else [sys.executable, "-m", "selfroute.cli"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in KEYS and not k.startswith("SELFROUTE_")}
    env.update(ANONYMIZED_TELEMETRY="False", PYTHONUNBUFFERED="1", **extra)
    return env


def cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*_command(), *args],
        cwd=cwd,
        env=env or _env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def expected(docs: Path) -> dict[str, int]:
    """doc_id -> number of 300-word chunks, computed without the store."""
    out = {}
    for path in docs.iterdir():
        doc = read_document(path)
        out[doc.doc_id] = len(chunk_text(doc.text, doc_id=doc.doc_id))
    return out


def stats(cwd: Path, *extra: str) -> dict[str, Any]:
    done = cli("stats", "--json", "--documents", *extra, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def assert_complete(data: dict[str, Any], docs: Path) -> None:
    """The store holds exactly the documents' chunks: none missing, none duplicated."""
    want = expected(docs)
    assert data["orphan_chunks"] == 0
    assert {d["doc_id"]: d["chunks"] for d in data["document_list"]} == want
    assert data["chunks"] == sum(want.values())
    assert data["bm25"] == "current" and data["bm25_chunks"] == sum(want.values())


def ask(
    cwd: Path, server: ScriptedOpenAIServer, question: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return cli(
        "ask", question, "--base-url", server.base_url, "--model", "reader-small", *extra, cwd=cwd
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``docs/`` indexed by the real command into ``./.selfroute``."""
    root = tmp_path_factory.mktemp("e2e")
    copy_docs(root / "docs")
    done = cli("index", "docs", "--embedding", "offline", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "indexed 4 of 4 files" in done.stdout and "4 new" in done.stdout
    assert "Traceback" not in done.stderr
    return root


def test_index_then_rerun_adds_nothing(workdir: Path) -> None:
    before = stats(workdir)
    assert before["documents"] == 4 and before["embedding"] == "offline:selfroute-hashing-384"
    assert_complete(before, workdir / "docs")
    again = cli("index", "docs", cwd=workdir)  # the recorded embedding is reused
    assert again.returncode == 0, again.stderr
    assert "0 new, 0 changed, 4 unchanged" in again.stdout
    assert stats(workdir) == before


def test_ask_answered_from_chunks(workdir: Path, reader_server: ScriptedOpenAIServer) -> None:
    done = ask(workdir, reader_server, OIL.question, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["route"], result["reason"], result["answer"]) == ("rag", "answered", OIL.answer)
    assert [s["stage"] for s in result["steps"]] == ["rag"]
    assert any(OIL.evidence in s["text"] for s in result["sources"])
    assert result["sources"][0]["metadata"]["source"].endswith("1973_oil_crisis.html")
    rag_prompt = reader_server.requests[0]["messages"][-1]["content"]
    assert result["steps"][0]["usage"]["input_tokens"] == len(
        rag_prompt.split()
    )  # provider-reported
    assert result["long_context_tokens"] > result["usage"]["input_tokens"]
    assert 0 < result["token_ratio"] < 1
    assert result["models"] == {
        "rag": f"openai:reader-small at {reader_server.base_url}",
        "long_context": f"openai:reader-small at {reader_server.base_url}",
    }
    assert reader_server.calls == 1  # no long-context call


def test_ask_falls_back_to_the_whole_document(
    workdir: Path, reader_server: ScriptedOpenAIServer
) -> None:
    done = ask(
        workdir,
        reader_server,
        CLERK.question,
        "--stream",
        "--lc-model",
        "reader-large",
        "--show-sources",
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith(CLERK.answer)
    assert "route       long_context  [declined]" in out
    assert "rag " in out and "long_context " in out and "total" in out
    assert "always-LC" in out and "ratio" in out and "latency" in out and "sources" in out
    assert [r["model"] for r in reader_server.requests] == ["reader-small", "reader-large"]
    assert all(r.get("stream") for r in reader_server.requests)
    lc_prompt = reader_server.requests[1]["messages"][-1]["content"]
    carol = read_document(workdir / "docs" / "christmas_carol_stave_one.txt").text
    assert carol.strip() in lc_prompt  # the whole parent document, loaded from the store


def test_a_missing_key_is_one_clear_line(workdir: Path) -> None:
    no_key = cli("ask", OIL.question, cwd=workdir)
    assert no_key.returncode == 2
    assert no_key.stderr.count("\n") == 1 and "Traceback" not in no_key.stderr
    assert "OPENAI_API_KEY" in no_key.stderr and "--base-url" in no_key.stderr


def _index_until(cwd: Path, marker: str, occurrence: int) -> subprocess.Popen[str]:
    """Start ``index`` with the test hook stopping it right after the ``occurrence``-th
    ``marker`` event, and return once it got there (the process is still alive)."""
    proc = subprocess.Popen(
        [*_command(), "index", "docs", "--embedding", "offline"],
        cwd=cwd,
        env=_env(SELFROUTE_TEST_SLOW_INDEX=f"{marker}#{occurrence}"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    seen = 0
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if line.startswith(f"[selfroute-test] {marker} "):
            seen += 1
            if seen == occurrence:
                return proc
    proc.kill()
    proc.wait()
    raise AssertionError(f"index never reached {marker} #{occurrence}")


def test_a_killed_index_leaves_a_consistent_store_and_a_rerun_completes(
    tmp_path: Path, reader_server: ScriptedOpenAIServer
) -> None:
    docs = copy_docs(tmp_path / "docs")
    # killed after the first file was committed and the second file's chunks were written,
    # before its document record (the commit marker)
    proc = _index_until(tmp_path, "chunks-written", 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    partial = stats(tmp_path)
    assert partial["documents"] == 1 and partial["orphan_chunks"] > 0
    first = partial["document_list"][0]
    assert first["path"].endswith("1973_oil_crisis.html")  # files are indexed in name order
    # the store answers from what was committed, and never serves the half-written file
    done = ask(tmp_path, reader_server, OIL.question, "--json", "--k", "10")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["answer"] == OIL.answer
    assert {s["doc_id"] for s in result["sources"]} == {first["doc_id"]}

    rerun = cli("index", "docs", cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert "3 new, 0 changed, 1 unchanged" in rerun.stdout
    assert_complete(stats(tmp_path), docs)


def test_a_chroma_server_behaves_like_the_embedded_store(
    workdir: Path,
    chroma_server: ChromaServer,
    reader_server: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = chroma_server.url
    server_flags = (
        "--chroma-url",
        url,
        "--collection",
        "e2e-docs",
        "--store",
        str(tmp_path / "local"),
    )
    done = cli(
        "index", str(workdir / "docs"), "--embedding", "offline", *server_flags, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "4 new" in done.stdout and f"store {url} [e2e-docs]" in done.stdout
    remote, local = stats(tmp_path, *server_flags), stats(workdir)
    for key in (
        "documents",
        "chunks",
        "words",
        "embedding",
        "orphan_chunks",
        "document_list",
        "bm25",
    ):
        assert remote[key] == local[key], key
    # the same questions in-process (same code as the command) against both stores
    from selfroute.cli import main

    for question in (OIL.question, CLERK.question):
        answers = []
        for where, flags in ((workdir, ()), (tmp_path, server_flags)):
            monkeypatch.chdir(where)
            code = main(
                [
                    "ask",
                    question,
                    "--json",
                    "--base-url",
                    reader_server.base_url,
                    "--model",
                    "m",
                    *flags,
                ]
            )
            assert code == 0
            answers.append(json.loads(capsys.readouterr().out))
        for key in ("route", "reason", "answer", "long_context_tokens", "token_ratio"):
            assert answers[0][key] == answers[1][key], (question, key)
        assert [s["text"] for s in answers[0]["sources"]] == [
            s["text"] for s in answers[1]["sources"]
        ]
