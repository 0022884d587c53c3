"""Indexing files into a collection, idempotently and crash-safely, many documents per write.

The write protocol: a document's chunks are written first and its document record last; the
record is the commit marker. Retrieval only serves chunks of documents that have a record, and
``index`` (re)writes any file whose record is missing or whose content changed. Removing a
document deletes the record first, then the chunks. So an ``index`` killed at any point leaves a
consistent store, and running it again completes it.

Documents are written in batches: the chunks of every document of a batch in one embedding pass
and a few ``upsert`` calls, then all their records in one ``upsert``. The cost of a run is then
per chunk, not per file (Chroma's per-call cost, about 50 ms on an embedded store, dominated when
each small file was written and committed on its own). Batches start at one document and grow eightfold
up to ``_MAX_BATCH_DOCS`` (bounded by chunks and bytes), so the first documents are committed --
and a broken embedding fails -- at once. The ids of a batch are written to the
:class:`~selfroute.stores._journal.Journal` before its chunks, so a rerun deletes what a killed run
left (chunks of documents that are still not committed) without scanning the collection.

A planned batch is written by a :class:`~selfroute.stores._writes.BatchWriter` thread while the
next batch is read, chunked and embedded; the writer keeps the serial order of the writes (one
batch in flight), so the protocol above holds as written.

With a hosted embedding (``openai``, ``google``) a batch's chunks go out to the provider as
token-sized requests, up to ``embedding_concurrency`` at once
(:class:`~selfroute.stores._hosted.HostedEmbedder`), as soon as the batch is planned: the
indexer reads and chunks the next batch while they are in flight, and the writer waits for a
batch's vectors before it writes any of it. The embeddings run ahead by at most one batch
besides the one being written, and the writes stay in document and chunk order.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfroute._chunking import Chunk, chunk_text
from selfroute.stores._bm25 import TokenRows
from selfroute.stores._connection import StoreConnection
from selfroute.stores._discovery import Skipped, discover_files
from selfroute.stores._embedding import EmbeddingChoice, embed_rows
from selfroute.stores._errors import DocumentReadError
from selfroute.stores._hosted import HOSTED_KINDS, HostedEmbedder
from selfroute.stores._journal import Journal
from selfroute.stores._lexical import LexicalIndex
from selfroute.stores._readers import LoadedDocument, read_document
from selfroute.stores._records import PAGE, StoreReader, file_entry, files_of, with_files
from selfroute.stores._rows import TEXT_IN_CHUNK, pack_chunk, pack_record
from selfroute.stores._writes import BatchWriter, PlannedWrite, of_docs

__all__ = ["EmbedderFactory", "IndexReport", "Indexer", "ProgressFn", "WriteHook", "slow_hook"]

#: Chunks per embedding call (across documents).
_EMBED_BATCH = 128
#: Upper bounds of one write batch: documents, chunks, bytes of text.
_MAX_BATCH_DOCS = 4096
_MAX_BATCH_CHUNKS = 5000
_MAX_BATCH_BYTES = 32 * 1024 * 1024
#: With a hosted embedding, at most this many chunks per write batch: a batch's embeddings are
#: in flight while the one before is written, so smaller batches overlap more.
_MAX_HOSTED_BATCH_CHUNKS = 512
#: Test hook: print a marker after each file's chunks are written and after each commit, and sleep
#: (``SECONDS``) or stop there (``EVENT#N``), so tests can kill ``index`` at a known point.
_SLOW_ENV = "SELFROUTE_TEST_SLOW_INDEX"

ProgressFn = Callable[[str, Mapping[str, Any]], None]
#: Called at each write event (``chunks-written``, ``committed``) with the file's path.
WriteHook = Callable[[str, object], None]
#: Builds the concurrent embedder of a hosted embedding (``None`` for a local one).
EmbedderFactory = Callable[[EmbeddingChoice], HostedEmbedder | None]

_hook_counts: dict[str, int] = {}


def slow_hook(event: str, path: object) -> None:
    """Test hook (``SELFROUTE_TEST_SLOW_INDEX``): print a marker line on stderr at each write
    event, then sleep ``SECONDS``; or, with ``EVENT#N``, stop at the N-th ``EVENT`` until killed."""
    setting = os.environ.get(_SLOW_ENV)
    if not setting:
        return
    _hook_counts[event] = _hook_counts.get(event, 0) + 1
    print(f"[selfroute-test] {event} {path}", file=sys.stderr, flush=True)
    name, sep, count = setting.partition("#")
    if not sep:
        time.sleep(float(setting))
    elif name == event and _hook_counts[event] == int(count):
        time.sleep(600)


