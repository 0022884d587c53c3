"""Issue 16, findings 2, 15 and 16: the store under a missing root, other writers, read-only
media and broken databases -- through ``selfroute`` and ``DocumentStore``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentStore
from tests.integration.cli.scripted import copy_docs
from tests.support._loopback import prompt_text
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- finding 2: --prune on a root that is gone --------------------------------------------------
def test_prune_on_a_missing_folder_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    copy_docs(tmp_path / "docs")
    assert run(capsys, "index", "docs", "--embedding", "offline", "--progress", "never")[0] == 0
    before = json.loads(run(capsys, "stats", "--json")[1])["documents"]
    assert before > 0
    shutil.move(tmp_path / "docs", tmp_path / "moved")  # an unmounted share, a moved folder
    code, out, err = run(capsys, "index", "docs", "--prune", "--progress", "never")
    assert code == 1 and "no such file or directory" in out + err
    assert "not pruned  docs: missing or unreadable, nothing removed" in out
    assert json.loads(run(capsys, "stats", "--json")[1])["documents"] == before
    # JSON report says the same.
    code, out, _ = run(capsys, "index", "docs", "--prune", "--json", "--progress", "never")
    report = json.loads(out)["report"]
    assert report["removed"] == [] and report["not_pruned"] == [str(tmp_path / "docs")]


def test_prune_with_one_root_missing_still_prunes_the_others(tmp_path: Path) -> None:
    a, b = copy_docs(tmp_path / "a"), copy_docs(tmp_path / "b")
    store = DocumentStore(tmp_path / "store", embedding="offline")
    store.index([a, b])
    (a / "packet_switching.pdf").unlink()
    shutil.rmtree(b)
    report = DocumentStore(tmp_path / "store", embedding="offline").index([a, b], prune=True)
    assert [Path(p).name for p in report.removed] == ["packet_switching.pdf"]
    assert report.not_pruned == [str(b)]
    assert not any(str(b) in p for p in report.removed)


# -- finding 15: a long-lived reader sees what another process indexed -------------------------
VOLCANO = "The volcano Zentharia erupted with purple ash in the spring of that year. " * 30
LIGHTHOUSE = "The lighthouse keeper Mara lit the lamp every night at nine o'clock. " * 30


def _index_in_another_process(store: Path, folder: Path) -> None:
    code = (
        "from selfroute.stores import DocumentStore; "
        f"DocumentStore({str(store)!r}, embedding='offline').index([{str(folder)!r}], prune=True)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_long_lived_retriever_sees_another_process_index(tmp_path: Path, mode: str) -> None:
    from selfroute.stores import HybridRetriever

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "lighthouse.txt").write_text(LIGHTHOUSE)
    (b / "volcano.txt").write_text(VOLCANO)
    store = DocumentStore(tmp_path / "store", embedding="offline")
    store.index([a])
    retriever = HybridRetriever(store, mode=mode, k=1)
    assert retriever.retrieve("Which volcano erupted with purple ash?")[0].text.startswith("The l")
    _index_in_another_process(tmp_path / "store", b)  # another process adds a document
    (top,) = retriever.retrieve("Which volcano erupted with purple ash?")
    assert Path(top.metadata["source"]).name == "volcano.txt"
    # ... and rewrites it: the new text is served, never the old one.
    (b / "volcano.txt").write_text(VOLCANO.replace("purple", "golden"))
    _index_in_another_process(tmp_path / "store", b)
    (top,) = retriever.retrieve("Which volcano erupted with golden ash?")
    assert "golden" in top.text and "purple" not in top.text
    assert [d.text for d in retriever.long_context([top])] == [VOLCANO.replace("purple", "golden")]


def test_chat_sees_documents_indexed_while_it_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    openai_server: ScriptedOpenAIServer,
) -> None:
    """``selfroute chat`` (dense retrieval): between two questions another process indexes a
    document; the second question's RAG prompt holds it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-000000000000000000000")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lighthouse.txt").write_text(LIGHTHOUSE)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "volcano.txt").write_text(VOLCANO)
    assert run(capsys, "index", "docs", "--embedding", "offline", "--progress", "never")[0] == 0
    questions = iter(["Who lit the lamp?\n", "Which volcano erupted with purple ash?\n", ""])

    class Stdin:
        calls = 0

        def isatty(self) -> bool:
            return False

        def readline(self) -> str:
            Stdin.calls += 1
            if Stdin.calls == 2:
                _index_in_another_process(tmp_path / ".selfroute", tmp_path / "more")
            return next(questions)

    monkeypatch.setattr("sys.stdin", Stdin())
    openai_server.responder = lambda body: "An answer."
    argv = ["chat", "--retrieval", "dense", "--k", "1", "--model", "m"]
    assert run(capsys, *argv, "--base-url", openai_server.base_url)[0] == 0
    second = prompt_text(openai_server.requests[1])
    assert "Zentharia" in second


