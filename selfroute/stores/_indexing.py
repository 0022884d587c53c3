"""Indexing files into a collection, idempotently and crash-safely.

The write protocol is the store's journal. A document's chunks are written first and its document
record last: the record is the commit marker. Retrieval only serves chunks of documents that have
a record, and ``index`` (re)writes any file whose record is missing or whose content changed, after
deleting whatever chunks a killed run left for it. Removing a document deletes the record first,
then the chunks. So an ``index`` killed at any point leaves a consistent store, and running it
again completes it; chunks of a file that vanished meanwhile are swept as orphans.
"""

from __future__ import annotations

import datetime as _dt
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfroute._chunking import chunk_text
from selfroute.stores._connection import StoreConnection
from selfroute.stores._discovery import Skipped, discover_files
from selfroute.stores._embedding import embed_documents
from selfroute.stores._errors import DocumentReadError
from selfroute.stores._lexical import LexicalIndex
from selfroute.stores._readers import LoadedDocument, read_document
from selfroute.stores._records import PAGE, StoreReader, file_entry, files_of, with_files

__all__ = ["IndexReport", "Indexer", "ProgressFn", "WriteHook", "slow_hook"]

_EMBED_BATCH = 64
#: Test hook: print a marker after each file's chunks are written and after each commit, and sleep
#: (``SECONDS``) or stop there (``EVENT#N``), so tests can kill ``index`` at a known point.
_SLOW_ENV = "SELFROUTE_TEST_SLOW_INDEX"

ProgressFn = Callable[[str, Mapping[str, Any]], None]
#: Called at each write event (``chunks-written``, ``committed``) with the file's path.
WriteHook = Callable[[str, object], None]

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
        }


def _readable(root: Path) -> bool:
    """Whether ``root`` exists and can be listed (a folder) or read (a file)."""
    try:
        if root.is_dir():
            return os.access(root, os.R_OK | os.X_OK)
        return root.is_file() and os.access(root, os.R_OK)
    except OSError:
        return False