@dataclass
class IndexReport:
    """What one :meth:`DocumentStore.index` run did.

    Attributes:
        files: Supported files found.
        added: Paths of documents indexed for the first time.
        replaced: Paths whose content changed and was re-indexed (old chunks removed).
        unchanged: Files already indexed with the same content.
        removed: Paths pruned (``prune=True``).
        skipped: Paths not indexed, with reasons.
        chunks: Chunks written.
        words: Words in the documents written.
        seconds: Wall time.
        bm25_rebuilt: Whether the BM25 index was rebuilt.
        orphan_chunks_removed: Chunks left by an interrupted run and deleted.
        not_pruned: Paths given with ``prune=True`` that do not exist or cannot be read (an
            unmounted share, a moved folder): nothing under them was removed.
        embedding: With a hosted embedding that embedded chunks, what it did
            (:meth:`~selfroute.stores._hosted.EmbedStats.to_dict`: inputs, tokens, requests,
            retries, truncated, seconds, chunks_per_s, tokens_per_s); else ``None``.
    """

    files: int = 0
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    words: int = 0
    seconds: float = 0.0
    bm25_rebuilt: bool = False
    orphan_chunks_removed: int = 0
    not_pruned: list[str] = field(default_factory=list)
    embedding: dict[str, Any] | None = None
    #: The committed records as the run left them (:meth:`DocumentStore.stats` ``after=``).
    committed_records: dict[str, dict[str, Any]] | None = field(
        default=None, repr=False, compare=False
    )

    @property
    def indexed(self) -> int:
        """Files that are in the store after the run (new, replaced or unchanged)."""
        return len(self.added) + len(self.replaced) + self.unchanged

    @property
    def changed(self) -> bool:
        """Whether the run changed the store."""
        return bool(self.added or self.replaced or self.removed or self.orphan_chunks_removed)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "files": self.files,
            "added": list(self.added),
            "replaced": list(self.replaced),
            "unchanged": self.unchanged,
            "removed": list(self.removed),
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "chunks": self.chunks,
            "words": self.words,
            "seconds": self.seconds,
            "bm25_rebuilt": self.bm25_rebuilt,
            "orphan_chunks_removed": self.orphan_chunks_removed,
            "not_pruned": list(self.not_pruned),
            "embedding": dict(self.embedding) if self.embedding is not None else None,
        }


def _readable(root: Path) -> bool:
    """Whether ``root`` exists and can be listed (a folder) or read (a file)."""
    try:
        if root.is_dir():
            return os.access(root, os.R_OK | os.X_OK)
        return root.is_file() and os.access(root, os.R_OK)
    except OSError:
        return False


def _record_text(doc: LoadedDocument, pieces: Sequence[Chunk]) -> str:
    """The text a document record stores: none when its only chunk holds all of it (a small
    file's text is then written, and full-text indexed by Chroma, once, not twice)."""
    if len(pieces) == 1 and pieces[0].text == doc.text:
        return ""
    return doc.text


@dataclass
class _Batch:
    """Documents planned for one write, and the record changes that follow it."""

    new: dict[str, tuple[LoadedDocument, list[Chunk]]] = field(default_factory=dict)
    updates: set[str] = field(default_factory=set)
    detach: list[tuple[str, str]] = field(default_factory=list)
    chunks: int = 0
    size: int = 0
    #: When the batch's records were made (one clock read per batch, not per file).
    indexed_at: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat())

    def full(self, docs: int, max_chunks: int = _MAX_BATCH_CHUNKS) -> bool:
        return len(self.new) >= docs or self.chunks >= max_chunks or self.size >= _MAX_BATCH_BYTES

    def __bool__(self) -> bool:
        return bool(self.new or self.updates or self.detach)


