"""``SelfRoute.batch_job``: many questions through a provider batch API.

Kept apart from the ``Runnable`` (a mixin the class inherits) so the batch plumbing does not tangle
with the output types. The core's :class:`selfroute.BatchJob` does the work; this module only
builds the per-question handler from the Runnable's settings and picks the backend for the
chat model (``ChatOpenAI``: OpenAI Batch API; ``ChatGoogleGenerativeAI``: Gemini batch mode).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langchain_core.runnables import RunnableConfig, ensure_config

from langchain_selfroute._handlers import model_name, unwrap
from langchain_selfroute._input import parse_input
from selfroute import (
    BatchItem,
    BatchJob,
    ConfigurationError,
    GeminiBatchBackend,
    OpenAIBatchBackend,
)

__all__ = ["BatchJobMixin", "batch_backend_for"]


def _secret(value: Any) -> str | None:
    if value is None:
        return None
    get = getattr(value, "get_secret_value", None)
    return str(get() if callable(get) else value)


def _provider(llm: Any) -> tuple[str, Any]:
    inner = unwrap(llm)
    name = type(inner).__name__
    if name in ("ChatOpenAI", "AzureChatOpenAI"):
        return "openai", inner
    if name == "ChatGoogleGenerativeAI":
        return "gemini", inner
    return name, inner


def batch_backend_for(llm: Any, long_context_llm: Any) -> Any:
    """The batch backend serving ``llm`` and ``long_context_llm`` (one provider for both).

    Raises:
        ConfigurationError: The models' provider has no batch backend here, or the two models
            are served by different providers.
    """
    kind, inner = _provider(llm)
    lc_kind, _ = _provider(long_context_llm)
    if kind not in ("openai", "gemini"):
        raise ConfigurationError(
            f"{kind} has no batch API backend in selfroute: batch jobs support ChatOpenAI "
            "(OpenAI Batch API, or a compatible server with /v1/files and /v1/batches) and "
            "ChatGoogleGenerativeAI (Gemini batch mode); pass backend= for another provider"
        )
    if lc_kind != kind:
        raise ConfigurationError(
            f"the RAG model ({kind}) and the long-context model ({lc_kind}) are served by "
            "different providers; one batch job runs on one provider -- pass backend="
        )
    rag, lc = model_name(llm), model_name(long_context_llm)
    if not rag:
        raise ConfigurationError("the RAG model has no model name to put in batch requests")
    if kind == "openai":
        options: dict[str, Any] = {}
        if getattr(inner, "temperature", None) is not None:
            options["temperature"] = inner.temperature
        if getattr(inner, "max_tokens", None) is not None:
            options["max_completion_tokens"] = inner.max_tokens
        return OpenAIBatchBackend(
            rag,
            long_context_model=lc,
            base_url=getattr(inner, "openai_api_base", None),
            api_key=_secret(getattr(inner, "openai_api_key", None)),
            options=options,
        )
    options = {}
    if getattr(inner, "temperature", None) is not None:
        options["temperature"] = inner.temperature
    base = getattr(inner, "base_url", None)
    return GeminiBatchBackend(
        rag,
        long_context_model=lc,
        api_key=_secret(getattr(inner, "google_api_key", None)),
        base_url=base if isinstance(base, str) else None,
        options=options,
    )


class BatchJobMixin:
    """Adds :meth:`batch_job` to :class:`~langchain_selfroute.SelfRoute`."""

    def batch_job(
        self,
        inputs: Iterable[Any],
        *,
        backend: Any = None,
        config: RunnableConfig | None = None,
        **options: Any,
    ) -> BatchJob:
        """Answer many questions through the provider's batch API (half the price, within 24 h).

        Phase 1 sends every RAG prompt as one batch, phase 2 the long-context prompts of the
        questions that declined; retrieval runs locally. Nothing is sent until the handle's
        :meth:`~selfroute.BatchJob.status`, :meth:`~selfroute.BatchJob.wait` or
        :meth:`~selfroute.BatchJob.results` (or their async twins) is called.

        Args:
            inputs: Questions or ``{"question": ..., "document": ..., "id": ...}`` dicts.
            backend: The batch backend; by default the one for ``llm`` (ChatOpenAI or
                ChatGoogleGenerativeAI, with the same base URL and key).
            config: Runnable config passed to the retriever and loaders.
            **options: :class:`selfroute.BatchJob` settings: ``job_file`` (rerunning with the
                same file resumes), ``poll_interval_s``, ``max_poll_interval_s``,
                ``max_attempts``, ``on_event``.

        Returns:
            The job handle; its results are :class:`selfroute.BatchOutcome` (a
            :class:`selfroute.RouteResult` or an error per question).
        """
        route: Any = self
        run_config = ensure_config(config)
        chosen = backend if backend is not None else batch_backend_for(route.llm, route._lc_llm)

        def handler(item: BatchItem) -> Any:
            value = item.payload if item.payload is not None else item.question
            _, per_call, _ = parse_input(value, route.question_key)
            return route._handler(per_call, run_config, None)

        return BatchJob(inputs, handler=handler, backend=chosen, config=route.config, **options)
