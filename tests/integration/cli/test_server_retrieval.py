"""Retrieval on a real ``chroma run`` server: round trips per question, held connections, and
what two clients (a writer and a reader on "another machine") see of each other's runs.

The visibility rules under test (docs/scale.md, selfroute/stores/_visibility.py): chunks whose
document record is missing are never served, even by a reader with no local journal, including
while a writer is stopped between its chunks and its records and after it was killed there; a
writer's committed documents are served by the reader's next question; with no writer marked, a
dense question costs one Chroma request, like the raw query.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from selfroute import document_id
from selfroute.stores import DocumentStore, HybridRetriever, _visibility
from selfroute.stores._embedding import embed_query
from tests.integration.cli.scripted import copy_docs
from tests.support.chroma_server import ChromaServer

pytest.importorskip("chromadb")
pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

NEW_NOTE = "The vault combination for the lighthouse archive is 88-41-93 zeppelin quartz."
QUESTION = "vault combination lighthouse archive zeppelin quartz"
VAULT_DOC = document_id(NEW_NOTE + "\n")  # the id of the document vault.txt below


@pytest.fixture
def requests(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every HTTP request a ``chromadb.HttpClient`` makes, as ``METHOD last-path-part``."""
    from chromadb.api.fastapi import FastAPI

    seen: Counter[str] = Counter()
    real = FastAPI._make_request

    def counting(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        seen[f"{method.upper()} {path.rstrip('/').rsplit('/', 1)[-1]}"] += 1
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(FastAPI, "_make_request", counting)
    yield seen


def _server_store(folder: Path, url: str, collection: str, **kwargs: Any) -> DocumentStore:
    return DocumentStore(folder, collection, chroma_url=url, **kwargs)


def _count_clients(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Record every ``chromadb.HttpClient`` made from here on (its port), with the visibility
    lease long enough that no renewal happens inside the test."""
    import chromadb

    clients: list[object] = []
    real_client = chromadb.HttpClient

    def counting_client(*args: Any, **kwargs: Any) -> Any:
        clients.append(kwargs.get("port"))
        return real_client(*args, **kwargs)

    monkeypatch.setattr(chromadb, "HttpClient", counting_client)
    monkeypatch.setattr(_visibility, "LEASE_S", 3600.0)
    return clients


def test_a_question_costs_one_query_and_the_connection_is_held(
    tmp_path: Path,
    chroma_server: ChromaServer,
    requests: Counter[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:

    url = chroma_server.url
    docs = copy_docs(tmp_path / "docs")
    _server_store(tmp_path / "store", url, "trips", embedding="offline").index([docs])
    clients = _count_clients(monkeypatch)
    store = _server_store(tmp_path / "store", url, "trips")
    retrievers = {m: HybridRetriever(store, mode=m, k=4) for m in ("dense", "bm25", "hybrid")}
    for r in retrievers.values():
        r.retrieve("warm up the oil crisis")  # opens the collections, reads the marks once
    questions = ["oil embargo prices", "packet switching networks", "clerk christmas eve"]
    per_mode: dict[str, Counter[str]] = {}
    for mode, r in retrievers.items():
        requests.clear()
        for q in questions:
            assert r.retrieve(q)
        per_mode[mode] = Counter(requests)
    # dense: exactly the raw query's one request per question (no commit-marker read)
    assert per_mode["dense"] == {"POST query": len(questions)}
    # bm25: the local index ranks, one read fetches the chunks' texts
    assert per_mode["bm25"] == {"POST get": len(questions)}
    # hybrid: the dense query, plus one read of the chunks only BM25 found (when there are any)
    assert per_mode["hybrid"]["POST query"] == len(questions)
    assert per_mode["hybrid"]["POST get"] <= len(questions)
    assert set(per_mode["hybrid"]) <= {"POST query", "POST get"}
    assert len(clients) == 1  # one client for the store, over every question and mode


def _writer(
    folder: Path, store: Path, url: str, collection: str, hook: str
) -> subprocess.Popen[str]:
    """``selfroute index FOLDER`` into the server in a subprocess, stopped by the test hook at
    ``hook`` (``EVENT#N``); returns once it got there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SELFROUTE_")}
    env.update(ANONYMIZED_TELEMETRY="False", PYTHONUNBUFFERED="1", SELFROUTE_TEST_SLOW_INDEX=hook)
    proc = subprocess.Popen(
        [sys.executable, "-m", "selfroute.cli", "index", str(folder), "--store", str(store),
         "--collection", collection, "--chroma-url", url, "--embedding", "offline"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    event = hook.split("#", 1)[0]
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        if line.startswith(f"[selfroute-test] {event} "):
            return proc
    proc.kill()
    proc.wait()
    raise AssertionError(f"index never reached {hook}")


def _raw_ids(store: DocumentStore, question: str) -> list[str]:
    chunks, _ = store._open()
    vector = embed_query(store._conn.embedding_function(), store.embedding, question)
    return list(chunks.query(query_embeddings=[vector], n_results=3)["ids"][0])


def _vault_chunk_ids(store: DocumentStore) -> list[str]:
    """The ids of NEW_NOTE's chunks in ``store``'s collection, by an exact read (no ANN)."""
    chunks, _ = store._open()
    return sorted(chunks.get(where={"doc_id": VAULT_DOC}, include=[])["ids"])


def _chunk_written(store: DocumentStore, server: ChromaServer) -> str:
    """The id of the chunk the stopped writer wrote, once an exact read sees it (30 s at most;
    a clear failure with the server's log otherwise)."""
    deadline = time.monotonic() + 30
    while not (ids := _vault_chunk_ids(store)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(ids) == 1, f"the writer's chunk was never read back: {ids}\n{server.log_tail()}"
    return ids[0]


def _raw_top_when_indexed(store: DocumentStore, server: ChromaServer, question: str) -> str:
    """The writer's chunk, once the raw dense query ranks it first (30 s at most; a clear
    failure naming what the query returned otherwise)."""
    chunk = _chunk_written(store, server)
    deadline = time.monotonic() + 30
    while (ids := _raw_ids(store, question))[0] != chunk and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ids[0] == chunk, (
        f"the dense query never ranked the written chunk {chunk} first: {ids}\n{server.log_tail()}"
    )
    return chunk


def test_a_killed_writer_never_leaks_and_a_finished_run_is_seen_at_once(
    tmp_path: Path, chroma_server: ChromaServer, requests: Counter[str]
) -> None:
    url, name = chroma_server.url, "visibility"
    docs = copy_docs(tmp_path / "docs")
    writer_store = tmp_path / "writer"  # the writer's machine (its journal, its BM25 index)
    _server_store(writer_store, url, name, embedding="offline").index([docs])
    new = tmp_path / "new"
    new.mkdir()
    (new / "vault.txt").write_text(NEW_NOTE + "\n", encoding="utf-8")
    # the reader: another folder, so no local journal can tell it that a run is in progress
    reader = _server_store(tmp_path / "reader", url, name)
    dense = HybridRetriever(reader, mode="dense", k=3)

    def served() -> bool:
        return any("88-41-93" in p.text for p in dense.retrieve(QUESTION))

    assert not served()  # the reader now trusts the unmarked collection for one lease
    proc = _writer(new, writer_store, url, name, "chunks-written#1")
    try:
        # the new chunk is on the server, best match of the question, without its record (the
        # server's vector index may take a moment to show a write to queries: wait for it)
        top = _raw_top_when_indexed(reader, chroma_server, QUESTION)
        assert reader.get_chunks([top])[top][0].startswith("The vault combination")
        assert not served()
        time.sleep(_visibility.LEASE_S * 1.5)
        assert not served()
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # killed between chunks and records: its mark stays, so the reader keeps checking
    time.sleep(_visibility.LEASE_S * 1.5)
    requests.clear()
    assert not served()
    assert requests["POST get"] == 1  # the commit-marker read of the candidates
    assert _vault_chunk_ids(reader) == [top]  # the orphan is still there

    # the writer's rerun completes (and removes its mark): the reader sees it at once
    report = _server_store(writer_store, url, name).index([new])
    assert report.added == [str(new / "vault.txt")]
    assert served()
    time.sleep(_visibility.LEASE_S * 1.5)
    served()  # reads the marks: none left
    requests.clear()
    assert served()
    assert requests == {"POST query": 1}  # back to one request per dense question


def test_chat_holds_one_connection_over_many_questions(
    tmp_path: Path,
    chroma_server: ChromaServer,
    reader_server: Any,
    requests: Counter[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from selfroute.cli import main
    from tests.integration.cli.scripted import CLERK, OIL, PACKETS

    url = chroma_server.url
    docs = copy_docs(tmp_path / "docs")
    _server_store(tmp_path / "store", url, "chatting", embedding="offline").index([docs])
    clients = _count_clients(monkeypatch)
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    questions = [OIL.question, CLERK.question, PACKETS.question, OIL.question]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(questions) + "\nexit\n"))
    capsys.readouterr()
    requests.clear()
    code = main(
        ["chat", "--store", str(tmp_path / "store"), "--collection", "chatting",
         "--chroma-url", url, "--retrieval", "dense", "--base-url", reader_server.base_url,
         "--model", "reader"]
    )  # fmt: skip
    out = capsys.readouterr()
    assert code == 0, out.err
    assert out.out.count("route       ") == len(questions)
    assert len(clients) == 1  # one Chroma client for the whole session
    # per question: one dense query and one read of the parent documents (the flow loads them
    # for the long-context route and the always-LC counterfactual); nothing listed or reopened
    assert requests["POST query"] == requests["POST get"] == len(questions)
    opening = {k: v for k, v in requests.items() if k not in ("POST query", "POST get")}
    assert sum(opening.values()) <= 8 and requests["GET chatting"] <= 2  # once per session


def test_marks_follow_the_journal(tmp_path: Path, chroma_server: ChromaServer) -> None:
    from selfroute.stores._journal import Journal
    from selfroute.stores._visibility import marks_in

    url, name = chroma_server.url, "marking"
    docs = copy_docs(tmp_path / "docs")
    store = _server_store(tmp_path / "w", url, name, embedding="offline")
    store.index([docs])

    def marks() -> dict[str, Any]:
        return marks_in(_server_store(tmp_path / "r", url, name)._open()[0].metadata)

    assert marks() == {}  # a complete run leaves none
    assert store.is_clean()
    with store._lock():
        store._open()
        assert len(marks()) == 1 and not store.is_clean()  # its own questions check too
        Journal(store._conn.journal_path).begin(["0123456789abcdef"])  # documents in flight
    assert len(marks()) == 1  # left for the rerun
    store.index([docs])  # completes (clears the journal) and removes its mark
    assert marks() == {} and not store._conn.journal_path.exists()
    # an embedded store is never marked
    local = DocumentStore(tmp_path / "local", name, embedding="offline")
    local.index([docs])
    assert marks_in(local._open()[0].metadata) == {}


def test_unlock_clears_a_dead_writers_mark_and_refuses_a_live_one(
    tmp_path: Path,
    chroma_server: ChromaServer,
    requests: Counter[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from selfroute.cli import main

    url, name = chroma_server.url, "unlocking"
    docs = copy_docs(tmp_path / "docs")
    _server_store(tmp_path / "first", url, name, embedding="offline").index([docs])
    new = tmp_path / "new"
    new.mkdir()
    (new / "vault.txt").write_text(NEW_NOTE + "\n", encoding="utf-8")
    # a writer whose folder (its journal, its rerun) will be gone: another machine's, in effect
    gone = tmp_path / "gone"
    proc = _writer(new, gone, url, name, "chunks-written#1")
    reader = _server_store(tmp_path / "reader", url, name)
    unlock = [
        "unlock",
        "--store",
        str(tmp_path / "reader"),
        "--collection",
        name,
        "--chroma-url",
        url,
    ]
    try:
        orphan = _chunk_written(reader, chroma_server)
        capsys.readouterr()
        assert main(unlock) == 1  # the writer is running: refused, nothing removed
        assert f"process {proc.pid} on this host" in capsys.readouterr().err
        assert _vault_chunk_ids(reader) == [orphan]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert main([*unlock, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [m["pid"] for m in report["marks_removed"]] == [proc.pid]
    assert report["orphan_chunks_removed"] == 1
    # the orphan is gone and no mark is left: dense questions are back to one request
    assert _vault_chunk_ids(reader) == []
    assert orphan not in _raw_ids(reader, QUESTION)
    dense = HybridRetriever(_server_store(tmp_path / "reader2", url, name), mode="dense", k=3)
    dense.retrieve(QUESTION)  # reads the marks: none
    requests.clear()
    assert not any("88-41-93" in p.text for p in dense.retrieve(QUESTION))
    assert requests == {"POST query": 1}
    # the dead writer's own rerun, were its folder still there, would complete as usual
    again = _server_store(gone, url, name).index([new])
    assert again.added == [str(new / "vault.txt")] and again.orphan_chunks_removed == 0
