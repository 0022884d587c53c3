"""``SelfRouteQueryEngine``: Self-Route as a LlamaIndex query engine.

The engine only wires LlamaIndex objects to the core: :func:`selfroute.flow.self_route_flow`
decides, :class:`~llamaindex_selfroute.LlamaIndexHandler` translates each step into a LlamaIndex call.
``query`` runs the sync driver, ``aquery`` the async one (nothing blocking on the event loop), and
``streaming=True`` streams through the drivers' sentinel sniffing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.response.schema import (
    RESPONSE_TYPE,
    AsyncStreamingResponse,
    StreamingResponse,
)
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.callbacks.schema import CBEventType, EventPayload
from llama_index.core.llms import LLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
from llama_index.core.settings import Settings
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore, MetadataFilters
from llama_index_instrumentation import get_dispatcher

from llamaindex_selfroute._batch import BatchJobMixin
from llamaindex_selfroute._constructors import EngineConstructors
from llamaindex_selfroute._handlers import (
    LlamaIndexHandler,
    configured_model_name,
)
from llamaindex_selfroute._parents import (
    AsyncLongContextFn,
    LongContextSource,
    long_context_source,
)
from llamaindex_selfroute._prompts import prompts_to_templates, update_prompts
from llamaindex_selfroute._response import (
    ABSTENTION_MESSAGES,
    RESULT_KEY,
    RESULT_OBJECT_KEY,
    SelfRouteResponse,
    StreamText,
    astream_text,
    get_route_result,
    response_of,
    stream_text,
)
from llamaindex_selfroute._structured import structured_support
from selfroute import ConfigurationError, Prompts, RouteConfig, VerdictMode
from selfroute._redact import register_model_secrets
from selfroute._settings import document_settings
from selfroute.flow import (
    adrive,
    arun_flow,
    drive,
    run_flow,
    self_route_flow,
    structured_unsupported,
    validate_question,
)

__all__ = [
    "ABSTENTION_MESSAGES",
    "RESULT_KEY",
    "RESULT_OBJECT_KEY",
    "SelfRouteQueryEngine",
    "SelfRouteResponse",
    "get_route_result",
]

#: The engine's instrumentation dispatcher (its result and route events are fired by
#: :mod:`llamaindex_selfroute._response` through it).
dispatcher = get_dispatcher(__name__)


def _build_config(
    config_class: type[RouteConfig],
    config: RouteConfig | None,
    prompts: Prompts | None,
    long_context_llm: LLM,
    long_context_window: int | Literal["auto"] | None,
    settings: dict[str, Any],
) -> RouteConfig:
    # the keyword settings are the declared fields of the config (RouteConfig's, or a subclass's)
    fields = {f.name for f in dataclasses.fields(config_class if config is None else config)}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise ConfigurationError(
            f"unknown SelfRouteQueryEngine argument(s) {unknown}; RouteConfig settings are "
            f"{sorted(fields)}"
        )
    cfg = config or config_class()
    changes = dict(settings)
    if prompts is not None:
        changes["prompts"] = prompts
    if long_context_window == "auto":
        if cfg.long_context_window is None and "long_context_window" not in changes:
            window = getattr(getattr(long_context_llm, "metadata", None), "context_window", None)
            if isinstance(window, int) and not isinstance(window, bool) and window > 0:
                changes["long_context_window"] = window
    else:
        changes["long_context_window"] = long_context_window
    if cfg.long_context_model is None and "long_context_model" not in changes:
        changes["long_context_model"] = configured_model_name(long_context_llm)
    return dataclasses.replace(cfg, **changes) if changes else cfg


class SelfRouteQueryEngine(BatchJobMixin, EngineConstructors, BaseQueryEngine):
    """Self-Route as a LlamaIndex query engine: answer from the top-k chunks, or fall back.

    The RAG-step LLM gets the top-``k`` chunks and writes an answer or the sentinel
    (``unanswerable``); only then does the long-context LLM read the whole source documents.

    Args:
        retriever: Any LlamaIndex retriever (``index.as_retriever(...)`` or your own).
        llm: The RAG-step LLM (default ``Settings.llm``).
        long_context_llm: The long-context LLM (default: ``llm``). A cheap+strong pair is the
            usual setup.
        long_context: The long context: ``None`` (default) loads the parent documents of the
            retrieved nodes from the retriever's docstore/vector store under the retriever's
            filters; a string, ``Document`` or list of them is used for every question; a
            function ``f(question, nodes) -> documents | None`` decides per question.
        along_context: Async twin of a ``long_context`` function, used by ``aquery``.
        docstore: Docstore holding the original documents (default: the retriever's).
        vector_store: Vector store to rebuild documents from (default: the retriever's).
        filters: Metadata filters applied when loading parents (default: the retriever's).
        config: A :class:`selfroute.RouteConfig`; keyword settings below override its fields.
        prompts: The prompts (also replaceable with ``engine.update_prompts``).
        streaming: Return ``StreamingResponse`` / ``AsyncStreamingResponse``.
        node_postprocessors: Applied to the retrieved nodes (rerankers, cut-offs).
        metadata_mode: How node metadata goes into the RAG prompt (default: text only).
        long_context_window: The LC window in tokens for fitting; ``"auto"`` (default) uses
            ``long_context_llm.metadata.context_window``; ``None`` sends documents unfitted.
        retraction_text: Streamed after text that is withdrawn (a retracted RAG answer before
            the long-context answer, or shown text before "Not found in the documents.").
        llm_kwargs: Extra keyword arguments for every LLM call.
        callback_manager: Callback manager (default ``Settings.callback_manager``).
        **settings: :class:`selfroute.RouteConfig` fields: ``k``, ``strict``, ``answer_tokens``,
            ``overflow``, ``chunk_words``, ``on_rag_error``, ``on_retrieval_error``,
            ``counterfactual``, ``prices``, ``budget``, ``token_counter``,
            ``max_question_tokens``, ``retrieval_timeout_s`` (seconds per store call),
            ``deadline_s`` (the whole query's time limit), and the routing
            policies: ``verdict`` (``"sentinel"``, ``"structured"``: a tool call on a
            function-calling ``llm``, ``"auto"``: a tool call when ``llm`` can), ``k_ladder``
            (larger retrievals before long context; the retriever must return that many),
            ``pre_route`` (a :class:`selfroute.PreRoute`: skip the RAG step for global questions
            or weak retrieval), ``grounded`` (answers quote their support, checked before
            they are shown; an unsupported long-context answer abstains) and
            ``speculate_below`` (start the long-context call alongside the RAG step when the
            best node scores under it); streaming: ``stream_hold_chars`` (hold the RAG answer
            until its first sentence, or that many characters, reads as an answer); and
            ``decline_detector`` (your own decline detection beside the rules:
            ``detector(text, question)`` returns ``True`` for a decline the rules missed; see
            :data:`selfroute.DeclineDetector`); ``tracing`` (OpenTelemetry spans of every
            query: ``True`` for the global tracer provider, or a ``TracerProvider``; see
            ``docs/tracing.md``).

    Raises:
        ConfigurationError: An unknown setting or an invalid value (also ``verdict="structured"``
            with an ``llm`` that cannot call tools).
    """

    #: The config class whose fields ``**settings`` are (``RouteConfig``, or a subclass declared
    #: the same way); a subclass without a docstring of its own that sets it gets this one,
    #: with the help line of each setting this text does not name.
    _config_class: ClassVar[type[RouteConfig]] = RouteConfig

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None and cls._config_class is not RouteConfig:
            cls.__doc__ = document_settings(SelfRouteQueryEngine.__doc__, cls._config_class)

    def __init__(
        self,
        retriever: BaseRetriever,
        llm: LLM | None = None,
        long_context_llm: LLM | None = None,
        *,
        long_context: Any = None,
        along_context: AsyncLongContextFn | None = None,
        docstore: BaseDocumentStore | None = None,
        vector_store: BasePydanticVectorStore | None = None,
        filters: MetadataFilters | None = None,
        config: RouteConfig | None = None,
        prompts: Prompts | None = None,
        streaming: bool = False,
        node_postprocessors: Sequence[BaseNodePostprocessor] | None = None,
        metadata_mode: MetadataMode = MetadataMode.NONE,
        long_context_window: int | Literal["auto"] | None = "auto",
        retraction_text: str = "\n\n",
        llm_kwargs: dict[str, Any] | None = None,
        callback_manager: CallbackManager | None = None,
        **settings: Any,
    ) -> None:
        if not isinstance(retriever, BaseRetriever):
            raise ConfigurationError(
                f"retriever must be a LlamaIndex BaseRetriever, got {type(retriever).__name__}"
            )
        self._retriever = retriever
        self._llm = llm or Settings.llm
        self._long_context_llm = long_context_llm or self._llm
        for name, value in (("llm", self._llm), ("long_context_llm", self._long_context_llm)):
            if not isinstance(value, LLM):
                raise ConfigurationError(
                    f"{name} must be a LlamaIndex LLM, got {type(value).__name__}"
                )
            register_model_secrets(value)  # a key of any shape passed in code is masked too
        if config is not None and not isinstance(config, RouteConfig):
            raise ConfigurationError(f"config must be a selfroute.RouteConfig, got {config!r}")
        self._config = _build_config(
            self._config_class,
            config,
            prompts,
            self._long_context_llm,
            long_context_window,
            settings,
        )
        if self._config.verdict is VerdictMode.STRUCTURED:
            why = structured_support(self._llm)
            if why is not None:
                structured_unsupported(True, why)
        self._long_context = long_context_source(
            retriever, long_context, along_context, docstore, vector_store, filters
        )
        self._streaming = bool(streaming)
        self._node_postprocessors = list(node_postprocessors or [])
        self._metadata_mode = MetadataMode(metadata_mode)
        self._retraction_text = retraction_text
        self._llm_kwargs = dict(llm_kwargs or {})
        self._init_args = {
            "llm": llm,
            "long_context_llm": long_context_llm,
            "long_context": long_context,
            "along_context": along_context,
            "docstore": docstore,
            "vector_store": vector_store,
            "streaming": streaming,
            "node_postprocessors": node_postprocessors,
            "metadata_mode": metadata_mode,
            "retraction_text": retraction_text,
            "llm_kwargs": llm_kwargs,
        }
        super().__init__(callback_manager=callback_manager or Settings.callback_manager)

    def with_retriever(self, retriever: BaseRetriever) -> SelfRouteQueryEngine:
        """A copy using ``retriever`` (e.g. with per-tenant filters); parents follow its filters.

        Docstore and vector store given explicitly are kept; filters always come from the new
        retriever.
        """
        args = dict(self._init_args, llm=self._llm, long_context_llm=self._long_context_llm)
        return type(self)(
            retriever,
            config=self._config,
            callback_manager=self.callback_manager,
            long_context_window=self._config.long_context_window,
            **args,
        )

    # -- properties ------------------------------------------------------------------------
    @property
    def retriever(self) -> BaseRetriever:
        """The retriever."""
        return self._retriever

    @property
    def llm(self) -> LLM:
        """The RAG-step LLM."""
        return self._llm

    @property
    def long_context_llm(self) -> LLM:
        """The long-context LLM."""
        return self._long_context_llm

    @property
    def config(self) -> RouteConfig:
        """The flow settings."""
        return self._config

    @property
    def long_context_source(self) -> LongContextSource | None:
        """Where the long context comes from (``None``: nowhere)."""
        return self._long_context

    # -- prompts -----------------------------------------------------------------------------
    def _get_prompts(self) -> PromptDictType:
        return prompts_to_templates(self._config.prompts)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    def _update_prompts(self, prompts_dict: PromptDictType) -> None:
        prompts = update_prompts(self._config.prompts, dict(prompts_dict))
        self._config = dataclasses.replace(self._config, prompts=prompts)

    # -- retrieval only ----------------------------------------------------------------------
    def _handler(self, query_bundle: QueryBundle | None = None) -> LlamaIndexHandler:
        return LlamaIndexHandler(
            retriever=self._retriever,
            llm=self._llm,
            long_context_llm=self._long_context_llm,
            long_context=self._long_context,
            node_postprocessors=self._node_postprocessors,
            metadata_mode=self._metadata_mode,
            query_bundle=query_bundle,
            llm_kwargs=self._llm_kwargs,
        )

    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The nodes the RAG step would see (retriever + postprocessors, first ``k``)."""
        bundle = QueryBundle(query_bundle) if isinstance(query_bundle, str) else query_bundle
        nodes = self._handler(bundle).retrieve_nodes(bundle.query_str.strip())
        return nodes[: self._config.k]

    async def aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """Async :meth:`retrieve`."""
        bundle = QueryBundle(query_bundle) if isinstance(query_bundle, str) else query_bundle
        nodes = await self._handler(bundle).aretrieve_nodes(bundle.query_str.strip())
        return nodes[: self._config.k]

    def as_tool(
        self,
        *,
        name: str = "selfroute_search",
        description: str | None = None,
        return_direct: bool = False,
    ) -> Any:
        """This engine as an agent tool (:func:`~llamaindex_selfroute.create_selfroute_tool`):
        the agent reads the answer, or a "NOT FOUND" note when the engine abstained."""
        from llamaindex_selfroute._tool import DEFAULT_TOOL_DESCRIPTION, create_selfroute_tool

        return create_selfroute_tool(
            self,
            name=name,
            description=description or DEFAULT_TOOL_DESCRIPTION,
            return_direct=return_direct,
        )

    # -- querying ----------------------------------------------------------------------------
    def _stream_texts(self, metadata: dict[str, Any], question: str) -> StreamText:
        return StreamText(metadata, self._retraction_text, config=self._config, question=question)

    def _query(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        question = validate_question(query_bundle.query_str)
        handler = self._handler(query_bundle)
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as query_event:
            flow = self_route_flow(question, self._config)
            response: RESPONSE_TYPE
            if self._streaming:
                nodes = handler.prefetch(question)
                metadata: dict[str, Any] = {}
                response = StreamingResponse(
                    response_gen=stream_text(
                        drive(flow, handler, stream=True), self._stream_texts(metadata, question)
                    ),
                    source_nodes=nodes[: self._config.k],
                    metadata=metadata,
                )
            else:
                response = response_of(run_flow(flow, handler))
            query_event.on_end(payload={EventPayload.RESPONSE: response})
        return response

    async def _aquery(self, query_bundle: QueryBundle) -> RESPONSE_TYPE:
        question = validate_question(query_bundle.query_str)
        handler = self._handler(query_bundle)
        with self.callback_manager.event(
            CBEventType.QUERY, payload={EventPayload.QUERY_STR: query_bundle.query_str}
        ) as query_event:
            flow = self_route_flow(question, self._config)
            response: RESPONSE_TYPE
            if self._streaming:
                nodes = await handler.aprefetch(question)
                metadata: dict[str, Any] = {}
                response = AsyncStreamingResponse(
                    response_gen=astream_text(
                        adrive(flow, handler, stream=True), self._stream_texts(metadata, question)
                    ),
                    source_nodes=nodes[: self._config.k],
                    metadata=metadata,
                )
            else:
                response = response_of(await arun_flow(flow, handler))
            query_event.on_end(payload={EventPayload.RESPONSE: response})
        return response


# A setting declared since the docstring was written gets its declared help line.
SelfRouteQueryEngine.__doc__ = document_settings(SelfRouteQueryEngine.__doc__, RouteConfig)
