"""The connection to Chroma and the collections' schema: what a selfroute collection records.

A collection ``NAME`` holds one record per chunk; ``NAME__documents`` one record per document
(the layout is described in :mod:`selfroute.stores._store`). The chunk collection's metadata
records the schema version, the embedding (``selfroute:embedding``) and the chunk size; opening a
collection checks them against what the caller asked for.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import functools
import hashlib
import os
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from selfroute._chunking import DEFAULT_CHUNK_WORDS
from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._redact import redact, register_secret, url_credentials
from selfroute.stores._embedding import EmbeddingChoice, embed_documents
from selfroute.stores._errors import CollectionNotFoundError, EmbeddingMismatchError, StoreError
from selfroute.stores._fastread import OfflineQueryEmbedding, ReadClient, open_read_client
from selfroute.stores._health import (
    DATABASE_FILE,
    catchable,
    check_not_locked,
    explain_failure,
    is_read_only,
    snapshot,
)
from selfroute.stores._journal import writer_lock
from selfroute.stores._visibility import CollectionMarks

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_STORE",
    "DOCUMENTS_SUFFIX",
    "StoreConnection",
    "quiet_chroma",
    "validate_name",
]

#: Default folder of the embedded store.
DEFAULT_STORE = ".selfroute"
#: Default collection name.
DEFAULT_COLLECTION = "selfroute"
#: Suffix of the collection holding the full documents.
DOCUMENTS_SUFFIX = "__documents"

#: Seconds to wait for another process's lock on the store's database (then a clear error).
LOCK_TIMEOUT_S = 15.0

#: 2: document records keep their fields as one JSON metadata value; 3: chunk rows keep their
#: text and fields in their metadata (``_rows``; rows of the older layouts are still read).
_SCHEMA = 3
_META_SCHEMA = "selfroute:schema"
_META_EMBEDDING = "selfroute:embedding"
_META_EMBEDDING_URL = "selfroute:embedding_base_url"
_META_CHUNK_WORDS = "selfroute:chunk_words"
_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{1,480}[A-Za-z0-9])$")

EmbeddingFactory = Callable[[EmbeddingChoice], Any]


def validate_name(name: str) -> str:
    """``name`` if it is a valid collection name, else :class:`ConfigurationError`."""
    if not isinstance(name, str) or not _NAME.match(name) or ".." in name:
        raise ConfigurationError(
            f"invalid collection name {name!r}: use 3-480 characters from letters, digits, '.', "
            "'_' and '-', starting and ending with a letter or digit"
        )
    return name


@contextlib.contextmanager
def quiet_chroma() -> Iterator[None]:
    """Silence chromadb's own warnings (telemetry, deprecations) inside the block."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"chromadb(\..*)?")
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"chromadb(\..*)?")
        yield


def _server_url(url: str) -> Any:
    return urlsplit(url if "//" in url else f"http://{url}")


def _collection_names(client: Any, location: str) -> set[str]:
    try:
        with quiet_chroma():
            return {c if isinstance(c, str) else c.name for c in client.list_collections()}
    except BaseException as exc:
        if not catchable(exc):
            raise
        raise explain_failure(exc, location, "listing the collections of") from exc


def _fresh(conn: StoreConnection) -> Any:
    """The chunk collection as the server has it now (its metadata read again)."""
    with quiet_chroma():
        return conn.client(create=False).get_collection(conn.collection_name)


def _unmark_after(conn: StoreConnection, failed: bool) -> None:
    """Remove a writer's mark as its lock is released, unless its journal is left (documents in
    flight). After a failed run, a failed unmark keeps the mark (readers keep checking) and never
    hides the run's own error."""
    if conn.journal_path.exists():
        return
    with contextlib.suppress(Exception) if failed else contextlib.nullcontext():
        conn.writer_marks().unmark_writer()


#: HNSW settings of the documents collection, which is read by id and never searched by vector
#: (its records carry a constant one-dimensional embedding): the cheapest graph Chroma builds.
_RECORDS_HNSW = {"ef_construction": 4, "max_neighbors": 4, "ef_search": 4}