class Indexer:
    """Writes files into a collection pair following the commit-marker protocol.

    Args:
        connection: The store's connection.
        reader: Its reader.
        lexical: Its BM25 index (rebuilt after a run that changed the store).
        hook: Called at each write event (tests kill or interrupt a run there).
    """

    def __init__(
        self,
        connection: StoreConnection,
        reader: StoreReader,
        lexical: LexicalIndex,
        hook: WriteHook = slow_hook,
    ) -> None:
        self._conn = connection
        self._reader = reader
        self._lexical = lexical
        self._hook = hook

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
            found, skipped = discover_files(
                paths, follow_symlinks=follow_symlinks, exclude=[conn.path]
            )
            report.skipped.extend(skipped)
            report.files = len(found)
            if progress is not None:
                progress("files", {"total": len(found)})
            records = self._reader.document_records()
            by_path: dict[str, set[str]] = {}
            for doc_id, record in records.items():
                for path in files_of(record):
                    by_path.setdefault(path, set()).add(doc_id)
            seen: set[str] = set()
            for item in found:
                status = self._index_file(
                    item.path, records, by_path, report, max_file_bytes, progress
                )
                if status != "skipped":
                    seen.add(str(item.path))
                if progress is not None:
                    progress("file", {"path": str(item.path), "status": status})
            if prune:
                self._prune(paths, records, by_path, seen, report)
            self._finish(report, prune)
        report.seconds = time.perf_counter() - started
        return report

    def _prune(
        self,
        paths: Sequence[str | os.PathLike[str]],
        records: dict[str, dict[str, Any]],
        by_path: dict[str, set[str]],
        seen: set[str],
        report: IndexReport,
    ) -> None:
        roots = []
        for given in paths:
            root = Path(os.path.abspath(given))
            if _readable(root):
                roots.append(root)
            else:  # missing or unreadable: its files cannot be told apart from deleted ones
                report.not_pruned.append(str(root))
        for path, doc_ids in sorted(by_path.items()):
            p = Path(path)
            under = any(p == r or r in p.parents for r in roots)
            if under and path not in seen:
                for doc_id in sorted(doc_ids):
                    self._detach(records, doc_id, path)
                report.removed.append(path)

    def _finish(self, report: IndexReport, prune: bool) -> None:
        """Rebuild BM25 after a change (or when none is saved) and sweep orphan chunks."""
        self._conn.forget_committed()  # our own writes: this client's view is current
        committed = self._reader.committed_ids()
        if report.changed or prune or not self._lexical.is_saved(committed):
            _, orphans = self._lexical.rebuild(committed)
            report.bm25_rebuilt = True
            if orphans:
                chunks_col, _ = self._conn.open()
                for start in range(0, len(orphans), PAGE):
                    chunks_col.delete(ids=orphans[start : start + PAGE])
                report.orphan_chunks_removed = len(orphans)

    def _index_file(
        self,
        path: Path,
        records: dict[str, dict[str, Any]],
        by_path: dict[str, set[str]],
        report: IndexReport,
        max_file_bytes: int | None,
        progress: ProgressFn | None,
    ) -> str:
        key = str(path)
        previous = set(by_path.get(key, set()))
        if len(previous) == 1:
            (old_id,) = previous
            entry = files_of(records[old_id]).get(key, {})
            try:
                st = path.stat()
            except OSError:
                st = None
            if (
                st is not None
                and entry.get("size") == st.st_size
                and str(entry.get("mtime_ns")) == str(st.st_mtime_ns)
            ):
                report.unchanged += 1
                return "unchanged"
        try:
            doc = read_document(path, max_bytes=max_file_bytes)
        except DocumentReadError as exc:
            report.skipped.append(Skipped(key, exc.reason))
            return "skipped"
        doc_id = doc.doc_id
        _, documents = self._conn.open()
        if doc_id in records:
            files = files_of(records[doc_id])
            if files.get(key) != file_entry(doc):
                files[key] = file_entry(doc)
                record = with_files(records[doc_id], files)
                documents.update(ids=[doc_id], metadatas=[record])
                records[doc_id] = record
            status = "unchanged"
            report.unchanged += 1
        else:
            meta = self._new_record(doc, {key: file_entry(doc)})
            written = self._write_document(doc, meta, progress)
            records[doc_id] = dict(meta, chunks=written)
            report.chunks += written
            report.words += doc.words
            if previous:
                status = "replaced"
                report.replaced.append(key)
            else:
                status = "added"
                report.added.append(key)
        for old_id in sorted(previous - {doc_id}):
            self._detach(records, old_id, key)
        by_path[key] = {doc_id}
        return status

    def _new_record(self, doc: LoadedDocument, files: dict[str, Any]) -> dict[str, Any]:
        return with_files(
            {
                "doc_id": doc.doc_id,
                "title": doc.title,
                "format": doc.format,
                "words": doc.words,
                "chunk_words": self._conn.chunk_words,
                "indexed_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            },
            files,
        )

    def _write_document(
        self, doc: LoadedDocument, meta: dict[str, Any], progress: ProgressFn | None
    ) -> int:
        conn = self._conn
        chunks_col, documents = conn.open()
        doc_id = doc.doc_id
        pieces = chunk_text(doc.text, doc_id=doc_id, chunk_words=conn.chunk_words)
        # chunks a killed run may have left for this content
        chunks_col.delete(where={"doc_id": doc_id})
        function = conn.embedding_function()
        for start in range(0, len(pieces), _EMBED_BATCH):
            batch = pieces[start : start + _EMBED_BATCH]
            vectors = embed_documents(function, conn.embedding, [c.text for c in batch])
            chunks_col.upsert(
                ids=[c.chunk_id for c in batch],
                documents=[c.text for c in batch],
                embeddings=vectors,
                metadatas=[
                    {
                        "doc_id": doc_id,
                        "source": meta["path"],
                        "title": doc.title,
                        "chunk_index": c.index,
                        "start": c.start,
                        "end": c.end,
                        "words": c.word_count,
                    }
                    for c in batch
                ],
            )
            if progress is not None:
                progress("chunks", {"count": len(batch)})
        self._hook("chunks-written", doc.path)
        meta = dict(meta, chunks=len(pieces))
        documents.upsert(ids=[doc_id], documents=[doc.text], metadatas=[meta], embeddings=[[1.0]])
        self._hook("committed", doc.path)
        return len(pieces)

    def _delete_document(self, doc_id: str) -> None:
        chunks_col, documents = self._conn.open()
        documents.delete(ids=[doc_id])  # un-commit first: a crash now leaves only orphans
        chunks_col.delete(where={"doc_id": doc_id})

    def _detach(self, records: dict[str, dict[str, Any]], doc_id: str, path: str) -> bool:
        """Remove ``path`` from a record; delete the document if no path is left.

        Returns:
            Whether the document was deleted.
        """
        _, documents = self._conn.open()
        record = records.get(doc_id)
        if record is None:
            return False
        files = files_of(record)
        files.pop(path, None)
        if files:
            record = with_files(record, files)
            documents.update(ids=[doc_id], metadatas=[record])
            records[doc_id] = record
            return False
        self._delete_document(doc_id)
        records.pop(doc_id, None)
        return True
