"""``SelfRoute``'s constructors over a vector store: chunk, index, and load the parents back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.runnables import Runnable
from langchain_core.vectorstores import VectorStore
from typing_extensions import Self

from selfroute import DEFAULT_CHUNK_WORDS, ConfigurationError, InvalidInputError

if TYPE_CHECKING:
    from langchain_chroma import Chroma

__all__ = ["StoreConstructors"]


class StoreConstructors:
    """``from_vectorstore``, ``from_documents`` and ``from_texts`` (mixed into ``SelfRoute``)."""

    @classmethod
    def from_vectorstore(
        cls,
        vectorstore: VectorStore,
        *,
        llm: Runnable[Any, Any],
        search_type: str = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """A ``SelfRoute`` over a vector store of chunks made by :func:`index_documents`.

        The retriever is ``vectorstore.as_retriever(search_type, search_kwargs)``. The long
        context is the parent documents of the retrieved chunks, rebuilt from the store: for a
        ``langchain_chroma.Chroma`` store with the retriever's ``filter`` applied again
        (:class:`ChromaParentLoader`), for any other store that implements ``get_by_ids`` by
        chunk id (:class:`StoreParentLoader`). A store without ``get_by_ids`` needs
        ``parent_loader=`` or ``document=`` (else ``ConfigurationError`` here, not at the first
        decline).

        Args:
            vectorstore: The store of chunks.
            llm: The RAG-step model.
            search_type: ``similarity``, ``mmr`` or ``similarity_score_threshold``.
            search_kwargs: E.g. ``{"filter": {"tenant": "acme"}}``.
            **kwargs: Any other :class:`SelfRoute` setting (``k``, ``long_context_llm``, ...).
        """
        from langchain_selfroute._chroma import (
            ChromaParentLoader,
            StoreParentLoader,
            has_get_by_ids,
            is_chroma,
        )

        k = kwargs.get("k", 5)
        retriever = vectorstore.as_retriever(
            search_type=search_type, search_kwargs={"k": k, **(search_kwargs or {})}
        )
        id_key = kwargs.get("id_key", "doc_id")
        needs_loader = (
            "parent_loader" not in kwargs
            and "aparent_loader" not in kwargs
            and kwargs.get("long_context", "auto") in ("auto", "parents")
        )
        if needs_loader and is_chroma(vectorstore):
            kwargs["parent_loader"] = ChromaParentLoader(cast("Chroma", vectorstore), id_key=id_key)
        elif needs_loader and has_get_by_ids(vectorstore):
            kwargs["parent_loader"] = StoreParentLoader(vectorstore, id_key=id_key)
        elif needs_loader and kwargs.get("document") is None:
            raise ConfigurationError(
                f"{type(vectorstore).__name__} does not implement get_by_ids, so SelfRoute "
                "cannot load the full documents of retrieved chunks for the long-context step; "
                "pass parent_loader=, document=, or long_context='input'"
            )
        built: Self = cast(Any, cls)(retriever=retriever, llm=llm, **kwargs)
        return built

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        *,
        llm: Runnable[Any, Any],
        embedding: Embeddings,
        persist_directory: str | None = None,
        collection_name: str | None = None,
        client: Any = None,
        ids: Sequence[str] | None = None,
        chunk_words: int = DEFAULT_CHUNK_WORDS,
        overlap_words: int = 0,
        search_type: str = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        collection_metadata: dict[str, Any] | None = None,
        scope_keys: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Chunk ``documents`` into 300-word chunks in a Chroma collection and route over them.

        Every chunk carries ``doc_id``, ``chunk_index``, ``chunk_count``, ``start`` and ``end``
        metadata plus its document's metadata, so the full documents can be rebuilt from the
        store for the long-context step, with the same metadata filter the retriever uses:
        a retriever filtered to one tenant never brings another tenant's document into a prompt.

        Args:
            documents: The documents.
            llm: The RAG-step model.
            embedding: Any LangChain ``Embeddings``.
            persist_directory: Directory of an embedded persistent Chroma; ``None`` for in-memory.
            collection_name: The Chroma collection (default: ``selfroute``; in memory, a unique
                name, since Chroma's in-memory clients share collections within a process).
            client: A ``chromadb`` client to use instead (e.g. an ``HttpClient``).
            ids: One id per document (default: its ``doc_id`` metadata, its ``id``, or a hash of
                its text and metadata). Re-adding a document with the same id replaces its chunks.
            chunk_words: Words per chunk (300 in the paper).
            overlap_words: Words shared by consecutive chunks.
            search_type: Retriever search type.
            search_kwargs: Retriever search kwargs (``{"filter": {...}}``).
            collection_metadata: Chroma collection metadata.
            scope_keys: Metadata keys that tell the owners of documents apart in a shared
                collection (see :func:`index_documents`). Default: the keys an equality
                ``search_kwargs["filter"]`` pins (``{"tenant": "acme"}`` -> ``("tenant",)``),
                else unknown, and a document id stored with other metadata is refused.
            **kwargs: Any other :class:`SelfRoute` setting.
        """
        from langchain_selfroute._chroma import index_documents, open_chroma
        from selfroute._owners import scope_keys_of_filter

        if scope_keys is None:
            scope_keys = scope_keys_of_filter((search_kwargs or {}).get("filter"))

        store = open_chroma(
            embedding=embedding,
            collection_name=collection_name,
            persist_directory=persist_directory,
            client=client,
            collection_metadata=collection_metadata,
        )
        index_documents(
            store,
            documents,
            ids=ids,
            chunk_words=chunk_words,
            overlap_words=overlap_words,
            id_key=kwargs.get("id_key", "doc_id"),
            scope_keys=scope_keys,
        )
        return cls.from_vectorstore(
            store,
            llm=llm,
            search_type=search_type,
            search_kwargs=search_kwargs,
            chunk_words=chunk_words,
            **kwargs,
        )

    @classmethod
    def from_texts(
        cls,
        texts: Sequence[str],
        *,
        llm: Runnable[Any, Any],
        embedding: Embeddings,
        metadatas: Sequence[dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> Self:
        """:meth:`from_documents` over plain texts (with optional per-text metadata)."""
        if isinstance(texts, str):
            raise InvalidInputError("texts must be a list of strings, got a single str")
        if metadatas is not None and len(metadatas) != len(texts):
            raise InvalidInputError(
                f"metadatas has {len(metadatas)} entries for {len(texts)} texts"
            )
        docs = []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidInputError(f"texts[{i}] must be a str, got {type(text).__name__}")
            docs.append(
                Document(page_content=text, metadata=dict((metadatas or [{}] * len(texts))[i]))
            )
        return cls.from_documents(docs, llm=llm, embedding=embedding, **kwargs)
