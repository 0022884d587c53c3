"""The indexing journal: which documents may have chunks on disk but no commit marker yet.

Before a batch's chunks are written (or a document is deleted), its document ids are written to a
small file beside the BM25 index; when a run completes, the file is removed. A run that finds the
file left by a killed run knows exactly which documents may have orphan chunks, so it can remove
them without scanning the whole collection: after its own writes, chunks of those ids that are
still not committed are deleted. The chunks of content that was rewritten meanwhile are simply
overwritten (chunk ids are content hashes), so they are not orphans.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from selfroute._locks import release, try_lock
from selfroute.stores._errors import StoreError

__all__ = ["Journal", "writer_lock"]


class Journal:
    """The in-flight document ids of one collection, persisted at ``path``.

    Args:
        path: The journal file (created on the first :meth:`begin`).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.carried: frozenset[str] = frozenset(self._read())
        self._written: set[str] = set(self.carried)

    def _read(self) -> list[str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        ids = data.get("in_flight") if isinstance(data, dict) else None
        return [str(i) for i in ids] if isinstance(ids, list) else []

    def begin(self, doc_ids: Iterable[str]) -> None:
        """Record ``doc_ids`` as in flight (with those carried over from killed runs)."""
        ids = set(doc_ids)
        if ids <= self._written:
            return
        self._written = set(self.carried) | ids
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"in_flight": sorted(self._written)}), encoding="utf-8")
        os.replace(tmp, self.path)

    def clear(self) -> None:
        """The run completed: nothing is in flight."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        self.carried = frozenset()
        self._written = set()


@contextlib.contextmanager
def writer_lock(path: Path, collection: str) -> Iterator[None]:
    """Hold the collection's writer lock in ``path`` (one ``index`` at a time).

    Raises:
        StoreError: Another process holds it.
    """
    lock_path = path / f".index-{collection}.lock"
    handle = try_lock(lock_path)
    if handle is None:
        raise StoreError(
            f"another `selfroute index` is writing collection {collection!r} "
            f"in {path}; wait for it to finish"
        )
    try:
        yield
    finally:
        release(handle)
