"""The collection's BM25 index: loaded when current, rebuilt from the committed chunks when stale."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence

from selfroute.stores._bm25 import BM25Index, fingerprint
from selfroute.stores._connection import StoreConnection
from selfroute.stores._records import StoreReader

__all__ = ["LexicalIndex"]


class LexicalIndex:
    """The BM25 side of a store, saved under the connection's ``bm25_dir``.

    Args:
        connection: The store's connection.
        reader: Its reader (committed ids, chunk scan).
    """

    def __init__(self, connection: StoreConnection, reader: StoreReader) -> None:
        self._conn = connection
        self._reader = reader
        self._index: BM25Index | None = None

    def fingerprint(self, committed: Iterable[str]) -> str:
        """The fingerprint an index of ``committed`` documents is saved under."""
        conn = self._conn
        conn.open()
        return fingerprint(committed, conn.chunk_words, conn.embedding.spec)

    def current(self, committed: Sequence[str] | None = None) -> BM25Index:
        """The BM25 index of the committed chunks, loaded, or rebuilt if stale."""
        ids = self._reader.committed_ids() if committed is None else sorted(committed)
        fp = self.fingerprint(ids)
        if self._index is not None and self._index.fingerprint == fp:
            return self._index
        index = BM25Index.load(self._conn.bm25_dir, fp)
        if index is None:
            index = self.rebuild(ids)[0]
        self._index = index
        return index

    def rebuild(self, committed: Sequence[str] | None = None) -> tuple[BM25Index, list[str]]:
        """Rebuild and save the BM25 index from the committed chunks.

        Returns:
            The index and the ids of orphan chunks seen (chunks without a document record).
        """
        ids = self._reader.committed_ids() if committed is None else sorted(committed)
        keep = set(ids)
        chunk_ids: list[str] = []
        texts: list[str] = []
        orphans: list[str] = []
        for chunk_id, meta, text in self._reader.iter_chunks(include_text=True):
            if meta.get("doc_id") in keep:
                chunk_ids.append(chunk_id)
                texts.append(text or "")
            else:
                orphans.append(chunk_id)
        index = BM25Index.build(chunk_ids, texts, self.fingerprint(ids))
        # a read-only location still leaves the in-memory index serving this process
        with contextlib.suppress(OSError):
            index.save(self._conn.bm25_dir)
        self._index = index
        return index, orphans

    def is_saved(self, committed: Iterable[str]) -> bool:
        """Whether an index of exactly ``committed`` is saved."""
        return self.fingerprint(committed) in BM25Index.saved_fingerprints(self._conn.bm25_dir)

    def state(self) -> tuple[str, int | None]:
        """``("current" | "stale" | "missing", indexed chunks or None)``."""
        fp = self.fingerprint(self._reader.committed_ids())
        saved = BM25Index.saved_fingerprints(self._conn.bm25_dir)
        if fp in saved:
            index = BM25Index.load(self._conn.bm25_dir, fp)
            return ("current", len(index)) if index is not None else ("missing", None)
        return ("stale" if saved else "missing", None)
