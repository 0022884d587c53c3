"""``SelfRoute``: Self-Route as a LangChain ``Runnable``.

The class holds the settings and turns one input into the core's flow and a
:class:`~langchain_selfroute.LangChainHandler` (:meth:`SelfRoute._start`); the ``Runnable``
surface (invoke, batch, stream) is :class:`~langchain_selfroute._base.RouteRunnable`, the input
forms :mod:`langchain_selfroute._input`, the constructors over a vector store
:class:`~langchain_selfroute._constructors.StoreConstructors`, ``batch_job``
:class:`~langchain_selfroute._batch.BatchJobMixin`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.documents import Document
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, InstanceOf, PrivateAttr, ValidationError

from langchain_selfroute._base import RouteRunnable
from langchain_selfroute._batch import BatchJobMixin
from langchain_selfroute._constructors import StoreConstructors
from langchain_selfroute._handlers import (
    LangChainHandler,
    LongContextPlan,
    as_documents,
    build_index,
    model_name,
    model_window,
    retriever_k,
)
from langchain_selfroute._input import (
    DOCUMENT_KEY,
    QUESTION_KEYS,
    SelfRouteInput,
    SelfRouteInputDict,
    parse_input,
)
from langchain_selfroute._settings import settings_model
from selfroute import (
    ConfigurationError,
    InvalidInputError,
    LexicalIndex,
    Prompts,
    RouteConfig,
    RouteResult,
    Stage,
)
from selfroute._redact import register_model_secrets
from selfroute._settings import adapter_settings, document_settings
from selfroute.flow import Step, self_route_flow

__all__ = [
    "DOCUMENT_KEY",
    "QUESTION_KEYS",
    "ROUTE_CONFIG_SETTINGS",
    "LongContextSource",
    "SelfRoute",
    "SelfRouteInput",
    "SelfRouteInputDict",
]

LongContextSource = Literal["auto", "fixed", "input", "parents"]

#: The settings handed to :class:`selfroute.RouteConfig` as they are (same names); ``k``,
#: ``prompts``/``sentinel``, ``long_context_window`` and ``long_context_model`` are resolved first.
#: Derived from the fields' declarations (:func:`selfroute._settings.adapter_settings`).
ROUTE_CONFIG_SETTINGS = adapter_settings(RouteConfig)


class _SelfRouteFields(RouteRunnable):
    """``SelfRoute``'s own fields; the route settings are added from their declarations."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    #: The config class whose adapter settings are fields (set by ``settings_model``).
    _config_class: ClassVar[type[RouteConfig]] = RouteConfig

    retriever: Runnable[Any, Any] | None = None
    llm: Runnable[Any, Any]
    long_context_llm: Runnable[Any, Any] | None = None
    k: int = 5
    document: Any = None
    long_context: LongContextSource = "auto"
    parent_loader: Callable[..., Any] | None = None
    aparent_loader: Callable[..., Awaitable[Any]] | None = None
    id_key: str = "doc_id"
    prompts: InstanceOf[Prompts] | None = None
    sentinel: str | None = None
    long_context_window: int | Literal["auto"] | None = "auto"
    long_context_model: str | None = None
    question_key: str | None = None


# The adapter settings (strict, ..., tracing) as pydantic fields, derived from RouteConfig's
# declarations (langchain_selfroute._settings); a type checker sees SelfRoute's own fields.
if TYPE_CHECKING:
    _RouteSettings = _SelfRouteFields
else:
    _RouteSettings = settings_model(_SelfRouteFields, RouteConfig, name="RouteSettings")