class _Run:
    """The state of one ``index`` run: records by id, doc ids by path, the report."""

    def __init__(self, records: dict[str, dict[str, Any]], report: IndexReport) -> None:
        self.records = records
        self.report = report
        self.by_path: dict[str, set[str]] = {}
        #: Each record's ``files`` map, parsed once: a record shared by n identical files is
        #: not parsed (nor written) again for each of them, which made runs quadratic in n.
        self.files: dict[str, dict[str, dict[str, Any]]] = {}
        self._unwritten: set[str] = set()  # records whose ``files`` map changed since written
        for doc_id, record in records.items():
            files = self.files[doc_id] = files_of(record)
            for path in files:
                self.by_path.setdefault(path, set()).add(doc_id)
        self.seen: set[str] = set()
        self.written: dict[str, str] = {}  # chunk id -> text, for the BM25 update
        # a first run tokenizes its chunks for BM25 while the writer writes them
        self.tokens: TokenRows | None = None if records else TokenRows()
        self.batch = _Batch()
        self.batch_docs = 1
        self.embedder: HostedEmbedder | None = None
        self.embedder_made = False
        self.max_chunks = _MAX_BATCH_CHUNKS
        self.stack = contextlib.ExitStack()

    def set_file(self, doc_id: str, path: str, entry: dict[str, Any] | None) -> None:
        """Set (``None``: remove) ``path`` in a record's ``files`` map; the record is written
        out again by :meth:`record`, once however many files changed."""
        files = self.files[doc_id]
        if entry is None:
            files.pop(path, None)
        else:
            files[path] = entry
        self._unwritten.add(doc_id)

    def record(self, doc_id: str) -> dict[str, Any]:
        """The record of ``doc_id`` with its current ``files`` map."""
        if doc_id in self._unwritten:
            self._unwritten.discard(doc_id)
            self.records[doc_id] = with_files(self.records[doc_id], self.files[doc_id])
        return self.records[doc_id]

    def add(self, doc_id: str, record: dict[str, Any], files: dict[str, dict[str, Any]]) -> None:
        """A new record and its ``files`` map."""
        self.records[doc_id] = record
        self.files[doc_id] = dict(files)
        self._unwritten.discard(doc_id)

    def drop(self, doc_id: str) -> None:
        """Forget a record with no file left."""
        self.records.pop(doc_id, None)
        self.files.pop(doc_id, None)
        self._unwritten.discard(doc_id)

    def settled(self) -> dict[str, dict[str, Any]]:
        """Every record, with its current ``files`` map."""
        for doc_id in sorted(self._unwritten):
            self.record(doc_id)
        return self.records


