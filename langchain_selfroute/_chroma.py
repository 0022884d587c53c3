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
from typing import TYPE_CHECKING, Any

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


def chunk_documents(
    documents: Iterable[Document],
    *,
    ids: Sequence[str] | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    id_key: str = "doc_id",
) -> list[Document]:
    """Split documents into ``chunk_words``-word chunk ``Document`` objects.

    Each chunk's ``id`` is ``"{doc_id}:{chunk_index}"`` and its metadata is the document's plus
    ``id_key`` (the parent id), ``chunk_index``, ``chunk_count``, ``start`` and ``end``.

    Args:
        documents: The documents.
        ids: One parent id per document (default: ``metadata[id_key]``, ``Document.id``, or a
            hash of the text and metadata).
        chunk_words: Words per chunk.
        overlap_words: Words shared by consecutive chunks.
        id_key: Metadata key for the parent id.

    Raises:
        InvalidInputError: A document is not a ``Document``, is empty, or two different documents
            have the same id.
    """
    if isinstance(documents, (Document, str)):
        raise InvalidInputError("documents must be a list of Document, got a single object")
    docs = list(documents)
    if ids is not None and len(ids) != len(docs):
        raise InvalidInputError(f"ids has {len(ids)} entries for {len(docs)} documents")
    seen: dict[str, Document] = {}
    out: list[Document] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InvalidInputError(
                f"documents[{i}] must be a langchain Document, got {type(doc).__name__}"
            )
        if not isinstance(doc.page_content, str) or not doc.page_content.strip():
            raise InvalidInputError(f"documents[{i}] is empty")
        did = _parent_id(doc, ids[i] if ids is not None else None, id_key)
        if did in seen:
            previous = seen[did]
            if (previous.page_content, previous.metadata) != (doc.page_content, doc.metadata):
                raise InvalidInputError(
                    f"documents[{i}] has the id {did!r} of an earlier, different document"
                )
            continue
        seen[did] = doc
        chunks = chunk_text(
            doc.page_content, doc_id=did, chunk_words=chunk_words, overlap_words=overlap_words
        )
        for c in chunks:
            metadata = {
                **doc.metadata,
                id_key: did,
                "chunk_index": c.index,
                "chunk_count": len(chunks),
                "start": c.start,
                "end": c.end,
            }
            out.append(Document(id=c.chunk_id, page_content=c.text, metadata=metadata))
    return out


def index_documents(
    vectorstore: VectorStore,
    documents: Iterable[Document],
    *,
    ids: Sequence[str] | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    id_key: str = "doc_id",
    batch_size: int = _BATCH,
) -> list[str]:
    """Chunk ``documents`` and add the chunks to ``vectorstore``; return the parent ids.

    Re-indexing a document with the same id replaces its chunks, so a shorter new version
    leaves no stale chunks behind: on Chroma by a ``where`` filter on the parent id, on any other
    store that implements ``get_by_ids`` and ``delete(ids)`` by deleting the old version's chunk
    ids (``"{doc_id}:{i}"``) past the new version's count.
    """
    chunks = chunk_documents(
        documents, ids=ids, chunk_words=chunk_words, overlap_words=overlap_words, id_key=id_key
    )
    parent_ids = list(dict.fromkeys(str(c.metadata[id_key]) for c in chunks))
    if is_chroma(vectorstore):
        for start in range(0, len(parent_ids), batch_size):
            batch = parent_ids[start : start + batch_size]
            vectorstore.delete(where={id_key: {"$in": batch}})
    elif has_get_by_ids(vectorstore):
        _delete_stale(vectorstore, chunks, id_key)
    for start in range(0, len(chunks), batch_size):
        batch_docs = chunks[start : start + batch_size]
        vectorstore.add_documents(batch_docs, ids=[str(d.id) for d in batch_docs])
    return parent_ids


def _delete_stale(vectorstore: VectorStore, chunks: list[Document], id_key: str) -> None:
    """Delete the chunks of earlier versions that the new chunks do not overwrite."""
    counts: dict[str, int] = {}
    for c in chunks:
        counts[str(c.metadata[id_key])] = int(c.metadata["chunk_count"])
    firsts = vectorstore.get_by_ids([f"{did}:0" for did in counts])
    stale: list[str] = []
    for old in firsts:
        did = str(old.metadata.get(id_key))
        try:
            old_count = int(old.metadata["chunk_count"])
        except (KeyError, TypeError, ValueError):
            continue
        if did in counts and old_count > counts[did]:
            stale.extend(f"{did}:{i}" for i in range(counts[did], old_count))
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
        counts: dict[str, int] = {}
        for c in chunks:
            did = c.metadata.get(self.id_key)
            if did is None:
                continue
            try:
                counts.setdefault(str(did), int(c.metadata["chunk_count"]))
            except (KeyError, TypeError, ValueError):
                counts.setdefault(str(did), 0)
        wanted = [f"{did}:{i}" for did, n in counts.items() for i in range(n)]
        groups: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
        for doc in self.vectorstore.get_by_ids(wanted) if wanted else []:
            groups.setdefault(str(doc.metadata.get(self.id_key)), []).append(
                (doc.page_content, doc.metadata)
            )
        parents = [_rebuild_parent(did, groups.get(did, []), self.id_key) for did in counts]
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