# -- finding 16: read-only, full, damaged and locked stores -------------------------------------
def _indexed_store(tmp_path: Path) -> Path:
    docs = copy_docs(tmp_path / "docs")
    DocumentStore(tmp_path / "store", embedding="offline").index([docs])
    return tmp_path / "store"


def _run_quiet(argv: list[str]) -> bool:
    return subprocess.run(argv, capture_output=True, check=False).returncode == 0


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    """An indexed store in a read-only folder: a read-only bind mount when running as root
    (root ignores permission bits), else the permission bits themselves."""
    store = _indexed_store(tmp_path)
    if os.geteuid() != 0:
        for p in [store, *store.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
        yield store
        for p in [store, *store.rglob("*")]:
            p.chmod(p.stat().st_mode | 0o200)
        return
    mount = tmp_path / "mounted"
    mount.mkdir()
    if not _run_quiet(["mount", "--bind", str(store), str(mount)]):
        pytest.skip("cannot make a read-only folder here (root without mount)")
    try:
        if not _run_quiet(["mount", "-o", "remount,bind,ro", str(mount)]):
            pytest.skip("cannot remount read-only here")
        yield mount
    finally:
        _run_quiet(["umount", "-l", str(mount)])


ROOT = Path(__file__).resolve().parents[3]


def _copies(tmpdir: Path) -> list[Path]:
    return sorted(tmpdir.glob("selfroute-readonly-*"))


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("command", ["chat", "ask"])
def test_a_read_only_stores_private_copy_is_removed_when_the_process_is_signalled(
    read_only_store: Path, tmp_path: Path, signame: str, command: str
) -> None:
    import signal
    import threading
    import time

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "selfroute.cli", command, "--store", str(read_only_store)]
    release = threading.Event()

    def slow(body: object) -> str:
        release.wait(60)  # ask is waiting for the model, holding the copy open
        return "late"

    srv = ScriptedOpenAIServer(slow).start()
    if command == "ask":
        argv += ["Who proclaimed the oil embargo?", "--model", "m", "--base-url", srv.base_url]
    else:
        argv += ["--model", "offline"]  # chat waits for a question on stdin
    sig = getattr(signal, signame)

    def default_disposition() -> None:
        # a shell started with nohup (or a CI runner) hands its children an ignored SIGHUP, and the
        # CLI rightly keeps an inherited "ignore"; this test is about the default disposition
        signal.signal(sig, signal.SIG_DFL)

    proc = subprocess.Popen(
        argv,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_disposition,
    )
    try:
        deadline = time.monotonic() + 60
        while not _copies(tmpdir) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _copies(tmpdir), proc.communicate(timeout=30)
        while command == "ask" and srv.calls == 0 and time.monotonic() < deadline:
            time.sleep(0.05)  # retrieved from the copy, now asking the model
        time.sleep(0.5)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        release.set()
        srv.stop()
    assert proc.returncode == -sig, err  # ended as the signal would
    assert _copies(tmpdir) == [], "the private copy (document text) outlived " + signame


