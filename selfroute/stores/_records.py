"""Reading a selfroute collection: document records, committed ids, chunks, dense search.

A document's record in ``NAME__documents`` is its commit marker: only chunks whose ``doc_id`` has
a record are served. The record's ``files`` field (JSON) maps every path with this content to
its ``sha256``, ``size`` and ``mtime_ns``; ``path``/``sha256``/``size``/``mtime_ns`` repeat the
first path's entry.

The layout of the rows (a record's fields as one JSON metadata value since store schema 2, a
chunk's text and fields in its metadata since schema 3, and the older layouts, still read) is
:mod:`selfroute.stores._rows`; every row read here is decoded there. A record or chunk is
rewritten in the newest layout only when the indexer writes it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from selfroute._fitting import ContextDocument
from selfroute._result import Passage
from selfroute.stores._bm25 import BM25Index
from selfroute.stores._connection import StoreConnection
from selfroute.stores._doccache import DocumentCache, file_mark
from selfroute.stores._embedding import embed_query
from selfroute.stores._health import DATABASE_FILE
from selfroute.stores._readers import LoadedDocument
from selfroute.stores._rows import (
    RECORD_KEY,
    TEXT_IN_CHUNK,
    chunk_row,
    pack_record,
    unpack_record,
)
from selfroute.stores._ties import TIE_CAP, chunk_order, more_ties

__all__ = [
    "PAGE",
    "RECORD_KEY",
    "TEXT_IN_CHUNK",
    "StoreReader",
    "file_entry",
    "files_of",
    "pack_record",
    "pages",
    "unpack_record",
    "with_files",
]

#: Records read (or deleted) per Chroma call.
PAGE = 2000


def files_of(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``{path: {sha256, size, mtime_ns}}`` map of a document record."""
    try:
        files = json.loads(str(meta.get("files") or "{}"))
    except ValueError:
        files = {}
    if not isinstance(files, dict):
        files = {}
    if not files and meta.get("path"):
        files = {
            str(meta["path"]): {
                "sha256": meta.get("sha256"),
                "size": meta.get("size"),
                "mtime_ns": meta.get("mtime_ns"),
            }
        }
    return files


def file_entry(doc: LoadedDocument) -> dict[str, Any]:
    """The ``files`` entry of a loaded document."""
    return {"sha256": doc.sha256, "size": doc.size, "mtime_ns": str(doc.mtime_ns)}


