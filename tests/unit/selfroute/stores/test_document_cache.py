"""The documents a reader remembers between questions (:mod:`selfroute.stores._doccache`), and the
lock check's held connection (:func:`selfroute.stores._health.check_not_locked`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore, _doccache
from selfroute.stores._health import DATABASE_FILE, check_not_locked


def _counting_gets(store: DocumentStore) -> list[int]:
    """Count the reads of the store's documents collection (patched on the open collection)."""
    _, documents = store._open()
    calls: list[int] = []
    real = documents.get

    def get(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    documents.get = get
    return calls


def _ids(store: DocumentStore) -> list[str]:
    return store.committed_ids()


def test_documents_read_again_come_from_memory_once_the_store_settled(
    docs: Path, make_store: Callable[..., DocumentStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store().index([docs])
    monkeypatch.setattr(_doccache, "SETTLE_S", 0.0)
    store = make_store()
    ids = _ids(store)
    first = store.get_documents(ids)
    calls = _counting_gets(store)
    again = store.get_documents(ids)
    assert calls == []
    assert [(d.doc_id, d.text, d.metadata) for d in again] == [
        (d.doc_id, d.text, d.metadata) for d in first
    ]
    again[0].metadata["source"] = "changed by the caller"
    assert store.get_documents(ids[:1])[0].metadata == first[0].metadata


def test_a_store_written_moments_ago_is_read_every_time(
    docs: Path, make_store: Callable[..., DocumentStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store().index([docs])
    monkeypatch.setattr(_doccache, "SETTLE_S", 1e9)  # every write is "just now"
    store = make_store()
    ids = _ids(store)
    store.get_documents(ids)
    calls = _counting_gets(store)
    store.get_documents(ids)
    store.get_documents(ids)
    assert len(calls) == 2


def test_another_writer_moving_a_file_is_seen_by_the_next_read(
    docs: Path, make_store: Callable[..., DocumentStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store().index([docs])
    monkeypatch.setattr(_doccache, "SETTLE_S", 0.0)
    reader = make_store()
    ids = _ids(reader)
    before = {d.doc_id: d.metadata["source"] for d in reader.get_documents(ids)}
    moved_from = docs / "christmas_carol_stave_one.txt"
    moved_to = docs / "renamed_stave.txt"
    moved_from.rename(moved_to)
    make_store().index([docs], prune=True)  # another writer: its own connection
    after = {d.doc_id: d.metadata["source"] for d in reader.get_documents(ids)}
    assert set(after) == set(before)  # same contents, same ids: only a record changed
    changed = [d for d in ids if after[d] != before[d]]
    assert len(changed) == 1
    assert str(after[changed[0]]).endswith("renamed_stave.txt")


def test_the_mark_is_none_for_a_missing_or_fresh_database(tmp_path: Path) -> None:
    database = tmp_path / "chroma.sqlite3"
    assert _doccache.file_mark(database) is None
    database.write_bytes(b"x")
    assert _doccache.file_mark(database) is None  # written just now
    mark = _doccache.file_mark(database, now=database.stat().st_mtime + 10)
    assert mark is not None
    database.write_bytes(b"xy")
    assert _doccache.file_mark(database, now=database.stat().st_mtime + 10) != mark


def test_the_cache_keeps_at_most_its_characters() -> None:
    cache = _doccache.DocumentCache(max_chars=10)
    cache.put("m", {"a": ("12345", {}), "b": ("67890", {})})
    cache.put("m", {"c": ("abc", {})})  # over the bound: the least recently used goes
    assert set(cache.get("m", ["a", "b", "c"])) == {"b", "c"}
    assert cache.get("other mark", ["b", "c"]) == {}  # a new mark forgets everything
    assert cache.get(None, ["b"]) == {}


def test_the_held_lock_check_never_keeps_a_writer_waiting(
    docs: Path, make_store: Callable[..., DocumentStore]
) -> None:
    store = make_store()
    store.index([docs])
    database = store.path / DATABASE_FILE
    check_not_locked(database, 1.0, "here")
    check_not_locked(database, 1.0, "here")
    writer = sqlite3.connect(database, timeout=0)
    try:
        writer.execute("BEGIN EXCLUSIVE")  # fails at once if the check left a lock behind
        writer.rollback()
    finally:
        writer.close()
    locker = sqlite3.connect(database, timeout=0)
    try:
        locker.execute("BEGIN EXCLUSIVE")
        with pytest.raises(Exception, match="locked by another process"):
            check_not_locked(database, 0.05, "here")
    finally:
        locker.rollback()
        locker.close()
