"""A LangChain retriever over a selfroute document store (hybrid dense + BM25 retrieval).

The store is the one ``selfroute index`` builds (:class:`selfroute.stores.DocumentStore`): chunks
in Chroma, full documents beside them, a BM25 index on disk. :class:`SelfRouteStoreRetriever`
returns the fused top-k chunks as ``Document`` objects and loads their parent documents for the
long-context route, so :meth:`SelfRouteStoreRetriever.as_self_route` is Self-Route over a folder
of files in two lines.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, InstanceOf

from langchain_selfroute._output import passage_document
from selfroute import ConfigurationError, Passage
from selfroute._threads import in_thread
from selfroute.stores import DEFAULT_COLLECTION, DEFAULT_STORE, HybridRetriever

__all__ = ["SelfRouteStoreRetriever"]


def _document(passage: Passage) -> Document:
    """:func:`passage_document`, with the store's chunk id as the ``Document`` id."""
    doc = passage_document(passage)
    doc.id = passage.metadata.get("chunk_id") or (str(passage.source) if passage.source else None)
    return doc


class SelfRouteStoreRetriever(BaseRetriever):
    """Top-k chunks from a selfroute store: dense (Chroma) and BM25 fused by reciprocal rank.

    Args:
        retriever: The core :class:`selfroute.stores.HybridRetriever` (or use :meth:`open`).
        k: Chunks to return; ``None`` uses ``retriever.k``. A ``k=`` keyword on ``invoke``
            overrides it per call.

    Example:
        >>> retriever = SelfRouteStoreRetriever.open(".selfroute")  # doctest: +SKIP
        >>> route = retriever.as_self_route(llm=ChatOpenAI(model="gpt-4o-mini"))  # doctest: +SKIP
        >>> route.invoke("What is the passkey?").route  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: InstanceOf[HybridRetriever]
    k: int | None = None

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
        """Open an indexed store (see :class:`selfroute.stores.DocumentStore`).

        Args:
            path: The store folder (also the BM25 index's home with ``chroma_url``).
            collection: The collection ``selfroute index`` wrote.
            chroma_url: A Chroma server instead of the embedded store.
            embedding: ``None`` uses the embedding recorded with the collection.
            mode: ``hybrid``, ``dense`` or ``bm25``.
            k: Chunks per query.
            **kwargs: More :class:`~selfroute.stores.HybridRetriever` settings.
        """
        core = HybridRetriever.open(
            path, collection, chroma_url=chroma_url, embedding=embedding, mode=mode, k=k, **kwargs
        )
        return cls(retriever=core, k=k)

    def _k(self, k: int | None) -> int:
        value = k if k is not None else (self.k if self.k is not None else self.retriever.k)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigurationError(f"k must be a positive integer, got {value!r}")
        return value

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return [_document(p) for p in self.retriever.retrieve(query, self._k(k))]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
    ) -> list[Document]:
        passages = await self.retriever.aretrieve(query, self._k(k))
        return [_document(p) for p in passages]

    def load_parents(self, chunks: Sequence[Document]) -> list[Document]:
        """The full documents of ``chunks`` (by ``doc_id``), most relevant first.

        This is the ``parent_loader`` hook of :class:`~langchain_selfroute.SelfRoute`.
        """
        passages = [
            Passage(text=c.page_content, doc_id=c.metadata.get("doc_id"), metadata=c.metadata)
            for c in chunks
        ]
        return [
            Document(
                page_content=d.text, metadata=dict(d.metadata or {}, doc_id=d.doc_id), id=d.doc_id
            )
            for d in self.retriever.long_context(passages)
        ]

    async def aload_parents(self, chunks: Sequence[Document]) -> list[Document]:
        """Async :meth:`load_parents` (runs in a worker thread)."""
        return await in_thread(self.load_parents, chunks)

    def as_self_route(self, llm: Any, **kwargs: Any) -> Any:
        """A :class:`~langchain_selfroute.SelfRoute` over this store.

        The long context is the parents of the retrieved chunks (:meth:`load_parents`).

        Args:
            llm: The RAG-step model.
            **kwargs: More ``SelfRoute`` settings (``long_context_llm``, ``prices``, ...).
        """
        from langchain_selfroute._runnable import SelfRoute

        kwargs.setdefault("k", self.k if self.k is not None else self.retriever.k)
        return SelfRoute(
            retriever=self,
            llm=llm,
            parent_loader=self.load_parents,
            aparent_loader=self.aload_parents,
            long_context="parents",
            **kwargs,
        )