def with_files(meta: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``meta`` with its ``files`` map (and the primary path's fields) set to ``files``."""
    out = dict(meta)
    primary = sorted(files)[0]
    entry = files[primary]
    out.update(
        files=json.dumps(files, sort_keys=True),
        path=primary,
        sha256=str(entry.get("sha256") or ""),
        size=int(entry.get("size") or 0),
        mtime_ns=str(entry.get("mtime_ns") or ""),
    )
    return out


def pages(collection: Any, include: list[str]) -> Iterator[dict[str, Any]]:
    """Every record of ``collection`` in pages of :data:`PAGE` (``include`` as in ``get``).

    The ids are read first, in one request, then each page by its ids. Chroma serves a ``get``
    with an ``offset`` by skipping that many rows, so paging through a collection by offset costs
    quadratically in its size (a 10^5-record collection on a ``chroma run`` server: 15 s by
    offset, 4 s by ids; at 10^6 records, minutes against under a minute). Records deleted
    meanwhile are left out; a collection with no records gives one empty page.
    """
    ids = list(collection.get(include=[]).get("ids") or [])
    if not ids:
        yield collection.get(include=include, limit=PAGE)
        return
    for start in range(0, len(ids), PAGE):
        batch = ids[start : start + PAGE]
        yield collection.get(ids=batch, include=include) if include else {"ids": batch}


class StoreReader:
    """Read access to an opened collection pair.

    Args:
        connection: The store's connection.
    """

    def __init__(self, connection: StoreConnection) -> None:
        self._conn = connection
        self._docs = DocumentCache()
        self._marked: Any = None

    def document_records(
        self, include_text: bool = False, progress: Callable[[str, int], None] | None = None
    ) -> dict[str, dict[str, Any]]:
        """Every document record by id (with ``__text__`` if ``include_text``); ``progress``
        is called with ``("documents", n)`` after each page."""
        _, documents = self._conn.open()
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        out: dict[str, dict[str, Any]] = {}
        for page in pages(documents, include):
            ids = page.get("ids") or []
            metas = page.get("metadatas") or [None] * len(ids)
            texts = page.get("documents") or [None] * len(ids)
            for doc_id, meta, text in zip(ids, metas, texts, strict=False):
                record = unpack_record(meta)
                if include_text:
                    record["__text__"] = text
                out[doc_id] = record
            if progress is not None:
                progress("documents", len(ids))
        return out

    def committed_ids(self) -> list[str]:
        """Ids of the documents whose record exists (fully indexed), sorted."""
        _, documents = self._conn.open()
        ids: list[str] = []
        for page in pages(documents, []):
            ids.extend(page.get("ids") or [])
        ids.sort()
        self._conn.note_committed(ids)  # another process indexed: reopen to see its vectors
        return ids

    def iter_chunks(self, include_text: bool) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        """``(chunk_id, metadata, text or None)`` of every chunk record, committed or not."""
        chunks, _ = self._conn.open()
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        for page in pages(chunks, include):
            ids = page.get("ids") or []
            metas = page.get("metadatas") or [None] * len(ids)
            texts = page.get("documents") or [None] * len(ids)
            for chunk_id, meta, text in zip(ids, metas, texts, strict=False):
                body, fields = chunk_row(text, meta)
                yield chunk_id, fields, body if include_text else None

    def chunk_texts_of(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """The texts of every chunk of ``doc_ids``, by chunk id (a targeted read, no scan)."""
        chunks, _ = self._conn.open()
        out: dict[str, str] = {}
        for start in range(0, len(doc_ids), 500):
            page = list(doc_ids[start : start + 500])
            got = chunks.get(where={"doc_id": {"$in": page}}, include=["documents", "metadatas"])
            ids = got.get("ids") or []
            texts = got.get("documents") or [None] * len(ids)
            for cid, text, meta in zip(ids, texts, got.get("metadatas") or [], strict=False):
                out[cid] = chunk_row(text, meta)[0]
        return out

    def committed_among(self, doc_ids: Sequence[str]) -> set[str]:
        """Which of ``doc_ids`` have a document record (one targeted read)."""
        _, documents = self._conn.open()
        wanted = sorted({d for d in doc_ids if d})
        if not wanted:
            return set()
        return set(documents.get(ids=wanted, include=[]).get("ids") or [])

    def refresh(self) -> bool:
        """Reopen the collections if another process changed the store since the last call.

        The signature read is cheap -- the names of the saved BM25 index folders (an ``index``
        run that changed the committed documents saves a new fingerprint) and the journal's
        modification time -- so a long-lived reader checks it per question instead of listing
        every committed document. A Chroma server needs no reopen.

        Returns:
            Whether the collections were reopened.
        """
        conn = self._conn
        if conn.chroma_url:
            return False
        try:
            journal: int | None = conn.journal_path.stat().st_mtime_ns
        except OSError:
            journal = None
        state = (tuple(BM25Index.saved_fingerprints(conn.bm25_dir)), journal)
        return conn.note_disk_state(state)

    def is_clean(self) -> bool:
        """Whether no chunk can lack its commit marker, so query results need no check.

        Embedded (one writer, ``PersistentClient`` is single-process): the journal is absent,
        i.e. no ``index`` run is in progress or was killed since the last complete one. A
        Chroma server: also no writer mark on the collection within the lease (read at most
        once per :data:`~selfroute.stores._visibility.LEASE_S`, see :mod:`._visibility`).
        """
        conn = self._conn
        if conn.journal_path.exists():
            return False
        return not conn.chroma_url or conn.unmarked()

    def document_count(self) -> int:
        """How many documents are committed."""
        _, documents = self._conn.open()
        return int(documents.count())

    def _cache_mark(self, documents: Any) -> tuple[Any, ...] | None:
        """The mark the remembered documents are valid under (:mod:`._doccache`), or ``None``
        (a Chroma server, a client the caller gave, a database written moments ago)."""
        conn = self._conn
        if conn.chroma_url or not conn.owns_client:
            return None
        mark = file_mark(conn.path / DATABASE_FILE)
        if mark is None:
            return None
        self._marked = documents  # alive while marked: its id is not reused meanwhile
        return (mark, id(documents))

    def get_documents(self, doc_ids: Sequence[str]) -> list[ContextDocument]:
        """Full documents by id, in the order given (unknown ids are left out).

        Documents read before are remembered while the store provably has not changed since
        (:mod:`._doccache`): a question pricing always-LC does not read them again.
        """
        _, documents = self._conn.open()
        wanted = list(dict.fromkeys(d for d in doc_ids if d))
        if not wanted:
            return []
        mark = self._cache_mark(documents)
        found = self._docs.get(mark, wanted)
        missing = [d for d in wanted if d not in found]
        if missing:
            read = self._read_documents(documents, missing)
            self._docs.put(mark, read)
            found.update(read)
        out = []
        for doc_id in wanted:
            if doc_id in found and found[doc_id][0]:
                text, meta = found[doc_id]
                meta.pop("files", None)
                meta.pop(TEXT_IN_CHUNK, None)
                meta["source"] = meta.get("path")
                out.append(ContextDocument(text=text, doc_id=doc_id, metadata=meta))
        return out

    def _read_documents(
        self, documents: Any, wanted: list[str]
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        """``(text, record)`` of the ``wanted`` documents found (a long text from its chunk)."""
        page = documents.get(ids=wanted, include=["metadatas", "documents"])
        found = {
            doc_id: (text, unpack_record(meta))
            for doc_id, text, meta in zip(
                page.get("ids") or [],
                page.get("documents") or [],
                page.get("metadatas") or [],
                strict=False,
            )
        }
        in_chunk = [f"{d}:0" for d in wanted if d in found and found[d][1].get(TEXT_IN_CHUNK)]
        for chunk_id, (text, _) in self.get_chunks(in_chunk).items():
            doc_id = chunk_id.rsplit(":", 1)[0]
            found[doc_id] = (text, found[doc_id][1])
        return found

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Chunk texts and metadata by id."""
        chunks, _ = self._conn.open()
        if not chunk_ids:
            return {}
        page = chunks.get(ids=list(chunk_ids), include=["metadatas", "documents"])
        ids = page.get("ids") or []
        return {
            cid: chunk_row(text, meta)
            for cid, text, meta in zip(
                ids,
                page.get("documents") or [None] * len(ids),
                page.get("metadatas") or [],
                strict=False,
            )
        }

    def dense_search(self, query: str, n: int, committed: set[str] | None = None) -> list[Passage]:
        """The ``n`` nearest chunks to ``query`` (of committed documents), best first.

        ``score`` is the cosine similarity; chunks of equal score come in
        :func:`~selfroute.stores._ties.chunk_order` (Chroma's own order of equal distances
        differs between processes), and when equal scores straddle the cut the query widens
        until it sees the end of them, so the same question gets the same chunks everywhere.
        """
        chunks, _ = self._conn.open()
        if n < 1:
            return []
        conn = self._conn
        vector = embed_query(conn.embedding_function(), conn.embedding, query)
        extra = 0 if committed is None else max(10, n)
        include = ["metadatas", "documents", "distances"]
        asked = n + extra + max(n, 8)  # a few past the cut: ties there are seen, not guessed
        total: int | None = None
        while True:
            try:
                result = chunks.query(query_embeddings=[vector], n_results=asked, include=include)
            except Exception:  # Chroma versions that refuse more results than records
                total = chunks.count() if total is None else total
                if total == 0:
                    return []
                if asked <= total:
                    raise
                asked = total
                continue
            ids = (result.get("ids") or [[]])[0]
            texts = (result.get("documents") or [[None] * len(ids)])[0]
            metas = (result.get("metadatas") or [[]])[0]
            dists = (result.get("distances") or [[]])[0]
            out: list[Passage] = []
            for chunk_id, row_text, row_meta, dist in zip(ids, texts, metas, dists, strict=False):
                text, meta = chunk_row(row_text, row_meta)
                if committed is not None and meta.get("doc_id") not in committed:
                    continue  # a chunk of an interrupted, uncommitted write
                meta["chunk_id"] = chunk_id
                out.append(
                    Passage(
                        text=text,
                        doc_id=meta.get("doc_id"),
                        score=1.0 - float(dist),
                        metadata=meta,
                        source=chunk_id,
                    )
                )
            out.sort(key=lambda p: (-float(p.score or 0.0), chunk_order(str(p.source))))
            worst = 1.0 - float(max(dists)) if dists else 0.0
            scores = [float(p.score or 0.0) for p in out]
            exhausted = total is not None and asked >= total
            if exhausted or not more_ties(scores, n, len(ids), asked, worst):
                return out[:n]
            asked = min(asked * 2, TIE_CAP)
