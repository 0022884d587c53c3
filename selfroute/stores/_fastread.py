"""A read-only client of an embedded store that talks to chromadb's Rust bindings directly.

``import chromadb`` costs most of a command-line ``ask``'s start-up (0.6-0.8 s: its package
``__init__`` loads the whole Python API, every embedding function, telemetry and the async
client), while the embedded client itself is a thin Python layer over
``chromadb_rust_bindings.Bindings``, which imports in a few milliseconds. :class:`ReadClient`
makes the same bindings calls that ``chromadb.api.rust.RustBindingsAPI`` makes for the reads a
query needs (list and get collections, count, ``get`` by ids or ``where``, dense ``query``), and
returns the same result dictionaries, so :class:`~selfroute.stores._records.StoreReader` cannot
tell the two clients apart. It never writes: the database is opened with migrations validated,
not applied, and a collection that would have to be created sends the caller back to the
``chromadb`` client. No telemetry is sent (the bindings have none).

It is used only where it was checked to give the same results (``tests/unit/selfroute/stores/
test_fastread.py`` compares it with the ``chromadb`` client on the same store): the installed
chromadb must be one of :data:`TESTED_CHROMADB`, and constructing the bindings must work as
that version's client constructs them. Anything else (another version, a changed signature, a
database that needs a migration, any error while opening) returns ``None`` from
:func:`open_read_client`, logged at debug level, and the caller opens the ``chromadb`` client as
before. ``SELFROUTE_FAST_READS=0`` forces that fallback (an escape hatch, and how the tests
compare the two paths).
"""

from __future__ import annotations

import logging
import os
import sys
from array import array
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "FAST_READS_ENV",
    "TESTED_CHROMADB",
    "OfflineQueryEmbedding",
    "ReadClient",
    "ReadCollection",
    "fast_reads_allowed",
    "installed_chromadb",
    "open_read_client",
]

logger = logging.getLogger("selfroute")

#: chromadb versions whose embedded client this reader reproduces (checked by the parity tests).
TESTED_CHROMADB = frozenset({"1.5.9"})
#: Set to ``0`` (or ``false``, ``no``, ``off``) to always read through the ``chromadb`` client.
FAST_READS_ENV = "SELFROUTE_FAST_READS"

_TENANT = "default_tenant"
_DATABASE = "default_database"
_DATABASE_FILE = "chroma.sqlite3"
_GET_FIELDS = frozenset({"metadatas", "documents"})
_QUERY_FIELDS = _GET_FIELDS | {"distances"}
#: chromadb's settings that change how its embedded client opens a store (environment variables
#: read by its ``Settings``): with any of them set, only chromadb's client knows what to do.
_CHROMA_SETTINGS = (
    "CHROMA_API_IMPL",
    "CHROMA_SYSDB_IMPL",
    "ALLOW_RESET",
    "IS_PERSISTENT",
    "PERSIST_DIRECTORY",
    "MIGRATIONS",
    "MIGRATIONS_HASH_ALGORITHM",
)


