"""What a collection holds: counts, embedding, BM25 state, orphan chunks (``selfroute stats``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from selfroute.stores._connection import StoreConnection
from selfroute.stores._lexical import LexicalIndex
from selfroute.stores._records import StoreReader, files_of

__all__ = ["StoreStats", "collect_stats"]


@dataclass
class StoreStats:
    """What a collection holds (:meth:`DocumentStore.stats`)."""

    location: str
    collection: str
    documents: int
    chunks: int
    words: int
    embedding: str | None
    chunk_words: int | None
    bm25: str
    bm25_chunks: int | None
    orphan_chunks: int
    formats: dict[str, int]
    document_list: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "location": self.location,
            "collection": self.collection,
            "documents": self.documents,
            "chunks": self.chunks,
            "words": self.words,
            "embedding": self.embedding,
            "chunk_words": self.chunk_words,
            "bm25": self.bm25,
            "bm25_chunks": self.bm25_chunks,
            "orphan_chunks": self.orphan_chunks,
            "formats": dict(self.formats),
            "document_list": list(self.document_list),
        }


def _listing(records: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": doc_id,
            "path": r.get("path"),
            "paths": sorted(files_of(r)),
            "title": r.get("title"),
            "format": r.get("format"),
            "words": int(r.get("words") or 0),
            "chunks": int(r.get("chunks") or 0),
        }
        for doc_id, r in sorted(records.items(), key=lambda kv: str(kv[1].get("path")))
    ]


def collect_stats(
    connection: StoreConnection,
    reader: StoreReader,
    lexical: LexicalIndex,
    *,
    documents: bool,
    progress: Callable[[str, int], None] | None = None,
    records: dict[str, dict[str, Any]] | None = None,
) -> StoreStats:
    """Count a collection's documents, chunks, words and orphans; read its BM25 state.

    Args:
        connection: The store's connection.
        reader: Its reader.
        lexical: Its BM25 index.
        documents: Also list every document (path, words, chunks, format).
        progress: Called with ``("documents", n)`` as the records are read.
        records: The committed records, already known (an ``index`` run just made them): no
            scan of the records, and the BM25 state read for exactly these documents.

    Every committed document has exactly the chunks its record counts (they are written before
    it), so the orphan chunks are the collection's count less that sum: no scan of the chunks.
    """
    chunks_col, _ = connection.open()
    given = records is not None
    if records is None:
        records = reader.document_records(progress=progress)
    committed_chunks = sum(int(r.get("chunks") or 0) for r in records.values())
    orphans = max(0, int(chunks_col.count()) - committed_chunks)
    # after the count: reading the committed ids may reopen the collections (another writer)
    state, bm25_chunks = lexical.state(sorted(records) if given else None)
    formats: dict[str, int] = {}
    for r in records.values():
        fmt = str(r.get("format") or "?")
        formats[fmt] = formats.get(fmt, 0) + 1
    return StoreStats(
        location=connection.location,
        collection=connection.collection_name,
        documents=len(records),
        chunks=committed_chunks,
        words=sum(int(r.get("words") or 0) for r in records.values()),
        embedding=connection.embedding.spec,
        chunk_words=connection.chunk_words,
        bm25=state,
        bm25_chunks=bm25_chunks,
        orphan_chunks=orphans,
        formats=formats,
        document_list=_listing(records) if documents else [],
    )
