"""Building and reopening the index behind ``SelfRouteQueryEngine.from_documents``.

Chunks (300 words, exact offsets) go to a Chroma collection through
``llama-index-vector-stores-chroma`` on an *embedded* Chroma client (``PersistentClient`` when a
``persist_dir`` is given, else an in-memory ``EphemeralClient``; never an ``HttpClient`` by
accident). The original documents go to a docstore persisted beside it, so the long-context step
can load a chunk's whole document by ``ref_doc_id``. Re-ingesting a document (same id) replaces
its chunks.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from llama_index.core import StorageContext, VectorStoreIndex, load_index_from_storage
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import BaseNode, Document, MetadataMode, TextNode
from llama_index.core.settings import Settings
from llama_index.core.vector_stores.types import BasePydanticVectorStore

from llamaindex_selfroute._node_parser import WordChunkNodeParser
from selfroute import (
    DEFAULT_CHUNK_WORDS,
    ConfigurationError,
    InvalidInputError,
    MissingDependencyError,
)
from selfroute._owners import owner_conflicts, refuse_replacement

__all__ = ["DEFAULT_COLLECTION", "build_index", "load_index", "split_build_kwargs"]

#: Collection name used when persisting (in memory, every build gets a fresh unique name).
DEFAULT_COLLECTION = "selfroute"
_CHROMA_DIR = "chroma"
_INDEX_STORE_FILE = "index_store.json"
_INDEX_ID = "selfroute"
_MANIFEST_FILE = "selfroute_index.json"
#: Nodes per ``insert_nodes`` when embedding ahead through a ``HostedEmbedding``.
_INSERT_BATCH = 256

_BUILD_KEYS = frozenset(
    {
        "embed_model",
        "vector_store",
        "persist_dir",
        "collection_name",
        "chunk_words",
        "overlap_words",
        "collection_kwargs",
        "show_progress",
        "scope_keys",
    }
)
_LOAD_KEYS = frozenset({"embed_model", "vector_store", "collection_name"})


def split_build_kwargs(
    kwargs: dict[str, Any], *, loading: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split keyword arguments into index-building ones and engine ones."""
    keys = _LOAD_KEYS if loading else _BUILD_KEYS
    build = {k: v for k, v in kwargs.items() if k in keys}
    engine = {k: v for k, v in kwargs.items() if k not in keys}
    return build, engine


def _chroma_collection(
    persist_dir: Path | None, name: str, collection_kwargs: dict[str, Any], *, create: bool
) -> Any:
    try:
        import chromadb
        from llama_index.vector_stores.chroma import ChromaVectorStore
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError("llama-index-vector-stores-chroma", "llamaindex") from exc
    client: Any = (
        chromadb.PersistentClient(path=str(persist_dir / _CHROMA_DIR))
        if persist_dir is not None
        else chromadb.EphemeralClient()
    )
    if create:
        kwargs = {"embedding_function": None, **collection_kwargs}
        collection = client.get_or_create_collection(name=name, **kwargs)
    else:
        existing = sorted(c.name for c in client.list_collections())
        if name not in existing:
            raise ConfigurationError(
                f"no Chroma collection {name!r} in {persist_dir}; it holds {existing or 'none'}"
            )
        collection = client.get_collection(name=name, embedding_function=None)
    return ChromaVectorStore(chroma_collection=collection)


def _check_documents(documents: Sequence[Any]) -> list[Document]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
        raise InvalidInputError(
            "documents must be a list of LlamaIndex Document objects, got "
            f"{type(documents).__name__}"
        )
    if not documents:
        raise InvalidInputError("documents is empty: give at least one Document")
    seen: set[str] = set()
    for i, doc in enumerate(documents):
        if not isinstance(doc, BaseNode):
            raise InvalidInputError(
                f"documents[{i}] must be a LlamaIndex Document, got {type(doc).__name__}"
            )
        if not doc.get_content(metadata_mode=MetadataMode.NONE).strip():
            raise InvalidInputError(f"documents[{i}] (id {doc.node_id!r}) has no text")
        if doc.node_id in seen:
            raise InvalidInputError(
                f"documents[{i}] repeats the id {doc.node_id!r}; document ids must be unique"
            )
        seen.add(doc.node_id)
    return cast("list[Document]", list(documents))


def _write_manifest(persist_dir: Path, manifest: dict[str, Any]) -> None:
    (persist_dir / _MANIFEST_FILE).write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def _read_manifest(persist_dir: Path) -> dict[str, Any]:
    path = persist_dir / _MANIFEST_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigurationError(f"{path} is not valid JSON: {exc}") from exc
    return data if isinstance(data, dict) else {}


def _stored_metadata(docstore: Any, doc_id: str) -> dict[str, Any] | None:
    """Metadata of the stored document ``doc_id`` (``None``: not stored)."""
    if docstore.document_exists(doc_id):
        return dict(docstore.get_document(doc_id).metadata or {})
    info = docstore.get_ref_doc_info(doc_id)
    return None if info is None else dict(info.metadata or {})


