"""A LlamaIndex retriever over a selfroute document store (hybrid dense + BM25 retrieval).

The store is the one ``selfroute index`` builds (:class:`selfroute.stores.DocumentStore`).
:class:`SelfRouteStoreRetriever` returns the fused top-k chunks as ``NodeWithScore`` (each node's
``ref_doc_id`` is its document's id) and loads their parent documents for the long-context route;
:meth:`SelfRouteStoreRetriever.as_query_engine` wires both into a ``SelfRouteQueryEngine``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    MetadataMode,
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from llamaindex_selfroute._handlers import node_to_passage
from selfroute import ConfigurationError, ContextDocument, Passage
from selfroute._threads import in_thread
from selfroute.stores import DEFAULT_COLLECTION, DEFAULT_STORE, HybridRetriever

__all__ = ["SelfRouteStoreRetriever"]


def _node(passage: Passage) -> NodeWithScore:
    metadata = {
        key: value
        for key, value in passage.metadata.items()
        if isinstance(value, (str, int, float, bool)) or value is None
    }
    chunk_id = str(metadata.get("chunk_id") or passage.source or "")
    node = TextNode(
        text=passage.text,
        metadata=metadata,
        # the store's own bookkeeping stays out of prompts and embeddings
        excluded_llm_metadata_keys=list(metadata),
        excluded_embed_metadata_keys=list(metadata),
    )
    if chunk_id:
        node.id_ = chunk_id
    if passage.doc_id:
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=passage.doc_id)
    return NodeWithScore(node=node, score=passage.score)


class SelfRouteStoreRetriever(BaseRetriever):
    """Top-k chunks from a selfroute store: dense (Chroma) and BM25 fused by reciprocal rank.

    Args:
        retriever: The core :class:`selfroute.stores.HybridRetriever` (or use :meth:`open`).
        k: Chunks to return; ``None`` uses ``retriever.k``.
        callback_manager: LlamaIndex callback manager.

    Example:
        >>> retriever = SelfRouteStoreRetriever.open(".selfroute")  # doctest: +SKIP
        >>> engine = retriever.as_query_engine(llm=OpenAI(model="gpt-4o-mini"))  # doctest: +SKIP
        >>> engine.query("What is the passkey?")  # doctest: +SKIP
    """

    def __init__(
        self,
        retriever: HybridRetriever,
        *,
        k: int | None = None,
        callback_manager: CallbackManager | None = None,
    ) -> None:
        if not isinstance(retriever, HybridRetriever):
            raise ConfigurationError(
                f"retriever must be a selfroute.stores.HybridRetriever, got {type(retriever).__name__}"
            )
        self.retriever = retriever
        self.k = k if k is not None else retriever.k
        super().__init__(callback_manager=callback_manager)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = DEFAULT_STORE,
        collection: str = DEFAULT_COLLECTION,
        *,
        chroma_url: str | None = None,
        embedding: Any = None,
        mode: str = "hybrid",
        k: int = 5,
        **kwargs: Any,
    ) -> SelfRouteStoreRetriever:
        """Open an indexed store (see :class:`selfroute.stores.DocumentStore`)."""
        core = HybridRetriever.open(
            path, collection, chroma_url=chroma_url, embedding=embedding, mode=mode, k=k, **kwargs
        )
        return cls(core, k=k)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [_node(p) for p in self.retriever.retrieve(query_bundle.query_str, self.k)]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        passages = await self.retriever.aretrieve(query_bundle.query_str, self.k)
        return [_node(p) for p in passages]

    def long_context(self, question: str, nodes: Sequence[NodeWithScore]) -> list[ContextDocument]:
        """The full documents of ``nodes``, most relevant first (a ``long_context`` function for
        ``SelfRouteQueryEngine``)."""
        return self.retriever.long_context([node_to_passage(n, MetadataMode.NONE) for n in nodes])

    async def along_context(
        self, question: str, nodes: Sequence[NodeWithScore]
    ) -> list[ContextDocument]:
        """Async :meth:`long_context` (runs in a worker thread)."""
        return await in_thread(self.long_context, question, nodes)

    def as_query_engine(self, llm: Any = None, **kwargs: Any) -> Any:
        """A ``SelfRouteQueryEngine`` over this store (long context: the parent documents).

        Args:
            llm: The RAG-step LLM (default ``Settings.llm``).
            **kwargs: More ``SelfRouteQueryEngine`` settings (``long_context_llm``, ``k_ladder``
                ...); with a ``k_ladder`` the engine retrieves its largest rung.
        """
        from llamaindex_selfroute._constructors import retrieval_sizes
        from llamaindex_selfroute._engine import SelfRouteQueryEngine

        kwargs.setdefault("k", self.k)
        top = retrieval_sizes(kwargs)[-1]
        # with a k_ladder the engine needs the largest rung: retrieve that many
        retriever = (
            self
            if top <= self.k
            else type(self)(self.retriever, k=top, callback_manager=self.callback_manager)
        )
        return SelfRouteQueryEngine(
            retriever,
            llm=llm,
            long_context=self.long_context,
            along_context=self.along_context,
            **kwargs,
        )