class SelfRoute(BatchJobMixin, StoreConstructors, _RouteSettings):
    """Self-Route (Li et al., EMNLP 2024) as a LangChain ``Runnable``.

    Retrieves the top-``k`` chunks and asks ``llm`` to answer from them or write the sentinel
    ("unanswerable"); only when it declines, answers again with ``long_context_llm`` over the whole
    long context. The routing is the ``selfroute`` core's; this class translates its steps into
    LangChain calls, each a child run (tags ``selfroute:retrieve``, ``selfroute:rag``,
    ``selfroute:long_context``, ``selfroute:parents``).

    Input: a question string, or ``{"question": ..., "document": ...}`` where ``document`` (a
    string, a ``Document`` or a list of them) is this call's long context; the question may be
    under ``input``/``query``/``messages`` instead (see ``question_key``), and other keys pass
    through to the output, as with ``create_retrieval_chain``. Messages and ``PromptValue``
    inputs give their last human message.

    Output: :class:`~langchain_selfroute.SelfRouteOutput`, a ``dict`` with typed attributes
    (``stream`` yields :class:`~langchain_selfroute.SelfRouteChunk` dicts that add up to it;
    :meth:`answer_only` gives a string-output form).

    Where the long context comes from (``long_context``):

    * ``"auto"`` (default): the per-call ``document`` if the input has one, else ``document``
      given here, else the parent documents of the retrieved chunks (needs ``parent_loader``).
    * ``"fixed"``: always ``document`` given here.
    * ``"input"``: always the per-call ``document`` (required in every input).
    * ``"parents"``: always the parents of the retrieved chunks, loaded by ``parent_loader`` with
      the retriever's metadata filter (see :meth:`from_documents`).

    Args:
        retriever: Any retriever (``BaseRetriever``, or a runnable returning ``Document`` lists).
            ``None`` ranks the 300-word chunks of the long context with BM25 (needs a fixed or
            per-call document).
        llm: The RAG-step model (any chat model or LLM runnable).
        long_context_llm: The long-context model; defaults to ``llm``. A cheap ``llm`` plus a
            strong ``long_context_llm`` is a first-class setup.
        k: Chunks to retrieve (5 in the paper). Passed per call to vector-store retrievers;
            when not given, a vector-store retriever's own ``search_kwargs["k"]`` holds.
        document: A fixed long context.
        long_context: ``auto``, ``fixed``, ``input`` or ``parents`` (see above).
        parent_loader: ``loader(chunks) -> parent Documents`` (most relevant first). A loader that
            takes a ``filter`` keyword receives the retriever's ``search_kwargs["filter"]``.
        aparent_loader: Async twin of ``parent_loader``.
        id_key: Metadata key holding a chunk's parent-document id.
        prompts: RAG and long-context prompt templates (:class:`selfroute.Prompts`).
        sentinel: The decline word, overriding ``prompts.sentinel``.
        strict: Only the sentinel counts as a decline (natural refusals are answers).
        long_context_window: The LC model's window in tokens. ``"auto"`` (default) reads
            ``max_input_tokens`` from the model's LangChain profile when it has one; ``None`` sends
            the long context unfitted.
        answer_tokens: Tokens reserved in the window for the answer.
        overflow: ``fill`` (keep the most relevant chunks), ``truncate_middle`` or ``error``.
        chunk_words: Chunk size for ``fill`` and for BM25 over the long context.
        on_rag_error: ``long_context`` (escalate when the RAG call fails) or ``raise``.
        on_retrieval_error: ``long_context`` (escalate when retrieval fails) or ``raise``.
        counterfactual: Count the always-LC counterfactual when the RAG step answers (loads the
            long context once more to count it; no model call).
        prices: Optional :class:`selfroute.PriceTable` for money.
        long_context_model: Model name used to price the counterfactual; defaults to the name
            configured on ``long_context_llm``.
        budget: Optional :class:`selfroute.LongContextBudget`.
        token_counter: Pre-call token counter (default: tiktoken ``o200k_base``, offline).
        max_question_tokens: Reject longer questions.
        retrieval_timeout_s: Give up on a retriever that does not answer within this many
            seconds and treat it as a retrieval failure (escalate or raise per
            ``on_retrieval_error``); it also bounds loading the parent documents.
        deadline_s: The whole call's time limit across every step (retrieval, both model
            calls, loading the long context, streaming); past it the call raises the stage's
            error, never escalates. ``None``: no limit.
        verdict: How the RAG step declines: ``sentinel`` (the paper's word, default),
            ``structured`` (an ``{answerable, answer}`` object through the chat model's
            ``with_structured_output``; a model without it is a configuration error) or ``auto``
            (structured output when the model has it, the sentinel otherwise).
        k_ladder: Larger retrievals to try, in order, before long context while the RAG step
            declines (``k=5, k_ladder=(20,)``). The retriever is asked once, for the largest.
        pre_route: A :class:`selfroute.PreRoute` that sends predictably futile questions
            (global questions, weak retrieval) straight to long context; ``None``: off.
        grounded: Ask both steps to quote their support and check the quotes: an unverified RAG
            answer escalates, an unverified long-context answer abstains.
        speculate_below: Start the long-context call alongside the RAG step when the best chunk's
            score (``score``/``relevance_score`` metadata) is under this; it is cancelled if the
            RAG step answers (its tokens are reported as a ``wasted`` step). ``None``: off.
        stream_hold_chars: Streaming: hold the RAG answer until the decline detector reads its
            first sentence (or this many characters) as an answer, so a decline that opens like
            an answer is not shown and then retracted; ``0`` (default): off.
        decline_detector: Your own decline detection beside selfroute's rules:
            ``detector(text, question)`` is asked about each answer the rules accept (the RAG
            answer, and the long-context one) and returns ``True`` for a decline. It adds
            declines, never removes one. See :data:`selfroute.DeclineDetector`.
        tracing: OpenTelemetry spans of every call (OpenInference conventions, for Phoenix,
            Langfuse and other OTLP backends): ``True`` uses the global tracer provider, a
            ``TracerProvider`` that one; ``False`` (default): off. LangSmith runs are unchanged.
            See ``docs/tracing.md``.
        question_key: The input key holding the question; ``None`` (default) takes the first of
            ``question``, ``input``, ``query`` and ``messages`` present. A message list or a
            ``PromptValue`` there (or as the whole input) gives its last human message. The input
            keys (except ``document``) pass through to the output.

    Example:
        >>> route = SelfRoute(retriever=retriever, llm=ChatOpenAI(model="gpt-4o-mini"))  # doctest: +SKIP
        >>> out = route.invoke("Who kept the lamp?")  # doctest: +SKIP
        >>> out.answer, out.route, out.token_ratio  # doctest: +SKIP
    """

    _pass_k: bool = PrivateAttr(default=True)
    _route_config: RouteConfig = PrivateAttr()
    _documents: tuple[Document, ...] | None = PrivateAttr(default=None)
    _index: LexicalIndex | None = PrivateAttr(default=None)
    _index_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigurationError(f"invalid SelfRoute settings: {exc}") from exc
        for model in (self.llm, self.long_context_llm):
            register_model_secrets(model)  # a key of any shape passed in code is masked too
        own_k = retriever_k(self.retriever)
        # The retriever's own search_kwargs["k"] holds unless k= is given (or a k-ladder needs
        # to ask for more).
        config = self._build_config()
        self._pass_k = own_k is None or "k" in self.model_fields_set or bool(config.k_ladder)
        if own_k is not None and not self._pass_k:
            config = dataclasses.replace(config, k=own_k)
        self._route_config = config
        if self.document is not None:
            self._documents = tuple(as_documents(self.document, "document"))
        self._check_sources()

    # configuration ----------------------------------------------------------------------------
    def _build_config(self) -> RouteConfig:
        prompts = self.prompts or Prompts()
        if self.sentinel is not None:
            prompts = dataclasses.replace(prompts, sentinel=self.sentinel)
        window = self.long_context_window
        if window == "auto":
            window = model_window(self._lc_llm)
        return self._config_class(
            k=self.k,
            prompts=prompts,
            long_context_window=window,
            long_context_model=self.long_context_model or model_name(self._lc_llm),
            **{name: getattr(self, name) for name in adapter_settings(self._config_class)},
        )

    def _check_sources(self) -> None:
        if not self.id_key:
            raise ConfigurationError("id_key must be a non-empty string")
        if self.long_context == "fixed" and self.document is None:
            raise ConfigurationError("long_context='fixed' needs document=... (the long context)")
        if self.long_context == "parents":
            if self.parent_loader is None and self.aparent_loader is None:
                raise ConfigurationError(
                    "long_context='parents' needs parent_loader= (or build with "
                    "SelfRoute.from_documents/from_vectorstore, which set one up)"
                )
            if self.retriever is None:
                raise ConfigurationError("long_context='parents' needs a retriever")

    @property
    def config(self) -> RouteConfig:
        """The core :class:`selfroute.RouteConfig` these settings build."""
        return self._route_config

    @property
    def _lc_llm(self) -> Runnable[Any, Any]:
        return self.long_context_llm if self.long_context_llm is not None else self.llm

    # per-call plumbing ------------------------------------------------------------------------
    def _plan(self, per_call: Any) -> LongContextPlan:
        mode = self.long_context
        if per_call is not None and mode in ("fixed", "parents"):
            raise InvalidInputError(
                f"this SelfRoute takes its long context from {mode!r}; remove 'document' from the "
                "input or use long_context='auto' or 'input'"
            )
        if per_call is None and mode == "input":
            raise InvalidInputError(
                "long_context='input' needs a 'document' in every input: "
                "{'question': ..., 'document': ...}"
            )
        documents: tuple[Document, ...] | None = None
        index: Callable[[], LexicalIndex] | None = None
        if per_call is not None:
            documents = tuple(as_documents(per_call, "input 'document'"))
            if self.retriever is None:
                docs = documents

                def index() -> LexicalIndex:
                    return build_index(
                        docs, chunk_words=self.config.chunk_words, id_key=self.id_key
                    )

        elif mode in ("auto", "fixed") and self._documents is not None:
            documents = self._documents
            index = self._fixed_index
        if self.retriever is None and documents is None:
            raise InvalidInputError(
                "this SelfRoute has no retriever and no document to search; give "
                "{'question': ..., 'document': ...}, or document=/retriever= when building it"
            )
        has_loader = self.parent_loader is not None or self.aparent_loader is not None
        return LongContextPlan(
            documents=documents,
            parent_loader=self.parent_loader,
            aparent_loader=self.aparent_loader,
            use_parents=documents is None and has_loader,
            index=index if self.retriever is None else None,
        )

    def _fixed_index(self) -> LexicalIndex:
        with self._index_lock:
            if self._index is None:
                assert self._documents is not None
                self._index = build_index(
                    self._documents, chunk_words=self.config.chunk_words, id_key=self.id_key
                )
            return self._index

    def _handler(
        self,
        per_call: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun | None,
    ) -> LangChainHandler:
        return LangChainHandler(
            retriever=self.retriever,
            llm=self.llm,
            long_context_llm=self._lc_llm,
            plan=self._plan(per_call),
            config=config,
            run_manager=run_manager,
            id_key=self.id_key,
            names={
                Stage.RAG: model_name(self.llm, config),
                Stage.LONG_CONTEXT: model_name(self._lc_llm, config),
            },
            pass_k=self._pass_k,
        )

    def _call_config(self, config: RunnableConfig) -> RouteConfig:
        """The route config of one call: the counterfactual is priced with the long-context
        model this call's config selects (``configurable_fields``/``configurable_alternatives``)."""
        base = self._route_config
        if self.long_context_model is not None:
            return base
        name = model_name(self._lc_llm, config)
        if name is None or name == base.long_context_model:
            return base
        return dataclasses.replace(base, long_context_model=name)

    def _start(
        self,
        value: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun,
    ) -> tuple[Generator[Step, Any, RouteResult], LangChainHandler, dict[str, Any]]:
        question, per_call, passthrough = parse_input(value, self.question_key)
        handler = self._handler(per_call, config, run_manager)
        return self_route_flow(question, self._call_config(config)), handler, passthrough


# A setting declared since the docstring was written gets its declared help line.
SelfRoute.__doc__ = document_settings(SelfRoute.__doc__, RouteConfig)
