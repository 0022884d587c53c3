"""Copy a collection to another location (an embedded store to a Chroma server, or back).

What moves: every committed document record (full text and metadata), every chunk of those
documents with its stored embedding (nothing is embedded again), the collection's recorded
embedding and chunk size, and the saved BM25 index (its fingerprint depends only on the
committed documents and settings, so the copy is current at the target). Chunks of uncommitted
documents (left by a killed ``index``) stay behind.

The copy follows the store's commit protocol -- chunks first, then the document records -- so a
copy killed part-way is completed by running it again, and a rerun over a complete copy changes
nothing.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from selfroute.stores._bm25 import BM25Index
from selfroute.stores._errors import StoreError
from selfroute.stores._journal import Journal
from selfroute.stores._records import pages
from selfroute.stores._rows import chunk_row, pack_chunk
from selfroute.stores._store import DocumentStore
from selfroute.stores._writes import upsert_records

__all__ = ["MigrationReport", "copy_collection"]


@dataclass
class MigrationReport:
    """What :func:`copy_collection` copied.

    Attributes:
        source: Where the collection came from (folder or URL) and its name.
        target: Where it went.
        documents: Document records copied.
        chunks: Chunks copied.
        bm25: ``"copied"`` (the saved index), ``"rebuilt"`` (none was saved) or ``"empty"``.
    """

    source: str
    target: str
    documents: int
    chunks: int
    bm25: str

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "source": self.source,
            "target": self.target,
            "documents": self.documents,
            "chunks": self.chunks,
            "bm25": self.bm25,
        }


def copy_collection(
    source: DocumentStore,
    target: DocumentStore,
    *,
    progress: Callable[[str, int], None] | None = None,
) -> MigrationReport:
    """Copy ``source``'s collection into ``target`` (created with the source's embedding).

    Args:
        source: An existing store.
        target: The destination; its collection must not exist yet, or hold an earlier copy of
            this one (same embedding and chunk size).
        progress: ``progress(kind, count)`` after each page (``chunks`` or ``documents``).

    Raises:
        StoreError: The target holds documents that are not in the source.
    """
    source._open()
    target._conn.adopt(source.embedding, source.chunk_words)
    with target._lock():  # one writer; on a server, readers check commit markers meanwhile
        chunks, documents, committed = _copy(source, target, progress)
        bm25 = _copy_bm25(source, target, committed)
    return MigrationReport(
        source=f"{source.location} [{source.collection_name}]",
        target=f"{target.location} [{target.collection_name}]",
        documents=documents,
        chunks=chunks,
        bm25=bm25,
    )


def _copy(
    source: DocumentStore, target: DocumentStore, progress: Callable[[str, int], None] | None
) -> tuple[int, int, list[str]]:
    """Copy chunks, then records, journaled like an ``index`` run.

    Returns:
        Chunks and documents copied, and the ids of the committed documents.
    """
    chunks_src, docs_src = source._open()
    chunks_dst, docs_dst = target._open(create=True)
    committed = set(source.committed_ids())
    foreign = target.committed_ids()
    strangers = [d for d in foreign if d not in committed]
    if strangers:
        raise StoreError(
            f"collection {target.collection_name!r} at {target.location} already holds "
            f"{len(strangers)} documents that are not in {source.location}; choose another "
            "target collection"
        )
    # a copy killed part-way leaves chunks without records: journaled, so the next run (copy
    # or index) completes or deletes them, and a server's readers keep checking until then
    journal = Journal(target._conn.journal_path)
    journal.begin(sorted(committed))
    chunks = 0
    for page in pages(chunks_src, ["embeddings", "documents", "metadatas"]):
        decoded = [
            chunk_row(text, meta)
            for text, meta in zip(page["documents"], page["metadatas"], strict=True)
        ]
        rows = [i for i, (_, fields) in enumerate(decoded) if fields.get("doc_id") in committed]
        if rows:
            chunks_dst.upsert(  # in the current layout, whichever the source's
                ids=[page["ids"][i] for i in rows],
                embeddings=[page["embeddings"][i] for i in rows],
                metadatas=[pack_chunk(*decoded[i]) for i in rows],
            )
            chunks += len(rows)
            if progress is not None:
                progress("chunks", len(rows))
    documents = 0
    for page in pages(docs_src, ["documents", "metadatas"]):
        if not page.get("ids"):  # the last page of an exact multiple of the page size
            continue
        upsert_records(
            docs_dst, page["ids"], [t or "" for t in page["documents"]], page["metadatas"]
        )
        documents += len(page["ids"])
        if progress is not None:
            progress("documents", len(page["ids"]))
    if not journal.carried - committed:  # a killed index run's ids stay for its rerun
        journal.clear()
    return chunks, documents, sorted(committed)


def _copy_bm25(source: DocumentStore, target: DocumentStore, committed: list[str]) -> str:
    if not committed:
        return "empty"
    fp = source._lexical.fingerprint(committed)
    if target._lexical.fingerprint(committed) == fp and source.bm25_dir != target.bm25_dir:
        saved = source.bm25_dir / fp
        if fp in BM25Index.saved_fingerprints(source.bm25_dir):
            dest = target.bm25_dir / fp
            if not dest.exists():
                target.bm25_dir.mkdir(parents=True, exist_ok=True)
                tmp = target.bm25_dir / f".tmp-copy-{fp}"
                shutil.rmtree(tmp, ignore_errors=True)
                shutil.copytree(saved, tmp)
                tmp.rename(dest)
            for other in target.bm25_dir.iterdir():  # the copy replaces an older index
                if other.is_dir() and other.name != fp and not other.name.startswith("."):
                    shutil.rmtree(other, ignore_errors=True)
            return "copied"
    target.rebuild_bm25(committed)
    return "rebuilt"
