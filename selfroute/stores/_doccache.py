"""Whole documents remembered between questions, for as long as the store provably has not changed.

Every RAG-routed question prices always-LC (the counterfactual), which loads the whole parent
documents of its chunks only to count them; a long-lived reader (``selfroute serve``) would read
the same documents again on every question. :class:`DocumentCache` keeps them, keyed on a cheap
mark of the store that any write, by any process, changes:

* the embedded database file's ``stat`` (inode, size, modification and change times) and its
  write-ahead log's if there is one: every committed write (an ``index`` run in another process
  included) rewrites the file, so a changed mark empties the cache;
* the collection objects open (a reopen after another process indexed gives new ones).

A mark whose file changed less than :data:`SETTLE_S` ago is not trusted (a second write within
the file system's timestamp granularity could leave the mark as it was): such reads go to the
store and are not remembered, like every read during an ``index`` run. A Chroma server, or a
client the caller gave, has no such mark: nothing is cached and every read goes to the store.
"""

from __future__ import annotations

import copy
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

__all__ = ["MAX_CHARS", "SETTLE_S", "DocumentCache", "file_mark"]

#: A database file modified less than this long ago gives no mark (see the module docstring).
SETTLE_S = 2.0
#: Characters of document text kept at most (least recently used dropped first).
MAX_CHARS = 64_000_000

#: ``(text, metadata)`` of a document record as read.
Entry = tuple[str, dict[str, Any]]


def _stat_mark(path: Path, now: float) -> tuple[int, int, int, int] | bool | None:
    """``(inode, size, mtime_ns, ctime_ns)`` of ``path``; ``None`` when absent; ``False`` when
    changed too recently to be trusted."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if now - max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 < SETTLE_S:
        return False
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_mark(database: Path, now: float | None = None) -> tuple[Any, ...] | None:
    """A mark of the sqlite ``database`` any committed write changes, or ``None`` (no file, or
    one changed within :data:`SETTLE_S`)."""
    at = time.time() if now is None else now
    main = _stat_mark(database, at)
    if not main:
        return None
    wal = _stat_mark(database.with_name(database.name + "-wal"), at)
    if wal is False:
        return None
    return (main, wal)


class DocumentCache:
    """Document records by id, valid while the store's mark stays the same.

    Thread safe (a server reads from worker threads). :meth:`get` hands out copies of the
    metadata, so a caller changing what it got never changes what the next one gets.
    """

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._max_chars = max_chars
        self._entries: OrderedDict[str, Entry] = OrderedDict()
        self._chars = 0
        self._mark: object = None
        self._lock = threading.Lock()

    def _sync(self, mark: object) -> None:
        if mark != self._mark:
            self._entries.clear()
            self._chars = 0
            self._mark = mark

    def get(self, mark: object, doc_ids: list[str]) -> dict[str, Entry]:
        """The remembered records of ``doc_ids`` under ``mark`` (a new mark forgets them all)."""
        out: dict[str, Entry] = {}
        if mark is None:
            return out
        with self._lock:
            self._sync(mark)
            for doc_id in doc_ids:
                hit = self._entries.get(doc_id)
                if hit is not None:
                    self._entries.move_to_end(doc_id)
                    out[doc_id] = (hit[0], copy.deepcopy(hit[1]))
        return out

    def put(self, mark: object, found: dict[str, Entry]) -> None:
        """Remember the records just read from the store under ``mark`` (``None``: nothing)."""
        if mark is None:
            return
        with self._lock:
            self._sync(mark)
            for doc_id, (text, meta) in found.items():
                if not text or len(text) > self._max_chars or doc_id in self._entries:
                    continue
                self._entries[doc_id] = (text, copy.deepcopy(meta))
                self._chars += len(text)
            while self._chars > self._max_chars and self._entries:
                _, (old, _) = self._entries.popitem(last=False)
                self._chars -= len(old)

    def clear(self) -> None:
        """Forget every record (this process changed the store)."""
        with self._lock:
            self._entries.clear()
            self._chars = 0
            self._mark = None