class Indexer:
    """Writes files into a collection pair following the commit-marker protocol, in batches.

    Args:
        connection: The store's connection.
        reader: Its reader.
        lexical: Its BM25 index (updated after a run that changed the store).
        hook: Called at each write event (tests kill or interrupt a run there).
        embedder: Builds the concurrent embedder of a hosted embedding (``None``: every
            embedding through the collection's embedding function, one call at a time).
    """

    def __init__(
        self,
        connection: StoreConnection,
        reader: StoreReader,
        lexical: LexicalIndex,
        hook: WriteHook = slow_hook,
        embedder: EmbedderFactory | None = None,
    ) -> None:
        self._conn = connection
        self._reader = reader
        self._lexical = lexical
        self._hook = hook
        self._embedder = embedder

    def index(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        prune: bool,
        follow_symlinks: bool,
        max_file_bytes: int | None,
        progress: ProgressFn | None,
    ) -> IndexReport:
        """Index files and folders (see :meth:`DocumentStore.index`)."""
        started = time.perf_counter()
        report = IndexReport()
        conn = self._conn
        with conn.lock():
            conn.open(create=True)
            journal = Journal(conn.journal_path)
            if progress is not None:
                progress("discover", {})
            found, skipped = discover_files(
                paths, follow_symlinks=follow_symlinks, exclude=[conn.path]
            )
            report.skipped.extend(skipped)
            report.files = len(found)
            if progress is not None:
                progress("files", {"total": len(found)})
            run = _Run(self._reader.document_records(), report)
            if self._embedder is not None and conn.embedding.kind in HOSTED_KINDS:
                run.max_chunks = _MAX_HOSTED_BATCH_CHUNKS
            # the embedder is left first: on an error its queued requests are dropped before
            # the writer waits for the batch in flight
            with BatchWriter(conn, journal, self._hook) as writer, contextlib.ExitStack() as stack:
                run.stack = stack
                for item in found:
                    status = self._plan_file(item.path, run, max_file_bytes, item.within)
                    if status != "skipped":
                        run.seen.add(str(item.path))
                    if run.batch.full(run.batch_docs, run.max_chunks):
                        self._flush(run, writer, journal, progress)
                    if progress is not None:
                        progress("file", {"path": str(item.path), "status": status})
                self._flush(run, writer, journal, progress)
                _chunks_progress(progress, writer.wait(), run)
                if prune:
                    writer.execute(self._prune(paths, run))
            self._finish(run, journal, prune, progress)
        report.committed_records = run.settled()
        if run.embedder is not None and run.embedder.stats().inputs:
            report.embedding = run.embedder.stats().to_dict()
        report.seconds = time.perf_counter() - started
        return report

    def _hosted(self, run: _Run) -> HostedEmbedder | None:
        """The run's hosted embedder, made when its first chunks are planned (a run with
        nothing new needs no key); closed with the run (``run.stack``)."""
        if run.embedder is None and not run.embedder_made and self._embedder is not None:
            run.embedder_made = True
            run.embedder = self._embedder(self._conn.embedding)
            if run.embedder is not None:
                run.stack.enter_context(run.embedder)
        return run.embedder

    def _prune(self, paths: Sequence[str | os.PathLike[str]], run: _Run) -> PlannedWrite:
        """The deletions of documents under ``paths`` whose files the run did not see."""
        write = PlannedWrite()
        roots = []
        for given in paths:
            root = Path(os.path.abspath(given))
            if _readable(root):
                roots.append(root)
            else:  # missing or unreadable: its files cannot be told apart from deleted ones
                run.report.not_pruned.append(str(root))
        touched: set[str] = set()
        for path, doc_ids in sorted(run.by_path.items()):
            p = Path(path)
            under = any(p == r or r in p.parents for r in roots)
            if under and path not in run.seen:
                for doc_id in sorted(doc_ids):
                    _detach(run, doc_id, path, write, touched)
                run.report.removed.append(path)
        _pack_touched(run, write, touched)
        return write

    def _finish(
        self, run: _Run, journal: Journal, prune: bool, progress: ProgressFn | None
    ) -> None:
        """Update BM25 after a change (or when none is saved); delete orphan chunks."""
        self._conn.forget_committed()  # our own writes: this client's view is current
        report = run.report
        committed = sorted(run.records)
        chunks_col, _ = self._conn.open()
        recovered = sorted(set(journal.carried) - set(committed))
        for start in range(0, len(recovered), PAGE):
            page = recovered[start : start + PAGE]
            orphans = list(chunks_col.get(where=of_docs(page), include=[]).get("ids") or [])
            self._delete_chunk_ids(orphans)
            report.orphan_chunks_removed += len(orphans)
        if report.changed or prune or not self._lexical.is_saved(committed):

            def tokenizing(count: int) -> None:
                if progress is not None:
                    progress("bm25", {"chunks": count})

            _, orphans = self._lexical.update(committed, run.written, tokenizing, run.tokens)
            report.bm25_rebuilt = True
            self._delete_chunk_ids(orphans)
            report.orphan_chunks_removed += len(orphans)
        journal.clear()

    def _delete_chunk_ids(self, ids: Sequence[str]) -> None:
        chunks_col, _ = self._conn.open()
        for start in range(0, len(ids), PAGE):
            chunks_col.delete(ids=list(ids[start : start + PAGE]))

    def _plan_file(
        self, path: Path, run: _Run, max_file_bytes: int | None, within: Path | None = None
    ) -> str:
        """Decide what ``path`` needs and add it to the batch; returns its status (``within``:
        the folder it must still be inside when it is opened)."""
        key = str(path)
        records, report, batch = run.records, run.report, run.batch
        previous = set(run.by_path.get(key, set()))
        if len(previous) == 1 and self._same_stat(path, run.files[next(iter(previous))], key):
            report.unchanged += 1
            return "unchanged"
        try:
            doc = read_document(path, max_bytes=max_file_bytes, within=within)
        except DocumentReadError as exc:
            report.skipped.append(Skipped(key, exc.reason))
            return "skipped"
        doc_id = doc.doc_id
        if doc_id in records:
            if run.files[doc_id].get(key) != file_entry(doc):
                run.set_file(doc_id, key, file_entry(doc))
                batch.updates.add(doc_id)
            status = "unchanged"
            report.unchanged += 1
        else:
            words = doc.words
            pieces = chunk_text(doc.text, doc_id=doc_id, chunk_words=self._conn.chunk_words)
            files = {key: file_entry(doc)}
            record = self._new_record(doc, doc_id, words, files, batch.indexed_at)
            record["chunks"] = len(pieces)
            if not _record_text(doc, pieces):
                record[TEXT_IN_CHUNK] = True
            run.add(doc_id, record, files)
            batch.new[doc_id] = (doc, pieces)
            batch.chunks += len(pieces)
            batch.size += len(doc.text)
            report.chunks += len(pieces)
            report.words += words
            status = "replaced" if previous else "added"
            (report.replaced if previous else report.added).append(key)
        batch.detach.extend((old_id, key) for old_id in sorted(previous - {doc_id}))
        run.by_path[key] = {doc_id}
        return status

    @staticmethod
    def _same_stat(path: Path, files: Mapping[str, Mapping[str, Any]], key: str) -> bool:
        entry = files.get(key, {})
        try:
            st = path.stat()
        except OSError:
            return False
        return entry.get("size") == st.st_size and str(entry.get("mtime_ns")) == str(st.st_mtime_ns)

    def _new_record(
        self, doc: LoadedDocument, doc_id: str, words: int, files: dict[str, Any], indexed_at: str
    ) -> dict[str, Any]:
        return with_files(
            {
                "doc_id": doc_id,
                "title": doc.title,
                "format": doc.format,
                "words": words,
                "chunk_words": self._conn.chunk_words,
                "indexed_at": indexed_at,
            },
            files,
        )

    def _flush(
        self, run: _Run, writer: BatchWriter, journal: Journal, progress: ProgressFn | None
    ) -> None:
        """Plan the batch (embed its chunks) and hand it to the writer, which writes chunks,
        then records (the commit), then path changes."""
        batch = run.batch
        if not batch:
            return
        run.batch = _Batch()
        run.batch_docs = min(run.batch_docs * 8, _MAX_BATCH_DOCS)
        write = PlannedWrite()
        if batch.new:
            write.new_ids = list(batch.new)
            write.paths = [str(doc.path) for doc, _ in batch.new.values()]
            write.stale = [d for d in batch.new if d in journal.carried]
            self._plan_chunks(batch, write, self._hosted(run) if batch.chunks else None)
            run.written.update(zip(write.chunk_ids, write.chunk_texts, strict=True))
            write.record_texts = [_record_text(doc, pieces) for doc, pieces in batch.new.values()]
            write.record_metas = [pack_record(run.record(i)) for i in write.new_ids]
        touched = batch.updates - set(batch.new)
        for doc_id, key in batch.detach:
            _detach(run, doc_id, key, write, touched)
        _pack_touched(run, write, touched)
        _chunks_progress(progress, writer.submit(write), run)
        if run.tokens is not None:  # overlaps the write just started
            run.tokens.add(write.chunk_ids, write.chunk_texts)

    def _plan_chunks(
        self, batch: _Batch, write: PlannedWrite, embedder: HostedEmbedder | None
    ) -> None:
        """The chunks of a batch's new documents, embedded (many documents per call; with a
        hosted ``embedder``, sent out concurrently and collected by the writer)."""
        conn = self._conn
        for doc, pieces in batch.new.values():
            source = str(doc.path)
            for c in pieces:
                write.chunk_ids.append(c.chunk_id)
                write.chunk_texts.append(c.text)
                fields = {
                    "doc_id": c.doc_id,
                    "source": source,
                    "title": doc.title,
                    "chunk_index": c.index,
                    "start": c.start,
                    "end": c.end,
                    "words": c.word_count,
                }
                write.chunk_metas.append(pack_chunk(c.text, fields))
        texts = write.chunk_texts
        if embedder is not None:
            if texts:
                write.pending_vectors = embedder.submit(texts)
            return
        function = conn.embedding_function()
        for start in range(0, len(texts), _EMBED_BATCH):
            part = texts[start : start + _EMBED_BATCH]
            write.chunk_vectors.extend(embed_rows(function, conn.embedding, part))


def _chunks_progress(progress: ProgressFn | None, count: int, run: _Run) -> None:
    if progress is not None and count:
        progress("chunks", {"count": count})
        if run.embedder is not None:
            progress("embedding", run.embedder.stats().to_dict())


def _detach(run: _Run, doc_id: str, path: str, write: PlannedWrite, touched: set[str]) -> None:
    """Remove ``path`` from a record: the record is ``touched`` (its update is packed once by
    :func:`_pack_touched`); a record left with no path is dropped and its document deleted by
    ``write``."""
    if doc_id not in run.records:
        return
    run.set_file(doc_id, path, None)
    if run.files[doc_id]:
        touched.add(doc_id)
        return
    run.drop(doc_id)
    touched.discard(doc_id)
    write.updates.pop(doc_id, None)
    write.gone.append(doc_id)


def _pack_touched(run: _Run, write: PlannedWrite, touched: set[str]) -> None:
    """The updates of the ``touched`` records still there, each packed once."""
    for doc_id in sorted(touched):
        if doc_id in run.records:
            write.updates[doc_id] = pack_record(run.record(doc_id))