def fast_reads_allowed() -> bool:
    """Whether :data:`FAST_READS_ENV` leaves the fast reader on (it is unless set to ``0``)."""
    value = os.environ.get(FAST_READS_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


def installed_chromadb(bindings_file: str | None) -> str | None:
    """The installed chromadb's version, read from its ``dist-info`` folder beside the bindings
    package (a directory listing; :mod:`importlib.metadata` when that finds none or several)."""
    if bindings_file:
        site = Path(bindings_file).resolve().parent.parent
        try:
            found = [p.name for p in site.iterdir() if p.name.startswith("chromadb-")]
        except OSError:
            found = []
        infos = [n for n in found if n.endswith(".dist-info")]
        if len(infos) == 1:
            return infos[0][len("chromadb-") : -len(".dist-info")]
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - part of the standard library
        return None
    try:
        return version("chromadb")
    except PackageNotFoundError:
        return None


def _environment_overrides() -> list[str]:
    names = {name.upper() for name in os.environ}
    return [name for name in _CHROMA_SETTINGS if name in names]


def open_read_client(folder: Path) -> ReadClient | None:
    """A :class:`ReadClient` of the embedded store in ``folder``, or ``None`` (then open the
    ``chromadb`` client: the reason is logged at debug level).

    Args:
        folder: The store's folder (absolute), holding ``chroma.sqlite3``.
    """
    try:
        return ReadClient(_open_bindings(folder))
    except _Declined as exc:
        logger.debug("selfroute: reading the store through the chromadb client: %s", exc)
        return None


class _Declined(Exception):
    """Why the fast reader is not used."""


def _open_bindings(folder: Path) -> Any:
    if not fast_reads_allowed():
        raise _Declined(f"{FAST_READS_ENV} is off")
    overrides = _environment_overrides()
    if overrides:
        raise _Declined(f"chromadb settings in the environment ({', '.join(overrides)})")
    if not (folder / _DATABASE_FILE).is_file():
        raise _Declined(f"no {_DATABASE_FILE} in {folder}")
    try:
        import chromadb_rust_bindings as rust
    except ImportError as exc:
        raise _Declined(f"chromadb_rust_bindings cannot be imported ({exc})") from exc
    version = installed_chromadb(getattr(rust, "__file__", None))
    if version not in TESTED_CHROMADB:
        raise _Declined(f"chromadb {version} is not one the fast reader was tested with")
    try:  # (not ``get_version()``: the bindings import the chromadb package to answer it)
        return _bindings(rust, folder)
    except Exception as exc:  # another bindings API, a database to migrate, ...
        detail = f"{type(exc).__name__}: {exc}"
        raise _Declined(f"the bindings did not open the store ({detail})") from exc


def _bindings(rust: Any, folder: Path) -> Any:
    """``Bindings`` as ``chromadb.api.rust.RustBindingsAPI.start`` builds them for a
    ``PersistentClient`` with default settings, except that migrations are validated, not
    applied (a reader never changes the database)."""
    if sys.platform == "win32":  # pragma: no cover - as chromadb sizes its HNSW cache
        import ctypes

        max_files = int(ctypes.windll.msvcrt._getmaxstdio())  # type: ignore[attr-defined]
    else:
        import resource

        max_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    config = rust.SqliteDBConfig(
        hash_type=rust.MigrationHash.MD5,
        migration_mode=rust.MigrationMode.Validate,
        url=str(folder / _DATABASE_FILE),
    )
    return rust.Bindings(
        allow_reset=False,
        sqlite_db_config=config,
        persist_path=str(folder),
        hnsw_cache_size=max_files // 5,
    )


def _check_ids(ids: Sequence[str]) -> list[str]:
    """chromadb's own checks of the ids of a ``get`` (a list, not empty, strings, unique)."""
    if not isinstance(ids, list):
        raise ValueError(f"Expected IDs to be a list, got {type(ids).__name__} as IDs")
    if not ids:
        raise ValueError("Expected IDs to be a non-empty list, got 0 IDs")
    if not all(isinstance(i, str) for i in ids):
        raise ValueError("Expected every ID to be a str")
    if len(set(ids)) != len(ids):
        raise ValueError("Expected IDs to be unique")
    return ids


def _check_include(include: Sequence[str], allowed: frozenset[str]) -> list[str]:
    fields = list(include)
    unknown = [f for f in fields if f not in allowed]
    if unknown:  # embeddings, uris, data: not needed by a query, not offered
        raise ValueError(f"the fast reader does not return {', '.join(unknown)}")
    return fields


class ReadCollection:
    """One collection, read through the bindings: ``get``, ``query`` and ``count`` return what
    chromadb's ``Collection`` returns for the fields a query uses.

    Args:
        bindings: The open ``chromadb_rust_bindings.Bindings``.
        model: The bindings' collection record (id, name, metadata).
    """

    def __init__(self, bindings: Any, model: Any) -> None:
        self._bindings = bindings
        self.id = model.id
        self.name = str(model.name)
        self.metadata: Mapping[str, Any] | None = model.metadata
        self._key = str(model.id)

    def count(self) -> int:
        """Records in the collection."""
        return int(self._bindings.count(self._key, _TENANT, _DATABASE))

    def get(
        self,
        ids: list[str] | None = None,
        where: Mapping[str, Any] | None = None,
        limit: int | None = None,
        offset: int | None = None,
        include: Sequence[str] = ("metadatas", "documents"),
    ) -> dict[str, Any]:
        """Records by id or metadata filter, paged by ``limit``/``offset``."""
        import json

        fields = _check_include(include, _GET_FIELDS)
        wanted = None if ids is None else _check_ids(ids)
        response = self._bindings.get(
            self._key,
            wanted,
            json.dumps(where) if where else None,
            limit,
            offset or 0,
            None,
            fields,
            _TENANT,
            _DATABASE,
        )
        return _result(response, fields)

    def query(
        self,
        query_embeddings: Sequence[Sequence[float]],
        n_results: int = 10,
        include: Sequence[str] = ("metadatas", "documents", "distances"),
    ) -> dict[str, Any]:
        """The ``n_results`` nearest records to each query vector."""
        fields = _check_include(include, _QUERY_FIELDS)
        if not isinstance(n_results, int) or n_results <= 0:
            raise TypeError(
                f"Number of requested results {n_results}, cannot be negative, or zero."
            )
        vectors = [list(map(float, v)) for v in query_embeddings]
        if not vectors:
            raise ValueError("Expected at least one query embedding")
        response = self._bindings.query(
            self._key, None, vectors, n_results, None, None, fields, _TENANT, _DATABASE
        )
        return _result(response, fields, distances=response.distances)


def _result(response: Any, fields: list[str], **extra: Any) -> dict[str, Any]:
    """A bindings response as the dict chromadb's client returns for it."""
    return {
        "ids": response.ids,
        "embeddings": response.embeddings,
        "documents": response.documents,
        "uris": None,
        "included": fields,
        "data": None,
        "metadatas": response.metadatas,
        **extra,
    }


class ReadClient:
    """The reads of ``chromadb.PersistentClient`` a query needs, over the bindings.

    Args:
        bindings: The open ``chromadb_rust_bindings.Bindings``.
    """

    #: Tells :class:`~selfroute.stores._connection.StoreConnection` this client only reads.
    read_only = True

    def __init__(self, bindings: Any) -> None:
        self._bindings: Any = bindings

    def list_collections(self) -> list[str]:
        """The collections' names."""
        return [
            str(c.name) for c in self._bindings.list_collections(None, None, _TENANT, _DATABASE)
        ]

    def get_collection(self, name: str) -> ReadCollection:
        """The collection ``name`` (chromadb's ``NotFoundError`` if there is none)."""
        return ReadCollection(
            self._bindings, self._bindings.get_collection(name, _TENANT, _DATABASE)
        )

    def close(self) -> None:
        """Release the database (the next client opens it afresh)."""
        self._bindings = None


class OfflineQueryEmbedding:
    """The ``offline`` embedding without chromadb, giving exactly the vectors its Chroma wrapper
    (:func:`selfroute._embeddings.chroma_embedding_function`, default settings) gives: float32
    values, for queries (``embed_query``) and texts (calling it)."""

    def __init__(self) -> None:
        from selfroute._embeddings import HashingEmbedding

        self._embedding = HashingEmbedding()

    def __call__(self, input: Sequence[str]) -> list[array[float]]:
        """One float32 vector per text."""
        return [array("f", self._embedding.embed(text)) for text in input]

    def embed_query(self, input: Sequence[str]) -> list[array[float]]:
        """One float32 vector per query (the same as calling it)."""
        return self(input)
