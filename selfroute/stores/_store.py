"""The document store: chunks and full documents in Chroma, a BM25 index beside them.

Layout, for a collection ``NAME``:

* ``NAME`` -- one record per 300-word chunk. Id ``<doc_id>:<chunk_index>`` where ``doc_id`` is the
  content hash of the document's text (:func:`selfroute.document_id`); metadata ``doc_id``,
  ``source`` (the file), ``chunk_index``, ``start``, ``end``, ``words``, ``title``. The collection's
  metadata records the embedding (``selfroute:embedding``) and the chunk size.
* ``NAME__documents`` -- one record per document, id ``doc_id``, the full text as the record's
  document, metadata ``path``, ``sha256``, ``mtime_ns``, ``size``, ``words``, ``chunks``, ``format``,
  ``title`` and ``files`` (every path with this content). The long-context route loads these.
* ``<store>/bm25/...`` -- a ``bm25s`` index of the committed chunks (:mod:`._bm25`).

Crash safety: a document's chunks are written first and its document record last. The record is
the commit marker: retrieval only serves chunks of documents that have a record, and ``index``
(re)writes any file whose record is missing or whose content changed, after deleting whatever
chunks a killed run left for it. Removing a document deletes the record first, then the chunks.
So an ``index`` killed at any point leaves a consistent store, and running it again completes it.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from selfroute._chunking import DEFAULT_CHUNK_WORDS, chunk_text
from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._fitting import ContextDocument
from selfroute._result import Passage
from selfroute.stores._bm25 import BM25Index, fingerprint
from selfroute.stores._discovery import Skipped, discover_files
from selfroute.stores._embedding import (
    EmbeddingChoice,
    create_embedding_function,
    embed_documents,
    embed_query,
)
from selfroute.stores._errors import (
    CollectionNotFoundError,
    DocumentReadError,
    EmbeddingMismatchError,
    StoreError,
)
from selfroute.stores._readers import DEFAULT_MAX_FILE_BYTES, LoadedDocument, read_document

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_STORE",
    "DOCUMENTS_SUFFIX",
    "DocumentStore",
    "IndexReport",
    "StoreStats",
]

#: Default folder of the embedded store.
DEFAULT_STORE = ".selfroute"
#: Default collection name.
DEFAULT_COLLECTION = "selfroute"
#: Suffix of the collection holding the full documents.
DOCUMENTS_SUFFIX = "__documents"

_SCHEMA = 1
_META_SCHEMA = "selfroute:schema"
_META_EMBEDDING = "selfroute:embedding"
_META_EMBEDDING_URL = "selfroute:embedding_base_url"
_META_CHUNK_WORDS = "selfroute:chunk_words"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,480}[A-Za-z0-9])$")
_PAGE = 2000
_EMBED_BATCH = 64
#: Test hook: print a marker after each file's chunks are written and after each commit, and sleep
#: (``SECONDS``) or stop there (``EVENT#N``), so tests can kill ``index`` at a known point.
_SLOW_ENV = "SELFROUTE_TEST_SLOW_INDEX"

ProgressFn = Callable[[str, Mapping[str, Any]], None]


def _validate_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ConfigurationError(
            f"invalid collection name {name!r}: use 3-480 characters from letters, digits, '.', "
            "'_' and '-', starting and ending with a letter or digit"
        )
    return name


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
        }


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


def _files_of(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
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


def _file_entry(doc: LoadedDocument) -> dict[str, Any]:
    return {"sha256": doc.sha256, "size": doc.size, "mtime_ns": str(doc.mtime_ns)}


def _with_files(meta: Mapping[str, Any], files: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
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


_hook_counts: dict[str, int] = {}


def _slow_hook(event: str, path: object) -> None:
    """Test hook (``SELFROUTE_TEST_SLOW_INDEX``): print a marker line on stderr at each write
    event, then sleep ``SECONDS``; or, with ``EVENT#N``, stop at the N-th ``EVENT`` until killed."""
    setting = os.environ.get(_SLOW_ENV)
    if not setting:
        return
    import sys

    _hook_counts[event] = _hook_counts.get(event, 0) + 1
    print(f"[selfroute-test] {event} {path}", file=sys.stderr, flush=True)
    name, sep, count = setting.partition("#")
    if not sep:
        time.sleep(float(setting))
    elif name == event and _hook_counts[event] == int(count):
        time.sleep(600)