def test_a_read_only_store_can_be_queried(
    read_only_store: Path,
    capsys: pytest.CaptureFixture[str],
    openai_server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfroute.stores import HybridRetriever

    with pytest.raises(OSError):
        (read_only_store / "probe").write_text("x")  # really read-only
    store = DocumentStore(read_only_store)
    passages = HybridRetriever(store, k=2).retrieve("Who proclaimed the oil embargo?")
    assert passages and store.read_only
    assert store.stats().documents == 4
    code, out, err = run(capsys, "stats", "--store", str(read_only_store))
    assert code == 0 and "documents    4" in out
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-000000000000000000000")
    openai_server.responder = lambda body: "An answer."
    argv = ["ask", "Who proclaimed the oil embargo?", "--store", str(read_only_store)]
    code, out, err = run(capsys, *argv, "--model", "m", "--base-url", openai_server.base_url)
    assert code == 0 and "An answer." in out
    docs = read_only_store.parent / "docs"
    code, out, err = run(capsys, "index", str(docs), "--store", str(read_only_store))
    assert code == 1 and f"the store at {read_only_store} is not writable" in err


def test_a_full_disk_says_no_space_left(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a small tmpfs needs root")
    full = tmp_path / "full"
    full.mkdir()
    if not _run_quiet(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(full)]):
        pytest.skip("cannot mount a tmpfs here")
    try:
        docs = tmp_path / "big"
        docs.mkdir()
        for i in range(12):  # ~2.4 MB of distinct words: more than the 2 MB device holds
            (docs / f"d{i}.txt").write_text(" ".join(f"w{i}x{j}" for j in range(20_000)))
        argv = ["index", str(docs), "--store", str(full / "store"), "--embedding", "offline"]
        code, _, err = run(capsys, *argv, "--progress", "never")
        assert code == 1
        assert f"no space left on the device holding the store at {full / 'store'}" in err
        assert "compaction" not in err.split("(")[0]
    finally:
        _run_quiet(["umount", "-l", str(full)])


COMPACTOR = (
    "Error sending backfill request to compactor: Error executing plan: Failed to apply logs to "
    "the metadata segment"
)


class _Failing:
    """A Chroma collection whose every read raises what Chroma 1.x raises on a full disk."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in ("get", "query", "count", "peek"):

            def fail(*args: Any, **kwargs: Any) -> Any:
                raise Exception(COMPACTOR)  # chromadb raises a bare Exception here

            return fail
        return attr


@pytest.mark.parametrize("command", ["stats", "ask", "ask-bm25", "ask-dense"])
@pytest.mark.parametrize(
    "free", [1024 * 1024, None, 10 * 2**30], ids=["low-disk", "space-unknown", "space-left"]
)
def test_a_full_disk_is_named_when_reading_too(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    openai_server: ScriptedOpenAIServer,
    command: str,
    free: int | None,
) -> None:
    from selfroute.stores import _connection, _health

    store = _indexed_store(tmp_path)
    real_open = _connection.StoreConnection.open

    def open_failing(self: Any, create: bool = False) -> tuple[Any, Any]:
        chunks, docs = real_open(self, create)
        return _Failing(chunks), _Failing(docs)

    monkeypatch.setattr(_connection.StoreConnection, "open", open_failing)
    monkeypatch.setattr(_health, "_free_bytes", lambda path: free)
    argv = [command.split("-")[0], "--store", str(store)]
    if command.startswith("ask"):
        openai_server.responder = lambda body: "An answer."
        argv += ["Who proclaimed the oil embargo?", "--model", "m"]
        argv += ["--base-url", openai_server.base_url, "--embedding", "offline"]
        if "-" in command:
            argv += ["--retrieval", command.split("-")[1]]
    code, out, err = run(capsys, *argv)
    assert code == 1, (out, err)
    assert f"the store at {store}" in err, err
    if free == 1024 * 1024:
        assert "no space left on the device holding the store" in err and "1.0 MB free" in err
    else:  # Chroma's write on read failed: the likely condition is named
        assert "could not write to its database" in err and "probably full" in err, err
        assert COMPACTOR in err  # and what Chroma said, for the record
    assert "Traceback" not in err


def _damage(database: Path) -> None:
    """Overwrite every page but the first (the header): which tables a partial damage hits
    depends on the store's record layout, and a damaged store must be named whatever it hit."""
    data = bytearray(database.read_bytes())
    page = 4096
    pages = len(data) // page
    for i in range(1, pages):
        data[i * page : (i + 1) * page] = b"\xde\xad\xbe\xef" * (page // 4)
    database.write_bytes(bytes(data))


def test_a_damaged_database_is_named_as_such(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    openai_server: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = _indexed_store(tmp_path)
    _damage(store / "chroma.sqlite3")
    code, _, err = run(capsys, "stats", "--store", str(store))
    assert code == 1 and f"the store at {store} is damaged" in err
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-000000000000000000000")
    argv = ["ask", "Who proclaimed the oil embargo?", "--store", str(store), "--model", "m"]
    code, _, err = run(capsys, *argv, "--base-url", openai_server.base_url)
    assert code == 1 and f"the store at {store} is damaged" in err
    assert "no long context" not in err
    assert openai_server.calls == 0


def test_a_locked_database_fails_after_a_bounded_wait(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfroute.stores import StoreError

    store = _indexed_store(tmp_path)
    monkeypatch.setattr("selfroute.stores._connection.LOCK_TIMEOUT_S", 0.5)
    opened = DocumentStore(store)
    assert opened.committed_ids()  # a long-lived reader, opened before the lock
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time\n"
            f"c = sqlite3.connect({str(store / 'chroma.sqlite3')!r}, isolation_level=None)\n"
            "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        code, _, err = run(capsys, "stats", "--store", str(store))
        assert code == 1 and f"the store at {store} is locked by another process" in err
        with pytest.raises(StoreError, match="locked by another process"):
            opened.committed_ids()
    finally:
        holder.kill()
        holder.wait()
    assert run(capsys, "stats", "--store", str(store))[0] == 0  # released: fine again