def _get_or_create(
    client: Any,
    name: str,
    *,
    embedding_function: Any,
    metadata: dict[str, Any],
    hnsw: dict[str, int] | None = None,
) -> Any:
    """A cosine collection whose schema asks for no full-text index of the documents.

    selfroute searches text with its own BM25 index. Chroma 1.5's embedded and ``chroma run``
    backends build their trigram index of every row's document whatever the schema says, so the
    rows carry no document at all (their text is in the metadata, :mod:`._rows`); the schema
    setting serves backends that honour it. ``hnsw`` sets the vector index of a new collection
    (an existing one keeps its own).
    """
    try:
        from chromadb import FtsIndexConfig, HnswIndexConfig, Schema, VectorIndexConfig
    except ImportError:  # pragma: no cover - Chroma before schemas
        schema = None
    else:
        schema = Schema()
        schema.delete_index(config=FtsIndexConfig(), key="#document")
        schema.create_index(
            config=VectorIndexConfig(
                space="cosine",
                embedding_function=embedding_function,
                hnsw=HnswIndexConfig(**hnsw) if hnsw else None,
            )
        )
    if schema is not None:
        try:
            # the schema carries the embedding function (both at once is refused)
            return client.get_or_create_collection(name, metadata=metadata, schema=schema)
        except TypeError:  # pragma: no cover - a client that takes no schema
            pass
    return client.get_or_create_collection(
        name,
        embedding_function=embedding_function,
        metadata=metadata,
        configuration={"hnsw": {"space": "cosine", **(hnsw or {})}},
    )


def _documents(client: Any, docs_name: str, chunks_name: str) -> Any:
    """The documents collection (created if missing, except by a read-only client)."""
    if isinstance(client, ReadClient):
        return client.get_collection(docs_name)
    with quiet_chroma():
        return _get_or_create(
            client,
            docs_name,
            embedding_function=None,
            metadata={_META_SCHEMA: _SCHEMA, "selfroute:chunks": chunks_name},
            hnsw=_RECORDS_HNSW,
        )


#: ``chromadb`` and its settings before they are needed (a reader may not need them at all).
_NOT_YET: tuple[Any, Any] = (None, None)


def _chromadb() -> tuple[Any, Any]:
    """The ``chromadb`` module and the settings selfroute opens its clients with."""
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as exc:
        raise MissingDependencyError("chromadb", "chroma") from exc
    return chromadb, Settings(anonymized_telemetry=False)


def _drop_reader(conn: StoreConnection, *, fast_reads: bool = True) -> None:
    """Close ``conn``'s read-only client, so the next call opens the ``chromadb`` client: for a
    write, or a collection the reader cannot open (``fast_reads=False`` keeps it so)."""
    reader, conn._client = conn._client, None
    conn._chunks = conn._documents = conn._function = None
    conn.fast_reads = fast_reads and conn.fast_reads
    if reader is not None:
        reader.close()


def _http_client(chromadb: Any, settings: Any, url: str) -> Any:
    """A ``chromadb.HttpClient`` for ``http(s)://host:port``; a ``user:password@`` in the URL is
    sent as HTTP basic auth (and never shown: messages name the URL with the password masked)."""
    shown = redact(url)
    bare, credentials = url_credentials(url if "//" in url else f"http://{url}")
    parts = _server_url(bare)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(f"--chroma-url must look like http://host:port, got {shown!r}")
    port = parts.port or (443 if parts.scheme == "https" else 8000)
    headers = None
    if credentials is not None:
        token = base64.b64encode(":".join(credentials).encode("utf-8")).decode("ascii")
        register_secret(token)
        headers = {"Authorization": f"Basic {token}"}
    try:
        with quiet_chroma():
            return chromadb.HttpClient(
                host=parts.hostname,
                port=port,
                ssl=parts.scheme == "https",
                headers=headers,
                settings=settings,
            )
    except Exception as exc:
        raise StoreError(f"cannot reach the Chroma server at {shown}: {redact(str(exc))}") from exc


def _drop_cached_system(client: Any) -> None:
    """Forget Chroma's process-wide system for ``client``'s folder if other clients still hold it.

    Chroma shares one system (and its in-memory vector index) between all clients of a folder in
    a process; it is stale too, so the next client must build a new one. The other clients look
    the system up by folder on every call and move to the new one; the old one is not stopped
    (a call of theirs may be running on it) and is freed when nothing uses it.
    """
    if isinstance(client, ReadClient):
        return  # no shared system: the next reader opens the database afresh
    try:
        from chromadb.api.shared_system_client import SharedSystemClient

        identifier = client._identifier
        # the refcount stays: the other clients' close() still balances it
        SharedSystemClient._identifier_to_system.pop(identifier, None)
    except Exception:  # another chromadb layout: the reopen is best effort
        return


