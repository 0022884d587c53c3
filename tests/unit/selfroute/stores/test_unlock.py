"""``selfroute unlock`` (``stores._unlock``): what a dead writer left is cleared, in order, and
nothing is touched while a writer may still be running.

The marks are put on an embedded collection's metadata the way a server writer puts them
(``CollectionMarks.mark_writer``'s note); the same code reads a server collection's
(tests/integration/cli/test_server_retrieval.py runs it against a real ``chroma run``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentStore, StoreError
from selfroute.stores._journal import Journal, writer_lock
from selfroute.stores._unlock import parse_mark, release_dead_writers
from selfroute.stores._visibility import marks_in, writer_key
from tests.unit.selfroute.stores.notes import write_notes

MakeStore = Callable[..., DocumentStore]
WORDS = ["lighthouse", "keeper", "lamp", "storm", "boat", "harbour", "passkey", "vault", "ledger"]
ORPHAN = "feedfacefeedface:0"
SINCE = "2026-12-01T10:00:00+00:00"


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _leave(store: DocumentStore, marks: dict[str, str], orphan: bool = True) -> None:
    """What killed writers leave: their marks and (between chunks and records) a chunk whose
    document has no record."""
    chunks, _ = store._open()
    chunks.modify(metadata={**dict(chunks.metadata or {}), **marks})
    if orphan:
        chunks.upsert(ids=[ORPHAN], embeddings=[[0.1] * 384], metadatas=[{"doc_id": ORPHAN[:-2]}])


def _state(make_store: MakeStore) -> tuple[dict[str, object], bool, int]:
    store = make_store()
    chunks, _ = store._open()
    meta = store._conn.client(create=False).get_collection(chunks.name).metadata
    return marks_in(meta), bool(chunks.get(ids=[ORPHAN])["ids"]), store.stats().orphan_chunks


@pytest.fixture
def indexed(tmp_path: Path, make_store: MakeStore) -> MakeStore:
    write_notes(tmp_path / "notes", 5, WORDS)
    make_store().index([tmp_path / "notes"])
    return make_store


def test_a_dead_writers_mark_and_orphans_are_cleared(indexed: MakeStore) -> None:
    host = socket.gethostname()
    key = "selfroute:writer:0123456789abcdef"
    pid = _dead_pid()
    note = f"{host} pid {pid} {SINCE}"
    _leave(indexed(), {key: note})
    assert _state(indexed) == ({key: note}, True, 1)
    assert parse_mark(key, note).describe() == f"host {host} pid {pid} since {SINCE}"
    report = release_dead_writers(indexed())
    assert [m.key for m in report.marks_removed] == [key] and report.marks_removed[0].host == host
    assert report.orphan_chunks_removed == 1 and not report.journal_cleared
    assert _state(indexed) == ({}, False, 0)
    assert not release_dead_writers(indexed()).changed  # a second run has nothing to do
    assert len(indexed().committed_ids()) == 5  # committed documents are untouched


@pytest.mark.parametrize("where", ["another host", "a live process", "an unreadable note"])
def test_a_writer_that_may_be_running_is_refused_and_nothing_changes(
    where: str, indexed: MakeStore
) -> None:
    key = "selfroute:writer:fedcba9876543210"
    note = {
        "another host": f"{socket.gethostname()}-elsewhere pid 4242 {SINCE}",
        "a live process": f"{socket.gethostname()} pid {os.getppid()} {SINCE}",
        "an unreadable note": "written by hand",
    }[where]
    _leave(indexed(), {key: note})
    with pytest.raises(StoreError, match=r"not unlocking: writer mark .*unlock --force"):
        release_dead_writers(indexed())
    assert _state(indexed) == ({key: note}, True, 1)  # the orphan and the mark stay
    report = release_dead_writers(indexed(), force=True)  # the caller knows the run is over
    assert [m.key for m in report.marks_removed] == [key] and report.orphan_chunks_removed == 1
    assert _state(indexed) == ({}, False, 0)


def test_a_held_writer_lock_is_refused_even_with_force(indexed: MakeStore) -> None:
    store = indexed()
    own = writer_key(store._conn.journal_path)  # this folder's own writer, killed or running
    _leave(store, {own: f"{socket.gethostname()} pid {os.getpid()} {SINCE}"})
    with writer_lock(store._conn.path, store._conn.collection_name):  # a running `index`
        with pytest.raises(StoreError, match="another `selfroute index` is writing"):
            release_dead_writers(indexed(), force=True)
    assert _state(indexed)[1:] == (True, 1)
    # once its lock is free the mark is dead (whatever its process id says)
    report = release_dead_writers(indexed())
    assert [m.key for m in report.marks_removed] == [own]
    assert _state(indexed) == ({}, False, 0)


def test_a_killed_embedded_run_leaves_a_journal_that_unlock_completes(
    indexed: MakeStore,
) -> None:
    store = indexed()
    Journal(store._conn.journal_path).begin([ORPHAN[:-2]])  # killed between chunks and records
    _leave(store, {})
    assert not store._reader.is_clean()
    report = release_dead_writers(indexed())
    assert report.journal_cleared and report.orphan_chunks_removed == 1 and not report.marks_removed
    assert indexed()._reader.is_clean() and _state(indexed) == ({}, False, 0)
    # the next run finds nothing left to recover
    again = indexed().index([store._conn.path.parent / "notes"])
    assert again.orphan_chunks_removed == 0 and again.unchanged == 5


def test_the_cli_reports_refuses_and_forces(
    indexed: MakeStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = ["--store", str(tmp_path / "store")]
    assert main(["unlock", *store]) == 0
    assert "nothing to unlock" in capsys.readouterr().out
    key = "selfroute:writer:00000000000000aa"
    _leave(indexed(), {key: f"gone-host pid 7 {SINCE}"})
    assert main(["unlock", *store]) == 1
    err = capsys.readouterr().err
    assert "host gone-host" in err and "unlock --force" in err
    assert main(["unlock", *store, "--force", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (
        report["marks_removed"][0]["host"] == "gone-host" and report["orphan_chunks_removed"] == 1
    )
    assert _state(indexed) == ({}, False, 0)


def test_a_run_starting_or_finishing_during_the_scan_keeps_its_chunks(
    indexed: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfroute.stores._rows import pack_record

    dead = "selfroute:writer:000000000000dead"
    _leave(indexed(), {dead: f"{socket.gethostname()} pid {_dead_pid()} {SINCE}"})
    real_scan = DocumentStore._iter_chunks
    started = "selfroute:writer:00000000000000ff"

    def scan_while_a_writer_starts(self: DocumentStore, include_text: bool) -> object:
        rows = list(real_scan(self, include_text))
        chunks, _ = self._open()
        chunks.modify(metadata={**dict(chunks.metadata or {}), started: f"far pid 1 {SINCE}"})
        return iter(rows)

    monkeypatch.setattr(DocumentStore, "_iter_chunks", scan_while_a_writer_starts)
    with pytest.raises(StoreError, match=f"writer mark {started} appeared while"):
        release_dead_writers(indexed())
    assert _state(indexed)[1:] == (True, 1)  # nothing deleted, no mark removed
    assert set(_state(indexed)[0]) == {dead, started}
    monkeypatch.undo()

    # the writer that started commits the chunk during the next scan: its chunk stays
    def scan_while_a_writer_commits(self: DocumentStore, include_text: bool) -> object:
        rows = list(real_scan(self, include_text))
        _, documents = self._open()
        documents.upsert(
            ids=[ORPHAN[:-2]], metadatas=[pack_record({"path": "/far.txt"})], embeddings=[[1.0]]
        )
        return iter(rows)

    monkeypatch.setattr(DocumentStore, "_iter_chunks", scan_while_a_writer_commits)
    report = release_dead_writers(indexed(), force=True)
    assert report.orphan_chunks_removed == 0 and {m.key for m in report.marks_removed} == {
        dead,
        started,
    }
    marks, chunk_kept, _ = _state(indexed)
    assert marks == {} and chunk_kept and ORPHAN[:-2] in indexed().committed_ids()
