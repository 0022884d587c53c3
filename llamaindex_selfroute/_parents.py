"""Where the long context comes from: a fixed document, a function, or the retrieved nodes' parents.

The long-context step needs whole documents. :class:`ParentDocuments` loads the source documents
of the retrieved nodes (by ``ref_doc_id``, most relevant first) from a docstore, or rebuilds them
in order from their chunks (docstore nodes or the vector store), always under the same metadata
filters the retriever used: text the retriever could not have returned never reaches a prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from selfroute import ConfigurationError, ContextDocument, InvalidInputError
from selfroute._threads import in_thread

__all__ = [
    "CallableContext",
    "FixedContext",
    "LongContextSource",
    "ParentDocuments",
    "long_context_source",
    "matches_filters",
    "rebuild_text",
    "to_context_documents",
]

logger = logging.getLogger(__name__)

#: Placed between non-adjacent chunks when a document is rebuilt from a subset of its chunks.
GAP_MARKER = "\n[...]\n"

LongContextFn = Callable[[str, list[NodeWithScore]], Any]
AsyncLongContextFn = Callable[[str, list[NodeWithScore]], Awaitable[Any]]


class LongContextSource(Protocol):
    """Loads the long context for a question and its retrieved nodes."""

    def load(self, question: str, nodes: list[NodeWithScore]) -> list[ContextDocument] | None:
        """The long context, most relevant document first, or ``None``."""
        ...

    async def aload(
        self, question: str, nodes: list[NodeWithScore]
    ) -> list[ContextDocument] | None:
        """Async :meth:`load`; never blocks the event loop."""
        ...


def _to_context_document(item: Any, position: int) -> ContextDocument:
    if isinstance(item, ContextDocument):
        return item
    if isinstance(item, str):
        return ContextDocument(text=item)
    if isinstance(item, NodeWithScore):
        item = item.node
    if isinstance(item, BaseNode):
        return ContextDocument(
            text=item.get_content(metadata_mode=MetadataMode.NONE),
            doc_id=item.node_id,
            metadata=dict(item.metadata),
        )
    raise InvalidInputError(
        f"long context item {position} must be a str, a LlamaIndex Document/node or a "
        f"selfroute.ContextDocument, got {type(item).__name__}"
    )


def to_context_documents(value: Any) -> list[ContextDocument] | None:
    """Normalize a long context given by a user (one item or a sequence) to context documents.

    Args:
        value: ``None``, a string, a LlamaIndex ``Document``/node, a ``ContextDocument``, or a
            sequence of those.

    Returns:
        The documents, or ``None`` when ``value`` is ``None`` or empty.

    Raises:
        InvalidInputError: An item has an unsupported type.
    """
    if value is None:
        return None
    if isinstance(value, (str, BaseNode, NodeWithScore, ContextDocument)):
        value = [value]
    if not isinstance(value, Sequence):
        raise InvalidInputError(
            "the long context must be a str, a Document, a ContextDocument or a list of them, "
            f"got {type(value).__name__}"
        )
    docs = [_to_context_document(item, i) for i, item in enumerate(value)]
    return docs or None


class FixedContext:
    """The same long context for every question.

    Args:
        documents: The long context (see :func:`to_context_documents`).

    Raises:
        InvalidInputError: Nothing with text was given.
    """

    def __init__(self, documents: Any) -> None:
        docs = to_context_documents(documents)
        if not docs or not any(d.text.strip() for d in docs):
            raise InvalidInputError("long_context was given but holds no text")
        self.documents = docs

    def load(self, question: str, nodes: list[NodeWithScore]) -> list[ContextDocument] | None:
        """The fixed documents."""
        return list(self.documents)

    async def aload(
        self, question: str, nodes: list[NodeWithScore]
    ) -> list[ContextDocument] | None:
        """The fixed documents."""
        return list(self.documents)


class CallableContext:
    """The long context from user functions.

    Args:
        fn: ``fn(question, nodes) -> documents | None`` (sync).
        afn: Optional async twin used by ``aquery``; without it ``fn`` runs in a worker thread.
    """

    def __init__(self, fn: LongContextFn | None, afn: AsyncLongContextFn | None = None) -> None:
        if fn is None and afn is None:
            raise ConfigurationError("CallableContext needs a function")
        self.fn = fn
        self.afn = afn

    def load(self, question: str, nodes: list[NodeWithScore]) -> list[ContextDocument] | None:
        """Call ``fn``."""
        if self.fn is None:
            raise ConfigurationError(
                "only an async long-context function (along_context) was given; use aquery(), "
                "or also pass a sync long_context function"
            )
        return to_context_documents(self.fn(question, nodes))

    async def aload(
        self, question: str, nodes: list[NodeWithScore]
    ) -> list[ContextDocument] | None:
        """Await ``afn``, or run ``fn`` in a worker thread."""
        if self.afn is not None:
            return to_context_documents(await self.afn(question, nodes))
        return await in_thread(self.load, question, nodes)


def matches_filters(metadata: dict[str, Any], filters: MetadataFilters | None) -> bool:
    """Whether ``metadata`` passes ``filters`` (nested filters and and/or/not included).

    Uses LlamaIndex's own operator semantics (``build_metadata_filter_fn``) for each leaf.
    """
    if filters is None or not filters.filters:
        return True
    results: list[bool] = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            results.append(matches_filters(metadata, item))
        else:
            leaf = MetadataFilters(filters=[item])
            results.append(build_metadata_filter_fn(lambda _id: metadata, leaf)(""))
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return all(results)
    if condition == FilterCondition.OR:
        return any(results)
    if condition == FilterCondition.NOT:
        return not any(results)
    raise ConfigurationError(f"unsupported filter condition {condition!r}")


def rebuild_text(nodes: Sequence[BaseNode]) -> str:
    """Rebuild a document's text from some or all of its chunks.

    Chunks are put in document order by their character offsets; overlaps are merged and gaps
    (chunks left out, e.g. by a filter) are marked with ``[...]``. Chunks without usable offsets
    are joined in the order given, separated by blank lines.
    """
    items: list[tuple[int | None, int | None, str]] = [
        (
            getattr(n, "start_char_idx", None),
            getattr(n, "end_char_idx", None),
            n.get_content(metadata_mode=MetadataMode.NONE),
        )
        for n in nodes
    ]
    spans = [
        (start, end, text)
        for start, end, text in items
        if start is not None and end is not None and end - start == len(text)
    ]
    if len(spans) != len(items):
        return "\n\n".join(text.strip() for _, _, text in items if text.strip())
    parts: list[str] = []
    pos: int | None = None
    for start, end, text in sorted(spans, key=lambda it: (it[0], it[1])):
        if pos is None or start > pos:
            if pos is not None:
                parts.append(GAP_MARKER)
            parts.append(text)
            pos = end
        elif end > pos:
            parts.append(text[pos - start :])
            pos = end
    return "".join(parts).strip()


class ParentDocuments:
    """The source documents of the retrieved nodes, under the retriever's filters.

    For each distinct ``ref_doc_id`` of the retrieved nodes (in rank order) it tries:

    1. the document stored in ``docstore`` under that id, if its metadata passes ``filters``;
    2. the document's chunk nodes in ``docstore`` (``ref_doc_info``) that pass ``filters``,
       rebuilt in order;
    3. the document's chunks in ``vector_store`` (``get_nodes`` with the ``ref_doc_id`` filter
       AND ``filters``), checked again locally, rebuilt in order.

    A document none of these can load is left out (logged); when nothing loads, ``None`` is
    returned and the flow reports that no long context is available.

    Args:
        docstore: Where the original documents (or their nodes) are kept.
        vector_store: The vector store holding the chunks.
        filters: The metadata filters the retriever applies.
        doc_id_key: Metadata key holding the parent id in the vector store (``ref_doc_id`` works
            for Chroma; some stores use ``doc_id``).
    """

    def __init__(
        self,
        *,
        docstore: BaseDocumentStore | None = None,
        vector_store: BasePydanticVectorStore | None = None,
        filters: MetadataFilters | None = None,
        doc_id_key: str = "ref_doc_id",
    ) -> None:
        if docstore is None and vector_store is None:
            raise ConfigurationError(
                "loading parent documents needs a docstore or a vector store; pass "
                "long_context=... (a fixed document or a function) or docstore=..."
            )
        self.docstore = docstore
        self.vector_store = vector_store
        self.filters = filters
        self.doc_id_key = doc_id_key

    @staticmethod
    def parent_ids(nodes: Sequence[NodeWithScore]) -> list[str]:
        """Distinct ``ref_doc_id`` of ``nodes``, in rank order."""
        ids: dict[str, None] = {}
        for n in nodes:
            rid = n.node.ref_doc_id
            if rid:
                ids.setdefault(rid, None)
        return list(ids)

    def _allowed(self, node: BaseNode) -> bool:
        try:
            return matches_filters(dict(node.metadata), self.filters)
        except (TypeError, ValueError) as exc:
            logger.warning("cannot evaluate the retriever's filters on %s: %s", node.node_id, exc)
            return False  # cannot prove the text is allowed: leave it out

    def _from_docstore(self, rid: str) -> ContextDocument | None:
        if self.docstore is None:
            return None
        doc = self.docstore.get_document(rid, raise_error=False)
        if doc is not None and self._allowed(doc):
            text = doc.get_content(metadata_mode=MetadataMode.NONE)
            if text.strip():
                return ContextDocument(text=text, doc_id=rid, metadata=dict(doc.metadata))
        info = self.docstore.get_ref_doc_info(rid)
        if info is None or not info.node_ids:
            return None
        chunks = [
            n
            for n in self.docstore.get_nodes(list(info.node_ids), raise_error=False)
            if n is not None and self._allowed(n)
        ]
        return self._rebuilt(rid, chunks, info.metadata)

    def _from_vector_store(self, rid: str) -> ContextDocument | None:
        if self.vector_store is None:
            return None
        parts: list[MetadataFilter | MetadataFilters] = [
            MetadataFilter(key=self.doc_id_key, value=rid)
        ]
        if self.filters is not None and self.filters.filters:
            parts.append(self.filters)
        try:
            nodes = self.vector_store.get_nodes(None, filters=MetadataFilters(filters=parts))
        except NotImplementedError:
            return None
        chunks = [n for n in nodes if n.ref_doc_id == rid and self._allowed(n)]
        return self._rebuilt(rid, chunks, None)

    @staticmethod
    def _rebuilt(
        rid: str, chunks: Sequence[BaseNode], metadata: dict[str, Any] | None
    ) -> ContextDocument | None:
        if not chunks:
            return None
        text = rebuild_text(chunks)
        if not text.strip():
            return None
        meta = dict(metadata) if metadata else dict(chunks[0].metadata)
        meta["selfroute_rebuilt_from_chunks"] = len(chunks)
        return ContextDocument(text=text, doc_id=rid, metadata=meta)

    def load(self, question: str, nodes: list[NodeWithScore]) -> list[ContextDocument] | None:
        """The parent documents of ``nodes``, most relevant first, or ``None``."""
        docs: list[ContextDocument] = []
        for rid in self.parent_ids(nodes):
            doc = self._from_docstore(rid) or self._from_vector_store(rid)
            if doc is None:
                logger.warning("parent document %r of a retrieved node could not be loaded", rid)
                continue
            docs.append(doc)
        return docs or None

    async def aload(
        self, question: str, nodes: list[NodeWithScore]
    ) -> list[ContextDocument] | None:
        """:meth:`load` in a worker thread (docstores and embedded stores are blocking)."""
        return await in_thread(self.load, question, nodes)


def long_context_source(
    retriever: Any,
    long_context: Any,
    along_context: AsyncLongContextFn | None,
    docstore: BaseDocumentStore | None,
    vector_store: BasePydanticVectorStore | None,
    filters: MetadataFilters | None,
) -> LongContextSource | None:
    """Where an engine's long context comes from: a function (``long_context`` callable, or
    ``along_context``), a fixed document, or the parents of the retrieved nodes (from
    ``docstore``/``vector_store`` under ``filters``, each defaulting to the retriever's);
    ``None`` when there is none of these."""
    if callable(long_context) or along_context is not None:
        return CallableContext(long_context, along_context)
    if long_context is not None:
        return FixedContext(long_context)
    docstore = docstore if docstore is not None else getattr(retriever, "_docstore", None)
    vector_store = (
        vector_store if vector_store is not None else getattr(retriever, "_vector_store", None)
    )
    if filters is None:
        filters = getattr(retriever, "_filters", None)
    if not isinstance(docstore, BaseDocumentStore):
        docstore = None
    if not isinstance(vector_store, BasePydanticVectorStore):
        vector_store = None
    if docstore is None and vector_store is None:
        return None
    return ParentDocuments(docstore=docstore, vector_store=vector_store, filters=filters)
