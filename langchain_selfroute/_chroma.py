"""300-word chunks in a vector store, and their full parent documents rebuilt from it.

:func:`index_documents` stores each document as the paper's 300-word chunks; every chunk carries
its parent's id (``doc_id``), its position (``chunk_index``/``chunk_count``) and its character
offsets (``start``/``end``) next to the document's own metadata. Because the chunks partition the
document exactly, the full document is the chunks put back together: :class:`ChromaParentLoader`
rebuilds the parents of retrieved chunks from the same Chroma collection, with the retriever's
metadata filter applied again, so no second copy of the documents is stored and a filtered
retriever never brings a document the filter excludes into the long-context prompt.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from selfroute import (
    DEFAULT_CHUNK_WORDS,
    Chunk,
    ConfigurationError,
    InvalidInputError,
    MissingDependencyError,
    chunk_text,
    document_id,
    rebuild_document,
)
from selfroute._owners import owner_conflicts, refuse_replacement, scope_tag

if TYPE_CHECKING:
    from langchain_chroma import Chroma

__all__ = [
    "CHUNK_KEYS",
    "ChromaParentLoader",
    "StoreParentLoader",
    "chunk_documents",
    "has_get_by_ids",
    "index_documents",
    "is_chroma",
    "open_chroma",
]

logger = logging.getLogger(__name__)

#: Metadata keys added to every chunk (besides the parent id key).
CHUNK_KEYS = ("chunk_index", "chunk_count", "start", "end")
_BATCH = 256


def _chroma_class() -> type[Chroma]:
    try:
        from langchain_chroma import Chroma
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise MissingDependencyError("langchain-chroma", "langchain") from exc
    return Chroma


def is_chroma(vectorstore: object) -> bool:
    """Whether ``vectorstore`` is a ``langchain_chroma.Chroma`` (without importing it needlessly)."""
    if not type(vectorstore).__module__.startswith("langchain_chroma"):
        return False
    return isinstance(vectorstore, _chroma_class())


def has_get_by_ids(vectorstore: object) -> bool:
    """Whether ``vectorstore`` implements ``VectorStore.get_by_ids`` (the base class raises)."""
    method = getattr(type(vectorstore), "get_by_ids", None)
    return method is not None and method is not VectorStore.get_by_ids


def open_chroma(
    *,
    embedding: Embeddings,
    collection_name: str | None = None,
    persist_directory: str | None = None,
    client: Any = None,
    collection_metadata: dict[str, Any] | None = None,
) -> Chroma:
    """A ``langchain_chroma.Chroma`` store: persistent, on a given client, or in memory.

    An in-memory store without a ``collection_name`` gets a unique one: Chroma's in-memory
    clients share collections within a process, and two unrelated stores must not mix.
    """
    if persist_directory is not None and client is not None:
        raise ConfigurationError("give persist_directory or client, not both")
    if not isinstance(embedding, Embeddings):
        raise ConfigurationError(
            f"embedding must be a LangChain Embeddings, got {type(embedding).__name__}"
        )
    if collection_name is None:
        in_memory = persist_directory is None and client is None
        collection_name = f"selfroute-{uuid.uuid4().hex[:12]}" if in_memory else "selfroute"
    return _chroma_class()(
        collection_name=collection_name,
        embedding_function=embedding,
        persist_directory=str(persist_directory) if persist_directory is not None else None,
        client=client,
        collection_metadata=collection_metadata,
    )


def _parent_id(doc: Document, given: str | None, id_key: str) -> str:
    if given is not None:
        return str(given)
    if doc.metadata.get(id_key) is not None:
        return str(doc.metadata[id_key])
    if doc.id:
        return str(doc.id)
    # Content *and* metadata: two tenants uploading the same text get separate parents.
    meta = json.dumps(doc.metadata, sort_keys=True, default=str)
    return document_id(f"{doc.page_content}\x00{meta}")


def _scope_of(doc: Document, i: int, scope_keys: Sequence[str]) -> str:
    missing = [k for k in scope_keys if doc.metadata.get(k) is None]
    if missing:
        raise InvalidInputError(
            f"documents[{i}] has no {', '.join(map(repr, missing))} metadata; every document "
            "needs the scope keys that tell its owner apart"
        )
    return scope_tag(doc.metadata, scope_keys)


def chunk_documents(
    documents: Iterable[Document],
    *,
    ids: Sequence[str] | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    id_key: str = "doc_id",
    scope_keys: Sequence[str] | None = None,
) -> list[Document]:
    """Split documents into ``chunk_words``-word chunk ``Document`` objects.

    Each chunk's ``id`` is ``"{doc_id}:{chunk_index}"`` (with ``scope_keys``,
    ``"{doc_id}@{tag}:{chunk_index}"``, the tag a hash of the document's scope-key values) and
    its metadata is the document's plus ``id_key`` (the parent id), ``chunk_index``,
    ``chunk_count``, ``start`` and ``end``.

    Args:
        documents: The documents.
        ids: One parent id per document (default: ``metadata[id_key]``, ``Document.id``, or a
            hash of the text and metadata).
        chunk_words: Words per chunk.
        overlap_words: Words shared by consecutive chunks.
        id_key: Metadata key for the parent id.
        scope_keys: Metadata keys that tell owners apart (``("tenant",)``): two documents with
            the same id but different values of these keys are different documents.

    Raises:
        InvalidInputError: A document is not a ``Document``, is empty, lacks a scope key, or two
            different documents have the same id (and scope).
    """
    if isinstance(documents, (Document, str)):
        raise InvalidInputError("documents must be a list of Document, got a single object")
    docs = list(documents)
    if ids is not None and len(ids) != len(docs):
        raise InvalidInputError(f"ids has {len(ids)} entries for {len(docs)} documents")
    seen: dict[tuple[str, str], Document] = {}
    out: list[Document] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InvalidInputError(
                f"documents[{i}] must be a langchain Document, got {type(doc).__name__}"
            )
        if not isinstance(doc.page_content, str) or not doc.page_content.strip():
            raise InvalidInputError(f"documents[{i}] is empty")
        did = _parent_id(doc, ids[i] if ids is not None else None, id_key)
        scope = _scope_of(doc, i, scope_keys) if scope_keys else ""
        if (did, scope) in seen:
            previous = seen[did, scope]
            if (previous.page_content, previous.metadata) != (doc.page_content, doc.metadata):
                raise InvalidInputError(
                    f"documents[{i}] has the id {did!r} of an earlier, different document"
                )
            continue
        seen[did, scope] = doc
        chunks = chunk_text(
            doc.page_content, doc_id=did, chunk_words=chunk_words, overlap_words=overlap_words
        )
        prefix = f"{did}@{scope}" if scope else did
        for c in chunks:
            metadata = {
                **doc.metadata,
                id_key: did,
                "chunk_index": c.index,
                "chunk_count": len(chunks),
                "start": c.start,
                "end": c.end,
            }
            out.append(Document(id=f"{prefix}:{c.index}", page_content=c.text, metadata=metadata))
    return out


def _stored_metadata(
    vectorstore: VectorStore, firsts: Sequence[Document], id_key: str
) -> dict[str, list[Mapping[str, Any]]]:
    """Metadata of what the store already holds under the parent ids of ``firsts``."""
    found: dict[str, list[Mapping[str, Any]]] = {}
    if is_chroma(vectorstore):
        parent_ids = list(dict.fromkeys(str(d.metadata[id_key]) for d in firsts))
        where: dict[str, Any] = {id_key: {"$in": parent_ids}}
        got = cast("Chroma", vectorstore).get(where=where, include=["metadatas"])
        for meta in got.get("metadatas") or []:
            if meta is not None:
                found.setdefault(str(meta.get(id_key)), []).append(meta)
        return found
    try:
        stored = vectorstore.get_by_ids([str(d.id) for d in firsts])
    except NotImplementedError:  # a store that cannot look ids up: nothing to compare with
        return found
    for doc in stored:
        found.setdefault(str(doc.metadata.get(id_key)), []).append(doc.metadata)
    return found


def _check_owners(
    vectorstore: VectorStore,
    chunks: Sequence[Document],
    id_key: str,
    scope_keys: Sequence[str] | None,
) -> None:
    """Refuse to replace a stored document that may belong to another owner.

    Only needed when the owner keys are unknown (``scope_keys=None``): with scope keys the
    replacement is scoped to the owner, with ``()`` ids are global by the caller's choice.
    """
    if scope_keys is not None:
        return
    firsts = [c for c in chunks if c.metadata["chunk_index"] == 0]
    stored = _stored_metadata(vectorstore, firsts, id_key)
    ignore = {*CHUNK_KEYS, id_key}
    for doc in firsts:
        did = str(doc.metadata[id_key])
        for meta in stored.get(did, []):
            conflicts = owner_conflicts(meta, doc.metadata, None, ignore=ignore)
            if conflicts:
                raise refuse_replacement(
                    did,
                    conflicts,
                    where="a document",
                    hint="Name the keys that tell owners apart with scope_keys=('tenant',) "
                    "to keep both, pass scope_keys=() to replace it anyway, or give this "
                    "document another id.",
                )


def index_documents(
    vectorstore: VectorStore,
    documents: Iterable[Document],
    *,
    ids: Sequence[str] | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    id_key: str = "doc_id",
    batch_size: int = _BATCH,
    scope_keys: Sequence[str] | None = None,
) -> list[str]:
    """Chunk ``documents`` and add the chunks to ``vectorstore``; return the parent ids.

    Re-indexing a document with the same id replaces its chunks, so a shorter new version
    leaves no stale chunks behind: on Chroma by a ``where`` filter on the parent id, on any other
    store that implements ``get_by_ids`` and ``delete(ids)`` by deleting the old version's chunk
    ids past the new version's count.

    A shared store holds many owners' documents, and two owners may pick the same id. With
    ``scope_keys`` (e.g. ``("tenant",)``) a document is its id *and* those keys' values: chunk
    ids carry a tag of the values and the replacement deletes only chunks with the same id and
    the same values, so another tenant's "q3-report" is never touched. Without ``scope_keys``
    the owner keys are unknown: a document whose id is stored with *other metadata* is refused
    (:class:`~selfroute.InvalidInputError`) instead of replaced. ``scope_keys=()`` says ids are
    global and replaces regardless.

    Raises:
        InvalidInputError: Bad documents (see :func:`chunk_documents`), or a replacement that
            could delete another owner's document.
    """
    chunks = chunk_documents(
        documents,
        ids=ids,
        chunk_words=chunk_words,
        overlap_words=overlap_words,
        id_key=id_key,
        scope_keys=scope_keys,
    )
    _check_owners(vectorstore, chunks, id_key, scope_keys)
    if is_chroma(vectorstore):
        firsts = [c for c in chunks if c.metadata["chunk_index"] == 0]
        for start in range(0, len(firsts), batch_size):
            for where in _replace_filters(firsts[start : start + batch_size], id_key, scope_keys):
                vectorstore.delete(where=where)
    elif has_get_by_ids(vectorstore):
        _delete_stale(vectorstore, chunks, id_key)
    if not _add_embedding_ahead(vectorstore, chunks, batch_size):
        for start in range(0, len(chunks), batch_size):
            batch_docs = chunks[start : start + batch_size]
            vectorstore.add_documents(batch_docs, ids=[str(d.id) for d in batch_docs])
    return list(dict.fromkeys(str(c.metadata[id_key]) for c in chunks))


def _add_embedding_ahead(vectorstore: VectorStore, chunks: list[Document], batch_size: int) -> bool:
    """Add ``chunks`` to a Chroma store whose embedding is a :class:`HostedEmbeddings`, in
    batches of up to ``batch_size`` (smaller at first), with the next batches' embedding requests
    in flight while each batch is written; ``False`` (nothing done) for any other store or
    embedding."""
    from langchain_selfroute._embeddings import HostedEmbeddings
    from selfroute.stores._ahead import embed_ahead, ramp_batches

    if not is_chroma(vectorstore):
        return False
    embedder = cast("Chroma", vectorstore).embeddings
    if not isinstance(embedder, HostedEmbeddings):
        return False
    collection = cast("Chroma", vectorstore)._collection
    pairs = ((batch, [d.page_content for d in batch]) for batch in ramp_batches(chunks, batch_size))
    for batch, vectors in embed_ahead(embedder.submit, pairs, step="index_documents"):
        collection.upsert(  # what Chroma.add_texts sends, with the vectors already there
            ids=[str(d.id) for d in batch],
            embeddings=vectors,
            documents=[d.page_content for d in batch],
            metadatas=[d.metadata for d in batch],
        )
    return True


def _replace_filters(
    firsts: Sequence[Document], id_key: str, scope_keys: Sequence[str] | None
) -> list[dict[str, Any]]:
    """Chroma ``where`` filters that select exactly the stored chunks these documents replace."""
    ids = list(dict.fromkeys(str(d.metadata[id_key]) for d in firsts))
    if not scope_keys:
        return [{id_key: {"$in": ids}}]
    by_scope: dict[tuple[Any, ...], list[str]] = {}
    for d in firsts:
        values = tuple(d.metadata[k] for k in scope_keys)
        by_scope.setdefault(values, []).append(str(d.metadata[id_key]))
    return [
        {
            "$and": [
                {id_key: {"$in": dids}},
                *({k: v} for k, v in zip(scope_keys, values, strict=True)),
            ]
        }
        for values, dids in by_scope.items()
    ]


def _chunk_prefix(doc: Document, id_key: str) -> str:
    """The part of a chunk id before ``:{index}`` (``doc_id``, or ``doc_id@scope`` when scoped)."""
    if doc.id and ":" in str(doc.id):
        return str(doc.id).rsplit(":", 1)[0]
    return str(doc.metadata.get(id_key))


def _delete_stale(vectorstore: VectorStore, chunks: list[Document], id_key: str) -> None:
    """Delete the chunks of earlier versions that the new chunks do not overwrite."""
    counts: dict[str, int] = {}
    for c in chunks:
        counts[_chunk_prefix(c, id_key)] = int(c.metadata["chunk_count"])
    firsts = vectorstore.get_by_ids([f"{prefix}:0" for prefix in counts])
    stale: list[str] = []
    for old in firsts:
        prefix = _chunk_prefix(old, id_key)
        try:
            old_count = int(old.metadata["chunk_count"])
        except (KeyError, TypeError, ValueError):
            continue
        if prefix in counts and old_count > counts[prefix]:
            stale.extend(f"{prefix}:{i}" for i in range(counts[prefix], old_count))
    if stale:
        vectorstore.delete(ids=stale)


def _rebuild_parent(
    did: str, rows: list[tuple[str, Mapping[str, Any]]], id_key: str
) -> Document | None:
    """The parent document ``did`` put back together from its chunks (``None`` if incomplete)."""
    if not rows:
        return None
    try:
        chunks = [
            Chunk(
                text=text,
                doc_id=did,
                index=int(meta["chunk_index"]),
                start=int(meta["start"]),
                end=int(meta["end"]),
                word_count=0,
            )
            for text, meta in rows
        ]
        count = int(rows[0][1]["chunk_count"])
    except (KeyError, TypeError, ValueError):
        logger.warning(
            "chunks of document %r lack chunk_index/chunk_count/start/end metadata; "
            "index them with langchain_selfroute.index_documents to load parents",
            did,
        )
        return None
    if sorted(c.index for c in chunks) != list(range(count)):
        logger.warning(
            "document %r: %d of %d chunks found; not using an incomplete parent",
            did,
            len({c.index for c in chunks}),
            count,
        )
        return None
    try:
        text = rebuild_document(chunks)
    except InvalidInputError as exc:
        logger.warning("document %r cannot be rebuilt from its chunks: %s", did, exc)
        return None
    metadata = {k: v for k, v in rows[0][1].items() if k not in CHUNK_KEYS}
    return Document(id=did, page_content=text, metadata=metadata)


def _parent_ids(chunks: Sequence[Document], id_key: str) -> list[str]:
    return list(dict.fromkeys(str(c.metadata[id_key]) for c in chunks if c.metadata.get(id_key)))


class StoreParentLoader:
    """Loads the full parent documents of retrieved chunks from any LangChain ``VectorStore``
    that implements ``get_by_ids`` (``InMemoryVectorStore``, PGVector, Qdrant, FAISS, ...).

    The chunks stored by :func:`index_documents` have deterministic ids (``"{doc_id}:{i}"``) and
    carry their parent's ``chunk_count``: the loader fetches every chunk of each parent by id
    and puts the parent back together. A parent's chunks share its metadata, so the
    retriever's metadata filter, which admitted the retrieved chunk, admits the parent too.

    Args:
        vectorstore: The store the retriever searches.
        id_key: Metadata key of the parent id.
    """

    def __init__(self, vectorstore: VectorStore, *, id_key: str = "doc_id") -> None:
        if not has_get_by_ids(vectorstore):
            raise ConfigurationError(
                f"{type(vectorstore).__name__} does not implement get_by_ids, so the parents of "
                "retrieved chunks cannot be loaded from it; pass parent_loader= or document="
            )
        self.vectorstore = vectorstore
        self.id_key = id_key

    def __repr__(self) -> str:
        return f"StoreParentLoader({type(self.vectorstore).__name__}, id_key={self.id_key!r})"

    def __call__(self, chunks: Sequence[Document]) -> list[Document]:
        """The parents of ``chunks`` (in the order their chunks were retrieved)."""
        counts: dict[str, int] = {}  # chunk-id prefix (doc id, scoped if so) -> chunk count
        parent_of: dict[str, str] = {}
        for c in chunks:
            did = c.metadata.get(self.id_key)
            if did is None:
                continue
            prefix = _chunk_prefix(c, self.id_key)
            parent_of.setdefault(prefix, str(did))
            try:
                counts.setdefault(prefix, int(c.metadata["chunk_count"]))
            except (KeyError, TypeError, ValueError):
                counts.setdefault(prefix, 0)
        wanted = [f"{prefix}:{i}" for prefix, n in counts.items() for i in range(n)]
        groups: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for doc in self.vectorstore.get_by_ids(wanted) if wanted else []:
            groups.setdefault(_chunk_prefix(doc, self.id_key), []).append(
                (doc.page_content, doc.metadata)
            )
        parents = [
            _rebuild_parent(parent_of[prefix], groups.get(prefix, []), self.id_key)
            for prefix in counts
        ]
        return [p for p in parents if p is not None]


class ChromaParentLoader:
    """Loads the full parent documents of retrieved chunks from a Chroma chunk store.

    The parents are rebuilt from their chunks (stored by :func:`index_documents`), fetched with
    ``where = {id_key: {"$in": ids}} AND filter``: the same metadata filter the retriever used is
    applied again, so only documents the filter admits are ever returned.

    Args:
        vectorstore: The ``langchain_chroma.Chroma`` store the retriever searches.
        id_key: Metadata key of the parent id.

    Example:
        >>> loader = ChromaParentLoader(store)  # doctest: +SKIP
        >>> loader(retrieved_chunks, filter={"tenant": "acme"})  # doctest: +SKIP
    """

    def __init__(self, vectorstore: Chroma, *, id_key: str = "doc_id") -> None:
        self.vectorstore = vectorstore
        self.id_key = id_key

    def __repr__(self) -> str:
        name = getattr(getattr(self.vectorstore, "_collection", None), "name", "?")
        return f"ChromaParentLoader(collection={name!r}, id_key={self.id_key!r})"

    def __call__(
        self, chunks: Sequence[Document], *, filter: Mapping[str, Any] | None = None
    ) -> list[Document]:
        """The parents of ``chunks`` (in the order their chunks were retrieved)."""
        ids = _parent_ids(chunks, self.id_key)
        if not ids:
            return []
        where: dict[str, Any] = {self.id_key: {"$in": ids}}
        if filter:
            where = {"$and": [where, dict(filter)]}
        got = self.vectorstore.get(where=where, include=["documents", "metadatas"])
        groups: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for text, meta in zip(got.get("documents") or [], got.get("metadatas") or [], strict=True):
            if text is None or meta is None:
                continue
            groups.setdefault(str(meta.get(self.id_key)), []).append((text, meta))
        parents = []
        for did in ids:
            doc = self._rebuild(did, groups.get(did, []))
            if doc is not None:
                parents.append(doc)
        return parents

    def _rebuild(self, did: str, rows: list[tuple[str, Mapping[str, Any]]]) -> Document | None:
        return _rebuild_parent(did, rows, self.id_key)
