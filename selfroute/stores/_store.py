"""The document store: chunks and full documents in Chroma, a BM25 index beside them.

Layout, for a collection ``NAME``:

* ``NAME`` -- one record per 300-word chunk. Id ``<doc_id>:<chunk_index>`` where ``doc_id`` is the
  content hash of the document's text (:func:`selfroute.document_id`); metadata ``doc_id``,
  ``source`` (the file), ``chunk_index``, ``start``, ``end``, ``words``, ``title``. The collection's
  metadata records the embedding (``selfroute:embedding``) and the chunk size.
* ``NAME__documents`` -- one record per document, id ``doc_id``, the full text as the record's
  document (empty when its only chunk holds all of it), fields ``path``, ``sha256``, ``mtime_ns``,
  ``size``, ``words``, ``chunks``, ``format``, ``title`` and ``files`` (every path with this
  content), stored as one JSON metadata value since schema 2 (:func:`._records.pack_record`;
  older stores, one metadata field each, are read as they are). The long-context route loads
  these.
* ``<store>/bm25/...`` -- a ``bm25s`` index of the committed chunks (:mod:`._bm25`).

:class:`DocumentStore` is a facade over four parts, one module each: the connection and schema
(:mod:`._connection`), reading (:mod:`._records`), the BM25 index (:mod:`._lexical`) and indexing
with its crash-safety protocol (:mod:`._indexing`); :mod:`._stats` counts what a collection holds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._fitting import ContextDocument
from selfroute._result import Passage
from selfroute.stores._bm25 import BM25Index
from selfroute.stores._connection import (
    DEFAULT_COLLECTION,
    DEFAULT_STORE,
    DOCUMENTS_SUFFIX,
    StoreConnection,
)
from selfroute.stores._embedding import EmbeddingChoice, create_embedding_function
from selfroute.stores._errors import CollectionNotFoundError
from selfroute.stores._health import guarded
from selfroute.stores._hosted import (
    DEFAULT_EMBEDDING_CONCURRENCY,
    HOSTED_KINDS,
    HostedEmbedder,
    hosted_embedder,
)
from selfroute.stores._hosted_chroma import hosted_chroma_function
from selfroute.stores._indexing import Indexer, IndexReport, ProgressFn, slow_hook
from selfroute.stores._lexical import LexicalIndex
from selfroute.stores._readers import DEFAULT_MAX_FILE_BYTES
from selfroute.stores._records import StoreReader
from selfroute.stores._stats import StoreStats, collect_stats

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_STORE",
    "DOCUMENTS_SUFFIX",
    "DocumentStore",
    "IndexReport",
    "StoreStats",
]

# Looked up here at call time, so tests can replace them on this module.
_slow_hook = slow_hook


def _write_event(event: str, path: object) -> None:
    _slow_hook(event, path)


def _make_embedding_function(choice: EmbeddingChoice) -> Any:
    if choice.kind in HOSTED_KINDS:  # Chroma's class, selfroute's client (no SDK import)
        return hosted_chroma_function(choice)
    return create_embedding_function(choice)


def _check_concurrency(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(
            f"embedding_concurrency must be an integer >= 1 (requests in flight), got {value!r}"
        )
    return value


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
        fast_reads: Query an embedded store through chromadb's Rust bindings directly, without
            importing the ``chromadb`` package (much faster to start; same results), when the
            installed chromadb is one this reader was tested with; otherwise, and for any
            write, through the ``chromadb`` client. ``SELFROUTE_FAST_READS=0`` turns it off
            (see :mod:`selfroute.stores._fastread`). The command line's ``ask`` and ``chat``
            set it.
        embedding_concurrency: Requests in flight at once while :meth:`index` embeds through a
            hosted embedding (``openai``, ``google``): each batch of chunks goes out as
            token-sized requests within the provider's limits, retried after a 429 (honouring
            ``Retry-After``) or a 5xx; the writes keep their order.

    Raises:
        ConfigurationError: ``embedding_concurrency`` is not an integer >= 1.

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
        fast_reads: bool = False,
        embedding_concurrency: int = DEFAULT_EMBEDDING_CONCURRENCY,
    ) -> None:
        concurrency = _check_concurrency(embedding_concurrency)
        if isinstance(embedding, str):
            embedding = EmbeddingChoice.parse(embedding, base_url=embedding_base_url)
        self._conn = StoreConnection(
            path,
            collection,
            chroma_url=chroma_url,
            embedding=embedding,
            chunk_words=chunk_words,
            embedding_base_url=embedding_base_url,
            client=client,
            embedding_factory=_make_embedding_function,
        )
        self._conn.fast_reads = fast_reads and client is None and chroma_url is None
        self._reader = StoreReader(self._conn)
        self._lexical = LexicalIndex(self._conn, self._reader)

        def embedder(choice: EmbeddingChoice) -> HostedEmbedder | None:
            return hosted_embedder(choice, concurrency)

        self._indexer = Indexer(
            self._conn, self._reader, self._lexical, hook=_write_event, embedder=embedder
        )

    # -- connection ------------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        """Folder of the embedded store (or, with a server, of the BM25 index)."""
        return self._conn.path

    @property
    def collection_name(self) -> str:
        """The chunk collection's name."""
        return self._conn.collection_name

    @property
    def chroma_url(self) -> str | None:
        """The Chroma server's URL, if any."""
        return self._conn.chroma_url

    @property
    def location(self) -> str:
        """Where the collection lives (folder or server URL)."""
        return self._conn.location

    @property
    @guarded("opening", check_lock=True)
    def embedding(self) -> EmbeddingChoice:
        """The collection's embedding (opens the collection)."""
        return self._conn.embedding

    @property
    @guarded("opening")
    def chunk_words(self) -> int:
        """Words per chunk of the collection (opens the collection)."""
        return self._conn.chunk_words

    def _open(self, create: bool = False) -> tuple[Any, Any]:
        return self._conn.open(create)

    def _lock(self) -> contextlib.AbstractContextManager[None]:
        return self._conn.lock()

    @property
    def read_only(self) -> bool:
        """Whether the store folder is read-only (it is queried through a private copy)."""
        return self._conn.read_only

    def _check_lock(self) -> None:
        self._conn.check_lock()

    @guarded("opening", check_lock=True)
    def exists(self) -> bool:
        """Whether the collection exists (never creates it)."""
        try:
            self._conn.open(create=False)
        except CollectionNotFoundError:
            return False
        return True

    # -- reading ---------------------------------------------------------------------------------
    @guarded("reading", check_lock=True)
    def committed_ids(self) -> list[str]:
        """Ids of the documents whose record exists (fully indexed), sorted."""
        return self._reader.committed_ids()

    @guarded("reading", check_lock=True)
    def committed_among(self, doc_ids: Sequence[str]) -> set[str]:
        """Which of ``doc_ids`` are committed (one targeted read, not a listing)."""
        return self._reader.committed_among(doc_ids)

    @guarded("opening")
    def refresh(self) -> bool:
        """Reopen if another process changed the store (see :meth:`StoreReader.refresh`)."""
        return self._reader.refresh()

    @guarded("reading")
    def is_clean(self) -> bool:
        """Whether every chunk in the store is committed without checking (see
        :meth:`StoreReader.is_clean`)."""
        return self._reader.is_clean()

    @guarded("reading", check_lock=True)
    def document_count(self) -> int:
        """How many documents are committed."""
        return self._reader.document_count()

    def _document_records(self, include_text: bool = False) -> dict[str, dict[str, Any]]:
        return self._reader.document_records(include_text)

    def _iter_chunks(self, include_text: bool) -> Iterator[tuple[str, dict[str, Any], str | None]]:
        return self._reader.iter_chunks(include_text)

    @guarded("reading", check_lock=True)
    def get_documents(self, doc_ids: Sequence[str]) -> list[ContextDocument]:
        """Full documents by id, in the order given (unknown ids are left out)."""
        return self._reader.get_documents(doc_ids)

    @guarded("reading")
    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Chunk texts and metadata by id."""
        return self._reader.get_chunks(chunk_ids)

    @guarded("reading", check_lock=True)
    def dense_search(self, query: str, n: int, committed: set[str] | None = None) -> list[Passage]:
        """The ``n`` nearest chunks to ``query`` (of committed documents), best first.

        ``score`` is the cosine similarity.
        """
        return self._reader.dense_search(query, n, committed)

    # -- BM25 ------------------------------------------------------------------------------------
    @property
    def bm25_dir(self) -> Path:
        """Folder of this collection's BM25 indexes."""
        return self._conn.bm25_dir

    @guarded("reading")
    def bm25(self, committed: Sequence[str] | None = None) -> BM25Index:
        """The BM25 index of the committed chunks, loaded, or rebuilt if stale.

        Without ``committed``: the index the last ``index`` run saved (no listing of the
        committed documents); with no saved index, one rebuilt from the committed chunks.
        """
        return self._lexical.current(committed)

    @guarded("reading")
    def rebuild_bm25(self, committed: Sequence[str] | None = None) -> tuple[BM25Index, list[str]]:
        """Rebuild and save the BM25 index from the committed chunks.

        Returns:
            The index and the ids of orphan chunks seen (chunks without a document record).
        """
        return self._lexical.rebuild(committed)

    @guarded("reading")
    def bm25_state(self) -> tuple[str, int | None]:
        """``("current" | "stale" | "missing", indexed chunks or None)``."""
        return self._lexical.state()

    # -- writing ---------------------------------------------------------------------------------
    @guarded("indexing into", check_lock=True)
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
                (``{"path", "status"}``) and ``chunks`` (``{"count"}``), and with a hosted
                embedding ``embedding`` (:attr:`IndexReport.embedding`'s keys, so far).

        Returns:
            The :class:`IndexReport`.
        """
        return self._indexer.index(
            paths,
            prune=prune,
            follow_symlinks=follow_symlinks,
            max_file_bytes=max_file_bytes,
            progress=progress,
        )

    # -- facts -----------------------------------------------------------------------------------
    @guarded("reading", check_lock=True)
    def stats(
        self,
        *,
        documents: bool = False,
        progress: Callable[[str, int], None] | None = None,
        after: IndexReport | None = None,
    ) -> StoreStats:
        """Counts of documents, chunks and words; embedding; BM25 state; orphan chunks.

        Args:
            documents: Also list every document (path, words, chunks, format).
            progress: Called with ``("documents", n)`` as the records are read.
            after: The report of the :meth:`index` run this store just made: the counts come
                from the records that run holds instead of a scan of every record (on a server
                with 10^6 documents, minutes). Only right after that run: writes made since by
                other processes are not seen.
        """
        records = None if after is None or documents else after.committed_records
        return collect_stats(
            self._conn,
            self._reader,
            self._lexical,
            documents=documents,
            progress=progress,
            records=records,
        )
