"""The store writes of one indexing batch, executed in order on one background thread.

Planning a batch -- reading, hashing, chunking and embedding its files -- is Python work; writing
it is Chroma's. :class:`BatchWriter` executes a planned batch on a single writer thread while the
indexer plans the next one. Chroma 1.5's Rust bindings keep the GIL for the whole of a write
(measured: a thread spinning beside an ``upsert`` ran at 2% of its speed), so on that Chroma the
two threads mostly take turns and the overlap is the planner's file reads; a Chroma whose
bindings release the GIL overlaps the whole planning with the write. The store sees exactly the writes of a serial run, in the same order
-- per batch: the journal, the chunks, the document records (the commit), record updates, then
deletions -- because there is one writer and at most one batch in flight: :meth:`BatchWriter.submit`
waits for the previous batch before it hands over the next. A planned batch touches nothing on
disk, so a kill at any point leaves what a serial run killed at the same write would leave. The
indexer drains the writer before it prunes, updates BM25 or releases the writer lock.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from selfroute.stores._connection import StoreConnection
from selfroute.stores._journal import Journal
from selfroute.stores._records import PAGE

__all__ = ["BatchWriter", "PlannedWrite", "of_docs", "upsert_records"]

#: Most chunks per ``upsert`` (also bounded by the client's maximum batch size).
MAX_UPSERT = 5000


def upsert_records(
    documents: Any, ids: Sequence[str], texts: Sequence[str], metas: Sequence[dict[str, Any]]
) -> None:
    """Upsert document records: those with a text of their own with it as the row's document,
    the others (one-chunk documents) without one -- Chroma full-text indexes even an empty
    document, which doubled a record's write cost (:mod:`._rows`)."""
    with_text = [i for i, text in enumerate(texts) if text]
    without = [i for i, text in enumerate(texts) if not text]
    if without:
        documents.upsert(
            ids=[ids[i] for i in without],
            metadatas=[metas[i] for i in without],
            embeddings=[[1.0]] * len(without),
        )
    if with_text:
        documents.upsert(
            ids=[ids[i] for i in with_text],
            documents=[texts[i] for i in with_text],
            metadatas=[metas[i] for i in with_text],
            embeddings=[[1.0]] * len(with_text),
        )


def of_docs(doc_ids: Sequence[str]) -> dict[str, Any]:
    """The ``where`` filter of the chunks of ``doc_ids``."""
    return {"doc_id": {"$in": list(doc_ids)}}


@dataclass
class PlannedWrite:
    """Everything one batch writes, computed before any of it is written.

    Attributes:
        new_ids: Documents written by this batch (their records commit them).
        paths: The file of each new document (for the write hook).
        stale: New documents a killed run was writing: their old chunks are deleted first.
        chunk_ids: Chunk ids of the new documents.
        chunk_texts: Their texts.
        chunk_vectors: Their embeddings.
        pending_vectors: Their embeddings still on their way (a hosted embedding's
            :class:`~selfroute.stores._hosted.PendingVectors`): the writer waits for them before
            it writes anything of the batch, so an embedding that fails leaves the store as it was.
        chunk_metas: Their metadata.
        record_texts: The new documents' record texts.
        record_metas: Their record metadata.
        updates: Record metadata changes of existing documents (paths added or removed).
        gone: Documents to delete (records first, then chunks).
    """

    new_ids: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    chunk_texts: list[str] = field(default_factory=list)
    chunk_vectors: list[Any] = field(default_factory=list)
    pending_vectors: Any = None
    chunk_metas: list[dict[str, Any]] = field(default_factory=list)
    record_texts: list[str] = field(default_factory=list)
    record_metas: list[dict[str, Any]] = field(default_factory=list)
    updates: dict[str, dict[str, Any]] = field(default_factory=dict)
    gone: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.new_ids or self.updates or self.gone)


class BatchWriter:
    """Executes :class:`PlannedWrite` batches in order, one at a time, on a writer thread.

    Use as a context manager: leaving it waits for the batch in flight (its error is raised
    unless another one is already propagating).

    Args:
        connection: The store's connection.
        journal: The run's journal.
        hook: Called with ``(event, path)`` after each document's chunks are written and after
            it is committed.
    """

    def __init__(
        self, connection: StoreConnection, journal: Journal, hook: Callable[[str, object], None]
    ) -> None:
        self._conn = connection
        self._journal = journal
        self._hook = hook
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future[int] | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> BatchWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if exc_type is None:
                self.wait()
            else:  # the run already fails: still let the write in flight end before unlocking
                with contextlib.suppress(BaseException):  # the first error is the one to report
                    self.wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
                self._pool = None

    def submit(self, write: PlannedWrite) -> int:
        """Wait for the batch in flight, then start ``write`` in the background.

        Returns:
            The chunks the batch waited for wrote (0 if none was in flight).
        """
        done = self.wait()
        if write:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="selfroute-index-writer")
            self._pending = self._pool.submit(self.execute, write)
        return done

    def wait(self) -> int:
        """Wait for the batch in flight (re-raising its error).

        Returns:
            The chunks it wrote (0 if none was in flight).
        """
        pending, self._pending = self._pending, None
        return 0 if pending is None else pending.result()

    def execute(self, write: PlannedWrite) -> int:
        """Write one batch now, in the protocol's order.

        Returns:
            The chunks written.
        """
        with self._lock:
            if write.pending_vectors is not None:  # before the journal: nothing written yet
                write.chunk_vectors = write.pending_vectors.result()
                write.pending_vectors = None
            chunks_col, documents = self._conn.open()
            if write.new_ids:
                self._journal.begin(write.new_ids)
                # content a killed run was writing may have chunks of an older chunker
                for start in range(0, len(write.stale), PAGE):
                    chunks_col.delete(where=of_docs(write.stale[start : start + PAGE]))
                self._write_chunks(chunks_col, write)
                for path in write.paths:
                    self._hook("chunks-written", path)
                upsert_records(documents, write.new_ids, write.record_texts, write.record_metas)
                for path in write.paths:
                    self._hook("committed", path)
            if write.updates:
                ids = sorted(write.updates)
                documents.update(ids=ids, metadatas=[write.updates[i] for i in ids])
            self.delete_documents(write.gone)
            return len(write.chunk_ids)

    def _write_chunks(self, chunks_col: Any, write: PlannedWrite) -> None:
        # few large upserts: Chroma's cost per call, not per record, dominated small files
        step = max(1, min(MAX_UPSERT, self._conn.max_batch_size()))
        for start in range(0, len(write.chunk_ids), step):
            end = start + step
            chunks_col.upsert(  # the texts are in the metadata (_rows.pack_chunk)
                ids=write.chunk_ids[start:end],
                embeddings=write.chunk_vectors[start:end],
                metadatas=write.chunk_metas[start:end],
            )

    def delete_documents(self, doc_ids: Sequence[str]) -> None:
        """Delete documents: records first (un-commit), then their chunks."""
        if not doc_ids:
            return
        chunks_col, documents = self._conn.open()
        self._journal.begin(doc_ids)
        for start in range(0, len(doc_ids), PAGE):
            page = list(doc_ids[start : start + PAGE])
            documents.delete(ids=page)  # a crash now leaves only orphans, journaled
            chunks_col.delete(where=of_docs(page))
