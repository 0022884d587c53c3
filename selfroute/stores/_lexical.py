"""The collection's BM25 index: loaded when current, updated or rebuilt when the store changed.

After an ``index`` run, :meth:`LexicalIndex.update` starts from the saved index and changes only
what changed: rows of removed documents are dropped, the run's new chunks (and any committed
document the saved index lacks, e.g. after a killed run) are tokenized and added. An index with
no usable predecessor is built from the run's own chunks when they are all the store holds (a
first run), else rebuilt from a scan of every chunk.

Readers (:meth:`LexicalIndex.current` without ``committed``) trust the one saved index, which
the indexer writes after every change, instead of listing every committed document per question;
with no saved index (or several), they fall back to checking the committed documents.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence

from selfroute.stores._bm25 import BM25Index, TokenRows, fingerprint
from selfroute.stores._connection import StoreConnection
from selfroute.stores._records import StoreReader

__all__ = ["LexicalIndex"]


def _doc_of(chunk_id: str) -> str:
    return chunk_id.rsplit(":", 1)[0]


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
        """The BM25 index of the committed chunks, loaded, or rebuilt if stale.

        Without ``committed``, the one index saved by the last ``index`` run is served as is.
        """
        if committed is None:
            saved = BM25Index.saved_fingerprints(self._conn.bm25_dir)
            if len(saved) == 1:
                if self._index is not None and self._index.fingerprint == saved[0]:
                    return self._index
                loaded = BM25Index.load(self._conn.bm25_dir, saved[0])
                if loaded is not None:
                    self._index = loaded
                    return loaded
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

    def _latest(self) -> BM25Index | None:
        saved = BM25Index.saved_fingerprints(self._conn.bm25_dir)
        if self._index is not None and self._index.fingerprint in saved:
            return self._index
        for fp in reversed(saved):
            index = BM25Index.load(self._conn.bm25_dir, fp)
            if index is not None:
                return index
        return None

    def update(
        self,
        committed: Sequence[str],
        added: Mapping[str, str] | None = None,
        progress: Callable[[int], None] | None = None,
        tokens: TokenRows | None = None,
    ) -> tuple[BM25Index, list[str]]:
        """Bring the saved index up to ``committed`` after an ``index`` run.

        Args:
            committed: Ids of the committed documents.
            added: Texts of the chunks the run wrote, by chunk id.
            progress: Called with the number of chunks being tokenized.
            tokens: The run's chunks (``added``), already tokenized (a first run).

        Returns:
            The index and the ids of orphan chunks seen (only a full rebuild scans for them).
        """
        previous = self._latest()
        if previous is None or not previous.can_update:
            built = self._from_run(committed, added or {}, progress, tokens)
            if built is not None:
                return built, []
            if progress is not None:
                progress(-1)  # a full rebuild: every chunk is read and tokenized
            return self.rebuild(committed)
        keep = set(committed)
        new = dict(added or {})
        had = {_doc_of(cid) for cid in previous.ids}
        missing = sorted(keep - had - {_doc_of(cid) for cid in new})
        new.update(self._reader.chunk_texts_of(missing))
        new = {cid: text for cid, text in new.items() if _doc_of(cid) in keep}
        if progress is not None:
            progress(len(new))
        index = previous.updated(
            lambda cid: _doc_of(cid) in keep and cid not in new,
            list(new),
            list(new.values()),
            self.fingerprint(committed),
        )
        with contextlib.suppress(OSError):
            index.save(self._conn.bm25_dir)
        self._index = index
        return index, []

    def _from_run(
        self,
        committed: Sequence[str],
        added: Mapping[str, str],
        progress: Callable[[int], None] | None,
        tokens: TokenRows | None = None,
    ) -> BM25Index | None:
        """The index built from the run's own chunks, when they are every chunk of the store
        (a first run): no scan reads back what was just written (and ``tokens``, if they hold
        those chunks, are not tokenized again). ``None`` otherwise."""
        keep = set(committed)
        new = {cid: text for cid, text in added.items() if _doc_of(cid) in keep}
        if not keep or {_doc_of(cid) for cid in new} != keep:
            return None
        chunks, _ = self._conn.open()
        if int(chunks.count()) != len(new):  # other chunks (orphans): the scan finds them
            return None
        if progress is not None:
            progress(len(new))
        fp = self.fingerprint(committed)
        if tokens is not None and len(tokens) == len(added):
            index = tokens.index(lambda cid: _doc_of(cid) in keep, fp)
        else:
            index = BM25Index.build(list(new), list(new.values()), fp)
        with contextlib.suppress(OSError):
            index.save(self._conn.bm25_dir)
        self._index = index
        return index

    def is_saved(self, committed: Iterable[str]) -> bool:
        """Whether an index of exactly ``committed`` is saved."""
        return self.fingerprint(committed) in BM25Index.saved_fingerprints(self._conn.bm25_dir)

    def state(self, committed: Sequence[str] | None = None) -> tuple[str, int | None]:
        """``("current" | "stale" | "missing", indexed chunks or None)`` for the committed
        documents (``committed``, else read from the store)."""
        fp = self.fingerprint(self._reader.committed_ids() if committed is None else committed)
        saved = BM25Index.saved_fingerprints(self._conn.bm25_dir)
        if fp in saved:
            if self._index is not None and self._index.fingerprint == fp:
                return "current", len(self._index)  # the one this process loaded or saved
            index = BM25Index.load(self._conn.bm25_dir, fp)
            return ("current", len(index)) if index is not None else ("missing", None)
        return ("stale" if saved else "missing", None)