@contextlib.contextmanager
def _quiet_chroma() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"chromadb(\..*)?")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"chromadb(\..*)?")
        yield


class DocumentStore:
    """Chunks and full documents of a folder of files, in Chroma, with a BM25 index.

    Args:
        path: Folder of the embedded store (``PersistentClient``) and of the BM25 index. With
            ``chroma_url`` it only holds the BM25 index.
        collection: Collection name (the documents go to ``<collection>__documents``).
        chroma_url: ``http://host:port`` of a Chroma server (``chromadb.HttpClient``).
        embedding: The embedding (:class:`EmbeddingChoice` or ``"kind[:model]"``); ``None``
            uses what the collection was indexed with (``default`` for a new one). Asking for a
            different one than recorded raises :class:`EmbeddingMismatchError`.
        chunk_words: Words per chunk for a new collection (``None``: as recorded, else 300).
        embedding_base_url: OpenAI-compatible server for an ``openai`` embedding (overrides
            the one recorded with the collection).
        client: A ready ``chromadb`` client (overrides ``path``/``chroma_url`` for Chroma).

    Example:
        >>> store = DocumentStore(".selfroute", embedding="offline")  # doctest: +SKIP
        >>> store.index(["docs/"]).added  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_STORE,
        collection: str = DEFAULT_COLLECTION,
        *,
        chroma_url: str | None = None,
        embedding: EmbeddingChoice | str | None = None,
        chunk_words: int | None = None,
        embedding_base_url: str | None = None,
        client: Any = None,
    ) -> None:
        self.path = Path(path)
        self.collection_name = _validate_name(collection)
        self.chroma_url = chroma_url.rstrip("/") if chroma_url else None
        if isinstance(embedding, str):
            embedding = EmbeddingChoice.parse(embedding, base_url=embedding_base_url)
        self._embedding_base_url = embedding_base_url
        self._requested = embedding
        if chunk_words is not None and (not isinstance(chunk_words, int) or chunk_words < 1):
            raise ConfigurationError(f"chunk_words must be a positive integer, got {chunk_words!r}")
        self._requested_chunk_words = chunk_words
        self._client = client
        self._chunks: Any = None
        self._documents: Any = None
        self._choice: EmbeddingChoice | None = None
        self._function: Any = None
        self._bm25: BM25Index | None = None

    # -- connection ------------------------------------------------------------------------------
    @property
    def location(self) -> str:
        """Where the collection lives (folder or server URL)."""
        return self.chroma_url or str(self.path)

    def _connect(self, create: bool) -> Any:
        if self._client is not None:
            return self._client
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as exc:
            raise MissingDependencyError("chromadb", "chroma") from exc
        settings = Settings(anonymized_telemetry=False)
        if self.chroma_url:
            parts = urlsplit(
                self.chroma_url if "//" in self.chroma_url else f"http://{self.chroma_url}"
            )
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigurationError(
                    f"--chroma-url must look like http://host:port, got {self.chroma_url!r}"
                )
            port = parts.port or (443 if parts.scheme == "https" else 8000)
            try:
                with _quiet_chroma():
                    self._client = chromadb.HttpClient(
                        host=parts.hostname,
                        port=port,
                        ssl=parts.scheme == "https",
                        settings=settings,
                    )
            except Exception as exc:
                raise StoreError(
                    f"cannot reach the Chroma server at {self.chroma_url}: {exc}"
                ) from exc
            return self._client
        if not create and not self.path.is_dir():
            raise CollectionNotFoundError(
                f"no store at {self.path}: run `selfroute index PATH` first (or pass --store)",
                location=str(self.path),
            )
        try:
            with _quiet_chroma():
                # an absolute path: Chroma caches clients by path string, and a relative one
                # would follow the working directory to another store
                self._client = chromadb.PersistentClient(
                    path=str(self.path.resolve()), settings=settings
                )
        except Exception as exc:
            raise StoreError(f"cannot open the store at {self.path}: {exc}") from exc
        return self._client

    def _register_functions(self) -> None:
        # collections created with the offline function reopen only once it is registered
        from selfroute._embeddings import chroma_embedding_function

        chroma_embedding_function()

    def _open(self, create: bool = False) -> tuple[Any, Any]:
        if self._chunks is not None:
            return self._chunks, self._documents
        client = self._connect(create)
        self._register_functions()
        name = self.collection_name
        docs_name = name + DOCUMENTS_SUFFIX
        try:
            with _quiet_chroma():
                existing = {c if isinstance(c, str) else c.name for c in client.list_collections()}
        except Exception as exc:
            raise StoreError(f"cannot list collections at {self.location}: {exc}") from exc
        if name in existing and create and self._requested is not None:
            self._reset_if_empty(client, name, docs_name)
            with _quiet_chroma():
                existing = {c if isinstance(c, str) else c.name for c in client.list_collections()}
        if name not in existing:
            if not create:
                raise CollectionNotFoundError(
                    f"collection {name!r} does not exist at {self.location}: run "
                    "`selfroute index PATH` first (or pass the right --collection)",
                    collection=name,
                )
            choice = self._requested or EmbeddingChoice()
            words = self._requested_chunk_words or DEFAULT_CHUNK_WORDS
            function = create_embedding_function(choice)
            # fail before creating anything if the model cannot be loaded (offline default)
            embed_documents(function, choice, ["selfroute embedding check"])
            metadata: dict[str, Any] = {
                _META_SCHEMA: _SCHEMA,
                _META_EMBEDDING: choice.spec,
                _META_CHUNK_WORDS: words,
                "selfroute:created": _dt.datetime.now(_dt.timezone.utc).isoformat(),
            }
            if choice.base_url:
                metadata[_META_EMBEDDING_URL] = choice.base_url
            with _quiet_chroma():
                chunks = client.get_or_create_collection(
                    name,
                    embedding_function=function,
                    metadata=metadata,
                    configuration={"hnsw": {"space": "cosine"}},
                )
            self._function = function
        else:
            with _quiet_chroma():
                chunks = client.get_collection(name)
        with _quiet_chroma():
            documents = client.get_or_create_collection(
                docs_name,
                embedding_function=None,
                metadata={_META_SCHEMA: _SCHEMA, "selfroute:chunks": name},
            )
        meta = dict(chunks.metadata or {})
        if _META_EMBEDDING not in meta:
            raise StoreError(
                f"collection {name!r} at {self.location} was not created by selfroute (no "
                f"{_META_EMBEDDING} in its metadata); choose another --collection"
            )
        recorded = EmbeddingChoice.parse(
            str(meta[_META_EMBEDDING]), base_url=meta.get(_META_EMBEDDING_URL) or None
        )
        requested = self._requested
        if requested is not None and requested.spec != recorded.spec:
            raise EmbeddingMismatchError(
                f"collection {name!r} was indexed with the {recorded.spec} embedding, but "
                f"{requested.spec} was asked for; drop --embedding (the recorded one is used), "
                f"pass --embedding {recorded.kind}, or index into a new --collection",
                recorded=recorded.spec,
                requested=requested.spec,
            )
        base_url = (requested.base_url if requested else None) or self._embedding_base_url
        if base_url:
            recorded = EmbeddingChoice(recorded.kind, recorded.model, base_url)
        words = int(meta.get(_META_CHUNK_WORDS) or DEFAULT_CHUNK_WORDS)
        if self._requested_chunk_words is not None and self._requested_chunk_words != words:
            raise ConfigurationError(
                f"collection {name!r} was chunked with {words} words per chunk, but "
                f"--chunk-words {self._requested_chunk_words} was given; drop it or index into a "
                "new --collection"
            )
        self._choice = recorded
        self.chunk_words = words
        self._chunks, self._documents = chunks, documents
        return chunks, documents

    def _reset_if_empty(self, client: Any, name: str, docs_name: str) -> None:
        """Drop a collection that holds nothing yet, so a new embedding can be chosen."""
        with _quiet_chroma():
            chunks = client.get_collection(name)
            recorded = (chunks.metadata or {}).get(_META_EMBEDDING)
            if recorded == (self._requested.spec if self._requested else None):
                return
            if chunks.count() > 0:
                return
            try:
                if client.get_collection(docs_name).count() > 0:
                    return
                client.delete_collection(docs_name)
            except Exception:  # the documents collection may not exist
                pass
            client.delete_collection(name)

    @property
    def embedding(self) -> EmbeddingChoice:
        """The collection's embedding (opens the collection)."""
        self._open()
        assert self._choice is not None
        return self._choice

    def exists(self) -> bool:
        """Whether the collection exists (never creates it)."""
        try:
            self._open(create=False)
        except CollectionNotFoundError:
            return False
        return True

    def _embedding_function(self) -> Any:
        if self._function is None:
            self._function = create_embedding_function(self.embedding)
        return self._function

    # -- reading ---------------------------------------------------------------------------------
    def _document_records(self, include_text: bool = False) -> dict[str, dict[str, Any]]:
        _, documents = self._open()
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        out: dict[str, dict[str, Any]] = {}
        offset = 0
        while True:
            page = documents.get(include=include, limit=_PAGE, offset=offset)
            ids = page.get("ids") or []
            metas = page.get("metadatas") or [None] * len(ids)
            texts = page.get("documents") or [None] * len(ids)
            for doc_id, meta, text in zip(ids, metas, texts, strict=False):
                record = dict(meta or {})
                if include_text:
                    record["__text__"] = text
                out[doc_id] = record
            if len(ids) < _PAGE:
                return out
            offset += _PAGE

    def committed_ids(self) -> list[str]:
        """Ids of the documents whose record exists (fully indexed), sorted."""
        _, documents = self._open()
        ids: list[str] = []
        offset = 0
        while True:
            page = documents.get(include=[], limit=_PAGE, offset=offset)
            batch = list(page.get("ids") or [])
            ids.extend(batch)
            if len(batch) < _PAGE:
                return sorted(ids)
            offset += _PAGE

    def _iter_chunks(self, include_text: bool) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        chunks, _ = self._open()
        include = ["metadatas", "documents"] if include_text else ["metadatas"]
        offset = 0
        while True:
            page = chunks.get(include=include, limit=_PAGE, offset=offset)
            ids = page.get("ids") or []
            metas = page.get("metadatas") or [None] * len(ids)
            texts = page.get("documents") or [None] * len(ids)
            for chunk_id, meta, text in zip(ids, metas, texts, strict=False):
                yield chunk_id, dict(meta or {}), text
            if len(ids) < _PAGE:
                return
            offset += _PAGE

    def get_documents(self, doc_ids: Sequence[str]) -> list[ContextDocument]:
        """Full documents by id, in the order given (unknown ids are left out)."""
        _, documents = self._open()
        wanted = list(dict.fromkeys(d for d in doc_ids if d))
        if not wanted:
            return []
        page = documents.get(ids=wanted, include=["metadatas", "documents"])
        found = {
            doc_id: (text, dict(meta or {}))
            for doc_id, text, meta in zip(
                page.get("ids") or [],
                page.get("documents") or [],
                page.get("metadatas") or [],
                strict=False,
            )
        }
        out = []
        for doc_id in wanted:
            if doc_id in found and found[doc_id][0]:
                text, meta = found[doc_id]
                meta.pop("files", None)
                meta["source"] = meta.get("path")
                out.append(ContextDocument(text=text, doc_id=doc_id, metadata=meta))
        return out

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Chunk texts and metadata by id."""
        chunks, _ = self._open()
        if not chunk_ids:
            return {}
        page = chunks.get(ids=list(chunk_ids), include=["metadatas", "documents"])
        return {
            cid: (text or "", dict(meta or {}))
            for cid, text, meta in zip(
                page.get("ids") or [],
                page.get("documents") or [],
                page.get("metadatas") or [],
                strict=False,
            )
        }

    def dense_search(self, query: str, n: int, committed: set[str] | None = None) -> list[Passage]:
        """The ``n`` nearest chunks to ``query`` (of committed documents), best first.

        ``score`` is the cosine similarity.
        """
        chunks, _ = self._open()
        total = chunks.count()
        if total == 0 or n < 1:
            return []
        vector = embed_query(self._embedding_function(), self.embedding, query)
        extra = 0 if committed is None else max(10, n)
        result = chunks.query(
            query_embeddings=[vector],
            n_results=min(total, n + extra),
            include=["metadatas", "documents", "distances"],
        )
        out: list[Passage] = []
        ids = (result.get("ids") or [[]])[0]
        texts = (result.get("documents") or [[]])[0]
        metas = (result.get("metadatas") or [[]])[0]
        dists = (result.get("distances") or [[]])[0]
        for chunk_id, text, meta, dist in zip(ids, texts, metas, dists, strict=False):
            meta = dict(meta or {})
            if committed is not None and meta.get("doc_id") not in committed:
                continue  # a chunk of an interrupted, uncommitted write
            meta["chunk_id"] = chunk_id
            out.append(
                Passage(
                    text=text or "",
                    doc_id=meta.get("doc_id"),
                    score=1.0 - float(dist),
                    metadata=meta,
                    source=chunk_id,
                )
            )
            if len(out) >= n:
                break
        return out

    # -- BM25 ------------------------------------------------------------------------------------
    @property
    def bm25_dir(self) -> Path:
        """Folder of this collection's BM25 indexes."""
        if self.chroma_url:
            parts = urlsplit(
                self.chroma_url if "//" in self.chroma_url else f"http://{self.chroma_url}"
            )
            server = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{parts.hostname}_{parts.port or ''}")
            return self.path / "bm25" / f"server-{server}" / self.collection_name
        return self.path / "bm25" / self.collection_name

    def _fingerprint(self, committed: Iterable[str]) -> str:
        self._open()
        return fingerprint(committed, self.chunk_words, self.embedding.spec)

    def bm25(self, committed: Sequence[str] | None = None) -> BM25Index:
        """The BM25 index of the committed chunks, loaded, or rebuilt if stale."""
        ids = self.committed_ids() if committed is None else sorted(committed)
        fp = self._fingerprint(ids)
        if self._bm25 is not None and self._bm25.fingerprint == fp:
            return self._bm25
        index = BM25Index.load(self.bm25_dir, fp)
        if index is None:
            index = self.rebuild_bm25(ids)[0]
        self._bm25 = index
        return index

    def rebuild_bm25(self, committed: Sequence[str] | None = None) -> tuple[BM25Index, list[str]]:
        """Rebuild and save the BM25 index from the committed chunks.

        Returns:
            The index and the ids of orphan chunks seen (chunks without a document record).
        """
        ids = self.committed_ids() if committed is None else sorted(committed)
        keep = set(ids)
        chunk_ids: list[str] = []
        texts: list[str] = []
        orphans: list[str] = []
        for chunk_id, meta, text in self._iter_chunks(include_text=True):
            if meta.get("doc_id") in keep:
                chunk_ids.append(chunk_id)
                texts.append(text or "")
            else:
                orphans.append(chunk_id)
        index = BM25Index.build(chunk_ids, texts, self._fingerprint(ids))
        # a read-only location still leaves the in-memory index serving this process
        with contextlib.suppress(OSError):
            index.save(self.bm25_dir)
        self._bm25 = index
        return index, orphans

    def bm25_state(self) -> tuple[str, int | None]:
        """``("current" | "stale" | "missing", indexed chunks or None)``."""
        fp = self._fingerprint(self.committed_ids())
        saved = BM25Index.saved_fingerprints(self.bm25_dir)
        if fp in saved:
            index = BM25Index.load(self.bm25_dir, fp)
            return ("current", len(index)) if index is not None else ("missing", None)
        return ("stale" if saved else "missing", None)

    # -- writing ---------------------------------------------------------------------------------
    def _write_document(
        self, doc: LoadedDocument, meta: dict[str, Any], progress: ProgressFn | None
    ) -> int:
        chunks_col, documents = self._open()
        doc_id = doc.doc_id
        pieces = chunk_text(doc.text, doc_id=doc_id, chunk_words=self.chunk_words)
        # chunks a killed run may have left for this content
        chunks_col.delete(where={"doc_id": doc_id})
        function = self._embedding_function()
        for start in range(0, len(pieces), _EMBED_BATCH):
            batch = pieces[start : start + _EMBED_BATCH]
            vectors = embed_documents(function, self.embedding, [c.text for c in batch])
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
        _slow_hook("chunks-written", doc.path)
        meta = dict(meta, chunks=len(pieces))
        documents.upsert(ids=[doc_id], documents=[doc.text], metadatas=[meta], embeddings=[[1.0]])
        _slow_hook("committed", doc.path)
        return len(pieces)

    def _delete_document(self, doc_id: str) -> None:
        chunks_col, documents = self._open()
        documents.delete(ids=[doc_id])  # un-commit first: a crash now leaves only orphans
        chunks_col.delete(where={"doc_id": doc_id})

    def _detach(self, records: dict[str, dict[str, Any]], doc_id: str, path: str) -> bool:
        """Remove ``path`` from a record; delete the document if no path is left.

        Returns:
            Whether the document was deleted.
        """
        _, documents = self._open()
        record = records.get(doc_id)
        if record is None:
            return False
        files = _files_of(record)
        files.pop(path, None)
        if files:
            record = _with_files(record, files)
            documents.update(ids=[doc_id], metadatas=[record])
            records[doc_id] = record
            return False
        self._delete_document(doc_id)
        records.pop(doc_id, None)
        return True

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        lock_path = self.path / f".index-{self.collection_name}.lock"
        with open(lock_path, "a+") as handle:
            try:
                import fcntl
            except ImportError:  # pragma: no cover - Windows: no advisory lock
                yield
                return
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise StoreError(
                    f"another `selfroute index` is writing collection {self.collection_name!r} "
                    f"in {self.path}; wait for it to finish"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def index(
        self,
        paths: Sequence[str | os.PathLike[str]],
        *,
        prune: bool = False,
        follow_symlinks: bool = False,
        max_file_bytes: int | None = DEFAULT_MAX_FILE_BYTES,
        progress: ProgressFn | None = None,
    ) -> IndexReport:
        """Index files and folders (idempotent, crash-safe).

        Unchanged files (same size and modification time, or same content) are skipped; a file
        whose content changed replaces its old chunks; with ``prune``, documents under ``paths``
        whose files are gone (or no longer readable) are removed. Chunks an interrupted run left
        behind are deleted.

        Args:
            paths: Files and folders.
            prune: Remove documents under ``paths`` whose files no longer exist.
            follow_symlinks: Follow links that point outside the folders given.
            max_file_bytes: Skip larger files.
            progress: ``progress(event, info)`` with events ``files`` (``{"total"}``), ``file``
                (``{"path", "status"}``) and ``chunks`` (``{"count"}``).

        Returns:
            The :class:`IndexReport`.
        """
        started = time.perf_counter()
        report = IndexReport()
        with self._lock():
            self._open(create=True)
            found, skipped = discover_files(
                paths, follow_symlinks=follow_symlinks, exclude=[self.path]
            )
            report.skipped.extend(skipped)
            report.files = len(found)
            if progress is not None:
                progress("files", {"total": len(found)})
            records = self._document_records()
            by_path: dict[str, set[str]] = {}
            for doc_id, record in records.items():
                for path in _files_of(record):
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
                roots = [Path(os.path.abspath(p)) for p in paths]
                for path, doc_ids in sorted(by_path.items()):
                    p = Path(path)
                    under = any(p == r or r in p.parents for r in roots)
                    if under and path not in seen:
                        for doc_id in sorted(doc_ids):
                            self._detach(records, doc_id, path)
                        report.removed.append(path)
            committed = self.committed_ids()
            fp = self._fingerprint(committed)
            if report.changed or prune or fp not in BM25Index.saved_fingerprints(self.bm25_dir):
                _, orphans = self.rebuild_bm25(committed)
                report.bm25_rebuilt = True
                if orphans:
                    chunks_col, _ = self._open()
                    for start in range(0, len(orphans), _PAGE):
                        chunks_col.delete(ids=orphans[start : start + _PAGE])
                    report.orphan_chunks_removed = len(orphans)
        report.seconds = time.perf_counter() - started
        return report

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
            entry = _files_of(records[old_id]).get(key, {})
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
        _, documents = self._open()
        if doc_id in records:
            files = _files_of(records[doc_id])
            if files.get(key) != _file_entry(doc):
                files[key] = _file_entry(doc)
                record = _with_files(records[doc_id], files)
                documents.update(ids=[doc_id], metadatas=[record])
                records[doc_id] = record
            status = "unchanged"
            report.unchanged += 1
        else:
            files = {key: _file_entry(doc)}
            meta = _with_files(
                {
                    "doc_id": doc_id,
                    "title": doc.title,
                    "format": doc.format,
                    "words": doc.words,
                    "chunk_words": self.chunk_words,
                    "indexed_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
                },
                files,
            )
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

    # -- facts -----------------------------------------------------------------------------------
    def stats(self, *, documents: bool = False) -> StoreStats:
        """Counts of documents, chunks and words; embedding; BM25 state; orphan chunks.

        Args:
            documents: Also list every document (path, words, chunks, format).
        """
        chunks_col, _ = self._open()
        records = self._document_records()
        committed = set(records)
        orphans = sum(
            1
            for _, meta, _ in self._iter_chunks(include_text=False)
            if meta.get("doc_id") not in committed
        )
        state, bm25_chunks = self.bm25_state()
        formats: dict[str, int] = {}
        for r in records.values():
            fmt = str(r.get("format") or "?")
            formats[fmt] = formats.get(fmt, 0) + 1
        listing = []
        if documents:
            for doc_id, r in sorted(records.items(), key=lambda kv: str(kv[1].get("path"))):
                listing.append(
                    {
                        "doc_id": doc_id,
                        "path": r.get("path"),
                        "paths": sorted(_files_of(r)),
                        "title": r.get("title"),
                        "format": r.get("format"),
                        "words": int(r.get("words") or 0),
                        "chunks": int(r.get("chunks") or 0),
                    }
                )
        return StoreStats(
            location=self.location,
            collection=self.collection_name,
            documents=len(records),
            chunks=chunks_col.count() - orphans,
            words=sum(int(r.get("words") or 0) for r in records.values()),
            embedding=self.embedding.spec,
            chunk_words=self.chunk_words,
            bm25=state,
            bm25_chunks=bm25_chunks,
            orphan_chunks=orphans,
            formats=formats,
            document_list=listing,
        )