def build_index(
    documents: Sequence[Any],
    *,
    embed_model: BaseEmbedding | None = None,
    vector_store: BasePydanticVectorStore | None = None,
    persist_dir: str | Path | None = None,
    collection_name: str | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    collection_kwargs: dict[str, Any] | None = None,
    show_progress: bool = False,
    scope_keys: Sequence[str] | None = None,
) -> VectorStoreIndex:
    """Chunk ``documents``, embed the chunks into a vector store, keep the documents.

    Args:
        documents: LlamaIndex ``Document`` objects (give them stable ``id_``\\ s to re-ingest).
        embed_model: Embedding model (default ``Settings.embed_model``).
        vector_store: Your own vector store; default: a Chroma collection on an embedded client.
        persist_dir: Directory for the Chroma database, the docstore and the index metadata
            (``None``: in memory). Building again into the same directory adds to the index;
            a document whose id is already there has its chunks replaced.
        collection_name: Chroma collection (default ``selfroute`` when persisted, a fresh unique
            name in memory, so separate in-memory indexes never share a collection).
        chunk_words: Words per chunk (300 in the paper).
        overlap_words: Words shared by neighbouring chunks.
        collection_kwargs: Extra arguments for ``get_or_create_collection`` (e.g. ``metadata``).
        show_progress: Show progress bars.
        scope_keys: Metadata keys that tell the owners of documents apart (``("tenant",)``).
            LlamaIndex document ids are global in an index, so a document whose id is stored
            under *another owner* is refused, never replaced: give each owner's documents
            their own ids (``f"{tenant}/{name}"``). ``None`` (the owner keys are unknown):
            a stored document with any other metadata is refused. ``()``: ids are global,
            replace regardless.

    Returns:
        A ``VectorStoreIndex`` whose docstore holds the original documents.

    Raises:
        InvalidInputError: Documents missing, empty, of the wrong type or with repeated ids, or
            an id already stored for another owner (see ``scope_keys``).
        ConfigurationError: Bad chunking settings.
        MissingDependencyError: Chroma support is not installed.
    """
    docs = _check_documents(documents)
    parser = WordChunkNodeParser(chunk_words=chunk_words, overlap_words=overlap_words)
    embed = embed_model or Settings.embed_model
    root = Path(persist_dir) if persist_dir is not None else None
    if root is not None and (root / _INDEX_STORE_FILE).is_file():
        index = load_index(
            root, embed_model=embed, vector_store=vector_store, collection_name=collection_name
        )
        name = _read_manifest(root).get("collection_name")
    else:
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)
        name = collection_name or (
            DEFAULT_COLLECTION if root is not None else f"selfroute-{uuid.uuid4().hex[:12]}"
        )
        store = vector_store or _chroma_collection(
            root, name, dict(collection_kwargs or {}), create=True
        )
        if vector_store is not None:
            name = None
        storage = StorageContext.from_defaults(vector_store=store)
        index = VectorStoreIndex(
            [], storage_context=storage, embed_model=embed, transformations=[parser]
        )  # transformations: not Settings' default splitter, whose tokenizer takes 0.25 s to load
        index.set_index_id(_INDEX_ID)
    docstore = index.docstore
    stored = {doc.node_id: _stored_metadata(docstore, doc.node_id) for doc in docs}
    for i, doc in enumerate(docs):  # check every document before replacing any
        meta = stored[doc.node_id]
        conflicts = {} if meta is None else owner_conflicts(meta, doc.metadata, scope_keys)
        if conflicts and scope_keys != ():
            raise refuse_replacement(
                doc.node_id,
                conflicts,
                where=f"documents[{i}]",
                hint="Document ids are global in an index: give each owner's documents their "
                "own ids (e.g. f'{tenant}/{name}'), or pass scope_keys=() to replace it anyway.",
            )
    for doc in docs:  # re-ingesting a document replaces its chunks
        if stored[doc.node_id] is not None:
            index.delete_ref_doc(doc.node_id, delete_from_docstore=True)
    _insert_nodes(index, parser.get_nodes_from_documents(docs, show_progress=show_progress), embed)
    docstore.add_documents(docs, allow_update=True)
    if root is not None:
        index.storage_context.persist(persist_dir=str(root))
        _write_manifest(
            root,
            {
                "format": 1,
                "index_id": _INDEX_ID,
                "collection_name": name,
                "chunk_words": chunk_words,
                "overlap_words": overlap_words,
            },
        )
    return index


def _insert_nodes(index: VectorStoreIndex, nodes: list[BaseNode], embed: Any) -> None:
    """Insert ``nodes``; with a :class:`HostedEmbedding`, in batches of up to ``_INSERT_BATCH``
    (smaller at first) with the next batches' embedding requests in flight while each batch is
    written."""
    from llamaindex_selfroute._embeddings import HostedEmbedding
    from selfroute.stores._ahead import embed_ahead, ramp_batches

    if not isinstance(embed, HostedEmbedding) or not nodes:
        index.insert_nodes(nodes)
        return
    write = _chroma_writer(index) or _insert_embedded(index)
    batches = (
        (batch, [n.get_content(metadata_mode=MetadataMode.EMBED) for n in batch])
        for batch in ramp_batches(nodes, _INSERT_BATCH)
    )
    for batch, vectors in embed_ahead(embed.submit, batches, step="build_index"):
        write(batch, vectors)


