"""``SelfRouteQueryEngine``'s constructors over an index: ``from_index``, ``from_documents`` and
``from_persist_dir`` (a mixin the engine inherits)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from llama_index.core.llms import LLM
from llama_index.core.vector_stores.types import MetadataFilters
from typing_extensions import Self

from selfroute import RouteConfig

if TYPE_CHECKING:
    from llama_index.core.indices.vector_store.base import VectorStoreIndex

__all__ = ["EngineConstructors", "retrieval_sizes"]


def retrieval_sizes(settings: dict[str, Any]) -> tuple[int, ...]:
    """The retrieval sizes the RAG step tries under these engine settings: ``k``, then the
    ``k_ladder`` rungs (from the keyword settings, else from ``config``).

    Raises:
        ConfigurationError: An invalid ``k`` or ``k_ladder``.
    """
    config = settings.get("config")
    cfg = config if isinstance(config, RouteConfig) else RouteConfig()
    changes = {name: settings[name] for name in ("k", "k_ladder") if name in settings}
    if changes:
        cfg = dataclasses.replace(cfg, **changes)
    return cfg.rungs


class EngineConstructors:
    """``from_index``, ``from_documents`` and ``from_persist_dir`` (mixed into the engine)."""

    @classmethod
    def from_index(
        cls,
        index: VectorStoreIndex,
        llm: LLM | None = None,
        long_context_llm: LLM | None = None,
        *,
        filters: MetadataFilters | None = None,
        similarity_top_k: int | None = None,
        retriever_kwargs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Drop-in for ``index.as_query_engine()``.

        Args:
            index: A ``VectorStoreIndex`` (or any index with ``as_retriever``).
            llm: The RAG-step LLM.
            long_context_llm: The long-context LLM (default: ``llm``).
            filters: Metadata filters for retrieval and for loading parent documents.
            similarity_top_k: Chunks retrieved (default: ``k``, 5; with a ``k_ladder``, its
                largest rung -- never fewer, so that every rung can be shown).
            retriever_kwargs: More arguments for ``index.as_retriever``.
            **kwargs: Anything :class:`SelfRouteQueryEngine` accepts.
        """
        rungs = retrieval_sizes(kwargs)
        rkw = dict(retriever_kwargs or {})
        top_k = rkw.get("similarity_top_k") or similarity_top_k or rungs[0]
        if len(rungs) > 1:  # the retriever must return the ladder's largest rung
            top_k = max(top_k, rungs[-1])
        rkw["similarity_top_k"] = top_k
        if filters is not None:
            rkw["filters"] = filters
        retriever = index.as_retriever(**rkw)
        kwargs.setdefault("docstore", index.docstore)
        if getattr(index, "vector_store", None) is not None:
            kwargs.setdefault("vector_store", index.vector_store)
        built: Self = cast(Any, cls)(retriever, llm, long_context_llm, filters=filters, **kwargs)
        return built

    @classmethod
    def from_documents(cls, documents: Sequence[Any], **kwargs: Any) -> Self:
        """Index ``documents`` in 300-word chunks (Chroma by default) and build an engine.

        See :func:`llamaindex_selfroute.build_index` for the arguments; the rest go to
        :class:`SelfRouteQueryEngine`.
        """
        from llamaindex_selfroute._store import build_index, split_build_kwargs

        build_kwargs, engine_kwargs = split_build_kwargs(kwargs)
        index = build_index(documents, **build_kwargs)
        return cls.from_index(index, **engine_kwargs)

    @classmethod
    def from_persist_dir(cls, persist_dir: str, **kwargs: Any) -> Self:
        """Reopen what :meth:`from_documents` persisted to ``persist_dir``.

        See :func:`llamaindex_selfroute.load_index` for the arguments; the rest go to
        :class:`SelfRouteQueryEngine`.
        """
        from llamaindex_selfroute._store import load_index, split_build_kwargs

        build_kwargs, engine_kwargs = split_build_kwargs(kwargs, loading=True)
        index = load_index(persist_dir, **build_kwargs)
        return cls.from_index(index, **engine_kwargs)
