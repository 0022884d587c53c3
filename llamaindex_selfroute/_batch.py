"""``SelfRouteQueryEngine.batch_job``: many questions through a provider batch API.

A mixin the engine inherits. The core's :class:`selfroute.BatchJob` does the work; this module
builds the per-question handler from the engine and picks the backend for its LLMs (LlamaIndex
``OpenAI``: OpenAI Batch API; ``GoogleGenAI``: Gemini batch mode).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from selfroute import (
    BatchItem,
    BatchJob,
    ConfigurationError,
    GeminiBatchBackend,
    OpenAIBatchBackend,
)

__all__ = ["BatchJobMixin", "batch_backend_for"]

_OPENAI = ("OpenAI", "AzureOpenAI", "OpenAILike")
_GEMINI = ("GoogleGenAI", "Gemini")


def _model(llm: Any) -> str | None:
    name = getattr(llm, "model", None) or getattr(
        getattr(llm, "metadata", None), "model_name", None
    )
    return str(name).removeprefix("models/") if name else None


def batch_backend_for(llm: Any, long_context_llm: Any) -> Any:
    """The batch backend serving both LLMs (one provider).

    Raises:
        ConfigurationError: The LLMs' provider has no batch backend here, or they differ.
    """
    kind, lc_kind = type(llm).__name__, type(long_context_llm).__name__
    family = "openai" if kind in _OPENAI else "gemini" if kind in _GEMINI else None
    lc_family = "openai" if lc_kind in _OPENAI else "gemini" if lc_kind in _GEMINI else None
    if family is None:
        raise ConfigurationError(
            f"{kind} has no batch API backend in selfroute: batch jobs support the LlamaIndex "
            "OpenAI LLM (OpenAI Batch API, or a compatible server with /v1/files and "
            "/v1/batches) and GoogleGenAI (Gemini batch mode); pass backend= for another provider"
        )
    if lc_family != family:
        raise ConfigurationError(
            f"the RAG LLM ({kind}) and the long-context LLM ({lc_kind}) are served by different "
            "providers; one batch job runs on one provider -- pass backend="
        )
    rag = _model(llm)
    if not rag:
        raise ConfigurationError("the RAG LLM has no model name to put in batch requests")
    options: dict[str, Any] = {}
    if getattr(llm, "temperature", None) is not None:
        options["temperature"] = llm.temperature
    if family == "openai":
        if getattr(llm, "max_tokens", None) is not None:
            options["max_tokens"] = llm.max_tokens
        return OpenAIBatchBackend(
            rag,
            long_context_model=_model(long_context_llm),
            base_url=getattr(llm, "api_base", None),
            api_key=getattr(llm, "api_key", None),
            options=options,
        )
    return GeminiBatchBackend(
        rag,
        long_context_model=_model(long_context_llm),
        api_key=getattr(llm, "api_key", None),
        options=options,
    )


class BatchJobMixin:
    """Adds :meth:`batch_job` to :class:`~llamaindex_selfroute.SelfRouteQueryEngine`."""

    def batch_job(self, inputs: Iterable[Any], *, backend: Any = None, **options: Any) -> BatchJob:
        """Answer many questions through the provider's batch API (half the price, within 24 h).

        Phase 1 sends every RAG prompt as one batch, phase 2 the long-context prompts of the
        questions that declined; retrieval runs locally with the engine's retriever. Nothing is
        sent until the handle's ``status()``, ``wait()`` or ``results()`` (or ``astatus()``,
        ``wait_async()``, ``aresults()``) is called.

        Args:
            inputs: Questions, or ``{"question": ..., "id": ...}`` dicts.
            backend: The batch backend; by default the one for the engine's LLMs.
            **options: :class:`selfroute.BatchJob` settings: ``job_file`` (rerunning with the
                same file resumes), ``poll_interval_s``, ``max_poll_interval_s``,
                ``max_attempts``, ``on_event``.

        Returns:
            The job handle; its results are :class:`selfroute.BatchOutcome`.
        """
        from llama_index.core.schema import QueryBundle

        engine: Any = self
        chosen = backend
        if chosen is None:
            chosen = batch_backend_for(engine.llm, engine.long_context_llm)

        def handler(item: BatchItem) -> Any:
            return engine._handler(QueryBundle(item.question))

        return BatchJob(inputs, handler=handler, backend=chosen, config=engine.config, **options)