def _insert_embedded(index: VectorStoreIndex) -> Callable[[Sequence[BaseNode], list[Any]], None]:
    """A batch writer for any vector store: ``insert_nodes`` with the vectors set on the nodes."""

    def write(batch: Sequence[BaseNode], vectors: list[Any]) -> None:
        for node, vector in zip(batch, vectors, strict=True):
            node.embedding = vector.tolist()
        index.insert_nodes(list(batch))  # nodes with an embedding are not embedded again

    return write


def _chroma_writer(
    index: VectorStoreIndex,
) -> Callable[[Sequence[BaseNode], list[Any]], None] | None:
    """A batch writer straight to the collection of a stock ``ChromaVectorStore``, or ``None``
    (any other store, a subclass that overrides ``add``, or an index that also keeps its nodes
    in the docstore: those go through ``insert_nodes``).

    It writes what ``insert_nodes`` would (the same ids, documents and metadata, in the same
    order, then the index struct), without copying each node to set its embedding on it (a
    pydantic-validated list of 1,536 Python floats) and with the float32 vectors handed to
    Chroma as they came back (a list of floats is converted back to float32 there, under the
    GIL): the stored vectors are the same float32 values either way.
    """
    try:
        from llama_index.vector_stores.chroma import ChromaVectorStore
        from llama_index.vector_stores.chroma.base import MAX_CHUNK_SIZE
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    store = index.vector_store
    if (
        not isinstance(store, ChromaVectorStore)
        or type(store).add is not ChromaVectorStore.add
        or not store.stores_text
        or getattr(index, "_store_nodes_override", True)
    ):
        return None
    collection = store.client
    flat = store.flat_metadata
    callbacks = getattr(index, "_callback_manager", None) or Settings.callback_manager

    def write(batch: Sequence[BaseNode], vectors: list[Any]) -> None:
        if not all(type(n) is TextNode for n in batch):  # IndexNode/ImageNode: the docstore too
            _insert_embedded(index)(batch, vectors)
            return
        with callbacks.as_trace("insert_nodes"):
            for start in range(0, len(batch), MAX_CHUNK_SIZE):  # as ChromaVectorStore.add
                part = batch[start : start + MAX_CHUNK_SIZE]
                collection.add(
                    embeddings=vectors[start : start + MAX_CHUNK_SIZE],
                    ids=[n.node_id for n in part],
                    metadatas=[_chroma_metadata(n, flat) for n in part],
                    documents=[n.get_content(metadata_mode=MetadataMode.NONE) for n in part],
                )
            index.storage_context.index_store.add_index_struct(index.index_struct)

    return write


def _chroma_metadata(node: BaseNode, flat: bool) -> dict[str, Any]:
    """The metadata ``ChromaVectorStore.add`` stores for ``node`` (``None`` values as ``""``)."""
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=flat)
    return {k: "" if v is None else v for k, v in metadata.items()}


def load_index(
    persist_dir: str | Path,
    *,
    embed_model: BaseEmbedding | None = None,
    vector_store: BasePydanticVectorStore | None = None,
    collection_name: str | None = None,
) -> VectorStoreIndex:
    """Reopen an index written by :func:`build_index` with a ``persist_dir``.

    Args:
        persist_dir: The directory given to :func:`build_index`.
        embed_model: The same embedding model used to build it (default ``Settings.embed_model``).
        vector_store: Your own vector store, if you built with one that does not persist into
            ``persist_dir`` (LlamaIndex's in-memory ``SimpleVectorStore`` does).
        collection_name: Chroma collection (default: the one recorded at build time).

    Raises:
        ConfigurationError: The directory, the index or the collection does not exist.
    """
    root = Path(persist_dir)
    if not root.is_dir():
        raise ConfigurationError(f"persist_dir {str(root)!r} does not exist")
    if not (root / _INDEX_STORE_FILE).is_file():
        raise ConfigurationError(
            f"{str(root)!r} holds no index (no {_INDEX_STORE_FILE}); build it first with "
            "SelfRouteQueryEngine.from_documents(..., persist_dir=...)"
        )
    manifest = _read_manifest(root)
    if vector_store is None and (root / _CHROMA_DIR).is_dir():
        name = collection_name or manifest.get("collection_name") or DEFAULT_COLLECTION
        vector_store = _chroma_collection(root, name, {}, create=False)
    storage = StorageContext.from_defaults(persist_dir=str(root), vector_store=vector_store)
    index = load_index_from_storage(
        storage,
        index_id=manifest.get("index_id") or _INDEX_ID,
        embed_model=embed_model or Settings.embed_model,
    )
    if not isinstance(index, VectorStoreIndex):
        raise ConfigurationError(
            f"{str(root)!r} holds a {type(index).__name__}, not a vector index"
        )
    return index