def _recorded_settings(
    meta: dict[str, Any],
    name: str,
    location: str,
    requested: EmbeddingChoice | None,
    embedding_base_url: str | None,
    requested_words: int | None,
) -> tuple[EmbeddingChoice, int]:
    """The embedding and chunk size a collection's metadata records, checked against those
    asked for."""
    if _META_EMBEDDING not in meta:
        raise StoreError(
            f"collection {name!r} at {location} was not created by selfroute (no "
            f"{_META_EMBEDDING} in its metadata); choose another --collection"
        )
    recorded = EmbeddingChoice.parse(
        str(meta[_META_EMBEDDING]), base_url=meta.get(_META_EMBEDDING_URL) or None
    )
    if requested is not None and requested.spec != recorded.spec:
        raise EmbeddingMismatchError(
            f"collection {name!r} was indexed with the {recorded.spec} embedding, but "
            f"{requested.spec} was asked for; drop --embedding (the recorded one is used), "
            f"pass --embedding {recorded.kind}, or index into a new --collection",
            recorded=recorded.spec,
            requested=requested.spec,
        )
    base_url = (requested.base_url if requested else None) or embedding_base_url
    if base_url:
        recorded = EmbeddingChoice(recorded.kind, recorded.model, base_url)
    words = int(meta.get(_META_CHUNK_WORDS) or DEFAULT_CHUNK_WORDS)
    if requested_words is not None and requested_words != words:
        raise ConfigurationError(
            f"collection {name!r} was chunked with {words} words per chunk, but "
            f"--chunk-words {requested_words} was given; drop it or index into a "
            "new --collection"
        )
    return recorded, words


def _reset_if_empty(
    client: Any, name: str, docs_name: str, requested: EmbeddingChoice | None
) -> None:
    """Drop a collection that holds nothing yet, so a new embedding can be chosen."""
    with quiet_chroma():
        chunks = client.get_collection(name)
        recorded = (chunks.metadata or {}).get(_META_EMBEDDING)
        if recorded == (requested.spec if requested else None):
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


class StoreConnection:
    """One Chroma client and a selfroute collection pair, opened once and held.

    Args:
        path: Folder of the embedded store (and of the BM25 index).
        collection: Collection name.
        chroma_url: ``http://host:port`` of a Chroma server.
        embedding: The embedding asked for (``None``: as recorded).
        chunk_words: Words per chunk asked for (``None``: as recorded).
        embedding_base_url: OpenAI-compatible server overriding the recorded one.
        client: A ready ``chromadb`` client.
        embedding_factory: Builds the embedding function of a choice.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        collection: str,
        *,
        chroma_url: str | None,
        embedding: EmbeddingChoice | None,
        chunk_words: int | None,
        embedding_base_url: str | None,
        client: Any,
        embedding_factory: EmbeddingFactory,
    ) -> None:
        self.path = Path(path)
        self.collection_name = validate_name(collection)
        self.chroma_url = chroma_url.rstrip("/") if chroma_url else None
        self._embedding_base_url = embedding_base_url
        self._requested = embedding
        if chunk_words is not None and (not isinstance(chunk_words, int) or chunk_words < 1):
            raise ConfigurationError(f"chunk_words must be a positive integer, got {chunk_words!r}")
        self._requested_chunk_words = chunk_words
        self._client = client
        self._own_client = client is None
        #: The store folder was read-only and is queried through a private copy.
        self.read_only = False
        #: How long to wait for another process's lock on the database before failing.
        self.lock_timeout_s = LOCK_TIMEOUT_S
        self._seen: str | None = None
        self._seen_disk: object = None
        self._factory = embedding_factory
        self._chunks: Any = None
        self._documents: Any = None
        self._choice: EmbeddingChoice | None = None
        self._function: Any = None
        self._chunk_words: int | None = None
        self._max_batch: int | None = None
        self._marks: CollectionMarks | None = None
        self._writing = False
        #: Read an embedded store through :mod:`._fastread` when it opens (queries only).
        self.fast_reads = False

    @property
    def location(self) -> str:
        """Where the collection lives (folder or server URL, its password masked)."""
        return redact(self.chroma_url) if self.chroma_url else str(self.path)

    @functools.cached_property
    def bm25_dir(self) -> Path:
        """Folder of this collection's BM25 indexes (its path, server and name never change:
        computed once, as a question checks the journal next to it)."""
        if self.chroma_url:
            parts = _server_url(url_credentials(self.chroma_url)[0])
            server = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{parts.hostname}_{parts.port or ''}")
            return self.path / "bm25" / f"server-{server}" / self.collection_name
        return self.path / "bm25" / self.collection_name

    @functools.cached_property
    def journal_path(self) -> Path:
        """The indexing journal of the collection (:mod:`._journal`)."""
        bm25 = self.bm25_dir
        return bm25.with_name(f".{bm25.name}.journal")

    def client(self, create: bool) -> Any:
        """The ``chromadb`` client, connected on first use; with :attr:`fast_reads`, for reads
        of an embedded store, a :class:`~selfroute.stores._fastread.ReadClient` if it opens
        (a write later moves to the ``chromadb`` client)."""
        if self._client is not None:
            if not (create and self.reads_fast):
                return self._client
            _drop_reader(self)
        fast = self.fast_reads and not create and not self.chroma_url
        chromadb, settings = _NOT_YET if fast else _chromadb()
        if self.chroma_url:
            self._client = _http_client(chromadb, settings, self.chroma_url)
            return self._client
        if not create and not self.path.is_dir():
            raise CollectionNotFoundError(
                f"no store at {self.path}: run `selfroute index PATH` first (or pass --store)",
                location=str(self.path),
            )
        # an absolute path: Chroma caches clients by path string, and a relative one would
        # follow the working directory to another store
        folder = self.path.resolve()
        if not create and is_read_only(self.path):
            folder, self.read_only = snapshot(self.path), True  # Chroma must write to open
        else:
            check_not_locked(folder / DATABASE_FILE, self.lock_timeout_s, str(self.path))
        if fast:
            self._client = open_read_client(folder)
            if self._client is not None:
                return self._client
            chromadb, settings = _chromadb()
        try:
            with quiet_chroma():
                self._client = chromadb.PersistentClient(path=str(folder), settings=settings)
        except BaseException as exc:
            if not catchable(exc):
                raise
            raise explain_failure(exc, str(self.path), "opening") from exc
        return self._client

    @property
    def owns_client(self) -> bool:
        """Whether this connection opened its client itself (not one the caller gave)."""
        return self._own_client

    @property
    def reads_fast(self) -> bool:
        """Whether the open client is the read-only :class:`~._fastread.ReadClient`."""
        return isinstance(self._client, ReadClient)

    def open(self, create: bool = False) -> tuple[Any, Any]:
        """The chunk and document collections, opened (and with ``create``, created) once.

        Raises:
            CollectionNotFoundError: No store or no collection (and not ``create``).
            EmbeddingMismatchError: A different embedding than recorded was asked for.
        """
        if self._chunks is not None and not (create and self.reads_fast):
            return self._chunks, self._documents
        client = self.client(create)
        if not self.reads_fast:  # collections created with the offline function reopen only
            from selfroute._embeddings import chroma_embedding_function  # once it is registered

            chroma_embedding_function()
        name = self.collection_name
        docs_name = name + DOCUMENTS_SUFFIX
        existing = _collection_names(client, self.location)
        if name in existing and create and self._requested is not None:
            _reset_if_empty(client, name, docs_name, self._requested)
            existing = _collection_names(client, self.location)
        if name not in existing:
            if not create:
                raise CollectionNotFoundError(
                    f"collection {name!r} does not exist at {self.location}: run "
                    "`selfroute index PATH` first (or pass the right --collection)",
                    collection=name,
                )
            chunks = self._create(client, name)
        else:
            with quiet_chroma():
                chunks = client.get_collection(name)
        if self.reads_fast and docs_name not in existing:  # to be created: not by a reader
            _drop_reader(self, fast_reads=False)
            return self.open(create)
        documents = _documents(client, docs_name, name)
        self._check_recorded(dict(chunks.metadata or {}))
        self._chunks, self._documents = chunks, documents
        if self._writing and self.chroma_url:
            self.writer_marks().mark_writer()
        return chunks, documents

    def _create(self, client: Any, name: str) -> Any:
        choice = self._requested or EmbeddingChoice()
        words = self._requested_chunk_words or DEFAULT_CHUNK_WORDS
        function = self._factory(choice)
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
        with quiet_chroma():
            chunks = _get_or_create(client, name, embedding_function=function, metadata=metadata)
        self._function = function
        return chunks

    def _check_recorded(self, meta: dict[str, Any]) -> None:
        self._choice, self._chunk_words = _recorded_settings(
            meta,
            self.collection_name,
            self.location,
            self._requested,
            self._embedding_base_url,
            self._requested_chunk_words,
        )

    def check_lock(self) -> None:
        """Once the embedded database is open: fail after a bounded wait if another process
        holds it locked (Chroma itself would wait without end, and without a word)."""
        if self._client is None or not self._own_client or self.chroma_url or self.read_only:
            return
        check_not_locked(self.path / DATABASE_FILE, self.lock_timeout_s, str(self.path))

    def note_committed(self, ids: Sequence[str]) -> bool:
        """Record the committed document ids just read; reopen the collections when another
        process changed them (an embedded client's in-memory vector index would miss its new
        documents). A Chroma server, or a client the caller gave, is never reopened.

        Returns:
            Whether the collections were reopened.
        """
        digest = hashlib.sha256("\n".join(ids).encode("utf-8", "surrogatepass")).hexdigest()
        previous, self._seen = self._seen, digest
        return self._reopen_if_changed(previous, digest)

    def note_disk_state(self, state: object) -> bool:
        """Like :meth:`note_committed`, from a cheap signature of the store's files (the saved
        BM25 index's fingerprint, the journal) instead of the committed ids."""
        previous, self._seen_disk = self._seen_disk, state
        return self._reopen_if_changed(previous, state)

    def forget_committed(self) -> None:
        """This process changed the committed ids itself (its client's view is current)."""
        self._seen = None
        self._seen_disk = None

    def _reopen_if_changed(self, previous: object, now: object) -> bool:
        if previous is None or previous == now or not self._own_client or self.chroma_url:
            return False
        client, self._client = self._client, None
        self._chunks = self._documents = None
        if client is not None:
            with contextlib.suppress(Exception), quiet_chroma():
                client.close()  # releases the cached system, so the next client loads from disk
            _drop_cached_system(client)
        self.open()
        return True

    @property
    def embedding(self) -> EmbeddingChoice:
        """The collection's embedding (opens the collection)."""
        self.open()
        assert self._choice is not None
        return self._choice

    @property
    def chunk_words(self) -> int:
        """The collection's words per chunk (opens the collection)."""
        self.open()
        assert self._chunk_words is not None
        return self._chunk_words

    def adopt(self, embedding: EmbeddingChoice, chunk_words: int) -> None:
        """Create the collection (if new) with this embedding and chunk size unless the caller
        asked for others (a copy of a collection keeps its settings)."""
        if self._requested is None:
            self._requested = embedding
        if self._requested_chunk_words is None:
            self._requested_chunk_words = chunk_words

    def max_batch_size(self) -> int:
        """The most records the client takes in one call."""
        if self._max_batch is None:
            try:
                self._max_batch = int(self.client(create=False).get_max_batch_size())
            except Exception:  # older clients and servers: Chroma's long-standing minimum
                self._max_batch = 5461
        return self._max_batch

    def embedding_function(self) -> Any:
        """The collection's embedding function, created on first use."""
        if self._function is None:
            offline = self.reads_fast and self.embedding.kind == "offline"
            self._function = OfflineQueryEmbedding() if offline else self._factory(self.embedding)
        return self._function

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the collection's writer lock (one ``index`` at a time), or :class:`StoreError`;
        on a server, with the collection marked as written meanwhile (:mod:`._visibility`)."""
        with writer_lock(self.path, self.collection_name):
            self._writing = True
            failed = True
            try:
                if self._chunks is not None and self.chroma_url:
                    self.writer_marks().mark_writer()
                yield
                failed = False
            finally:
                self._writing = False
                _unmark_after(self, failed)

    def writer_marks(self) -> CollectionMarks:
        """The server collection's writer marks (:mod:`._visibility`)."""
        if self._marks is None:
            self._marks = CollectionMarks(lambda: _fresh(self), self.journal_path)
        return self._marks

    def unmarked(self) -> bool:
        """Whether a server collection had no writer mark within the lease (embedded: no)."""
        return bool(self.chroma_url) and self.writer_marks().unmarked()
