"""Step handlers: the core's steps translated into LangChain calls.

:class:`LangChainHandler` implements both the sync (``retrieve/generate/stream/load_long_context``)
and the async (``aretrieve/agenerate/astream/aload_long_context``) handler protocols of
:mod:`selfroute._flow`. It holds no routing logic: the core's flow decides what runs; this module
only calls the retriever, the chat models and the parent loader, each as a child run of the
:class:`~langchain_selfroute.SelfRoute` run (tagged ``selfroute:retrieve``, ``selfroute:rag``,
``selfroute:long_context`` and ``selfroute:parents``), and reads what the provider reported.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessageChunk, BaseMessage, BaseMessageChunk, HumanMessage
from langchain_core.messages.ai import add_usage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.config import patch_config, run_in_executor
from langchain_core.runnables.configurable import DynamicRunnable
from langchain_core.runnables.fallbacks import RunnableWithFallbacks
from langchain_core.utils._merge import merge_dicts
from langchain_core.vectorstores import VectorStoreRetriever

from langchain_selfroute._structured import ObjectDeltas, split_structured
from selfroute import (
    ConfigurationError,
    ContextDocument,
    Generation,
    InvalidInputError,
    LexicalIndex,
    Passage,
    Stage,
    Usage,
    chunk_text,
    document_id,
)
from selfroute._faults import INCOMPLETE, classified, normalize_finish_reason
from selfroute._structured_stream import complete_object
from selfroute.flow import (
    Generate,
    GenerationChunk,
    LoadLongContext,
    Retrieve,
    StructuredRequest,
    load_structured,
    structured_unsupported,
)

__all__ = [
    "TAG_LONG_CONTEXT",
    "TAG_NOSTREAM",
    "TAG_PARENTS",
    "TAG_RAG",
    "TAG_RETRIEVE",
    "LangChainHandler",
    "LongContextPlan",
    "as_documents",
    "build_index",
    "message_finish_reason",
    "message_model",
    "message_text",
    "message_usage",
    "model_name",
    "model_window",
    "retriever_filter",
    "retriever_k",
    "structured_generation",
    "structured_model",
    "unwrap",
]

#: Tag (and run name) of the RAG-step model call.
TAG_RAG = "selfroute:rag"
#: Tag (and run name) of the long-context model call.
TAG_LONG_CONTEXT = "selfroute:long_context"
#: LangGraph's tag for runs whose tokens ``stream_mode="messages"`` leaves out; the RAG-step model
#: run carries it (its text may be a decline: read SelfRoute's own stream instead).
TAG_NOSTREAM = "nostream"
#: Tag of the retriever call.
TAG_RETRIEVE = "selfroute:retrieve"
#: Tag (and run name) of the parent-document loader call.
TAG_PARENTS = "selfroute:parents"

ParentLoader = Callable[..., Any]


# --------------------------------------------------------------------------------------------
# Reading what LangChain objects carry
# --------------------------------------------------------------------------------------------
def unwrap(runnable: Any, config: RunnableConfig | None = None) -> Any:
    """The runnable under bindings (``bind``, ``with_retry``, ``with_config``), configurable
    wrappers (resolved with ``config``) and fallbacks (the primary)."""
    current = runnable
    for _ in range(32):
        if isinstance(current, RunnableBindingBase):
            current = current.bound
        elif isinstance(current, DynamicRunnable):
            current = current._prepare(config)[0] if config is not None else current.default
        elif isinstance(current, RunnableWithFallbacks):
            current = current.runnable
        else:
            break
    return current


def model_name(llm: Any, config: RunnableConfig | None = None) -> str | None:
    """The model name configured on a chat model (``model_name``/``model``), if any; with
    ``config``, of the model that config selects (``configurable_fields``)."""
    inner = unwrap(llm, config)
    for attr in ("model_name", "model", "model_id"):
        value = getattr(inner, attr, None)
        if isinstance(value, str) and value:
            return value.removeprefix("models/")
    return None


def model_window(llm: Any) -> int | None:
    """The model's input window from its LangChain model profile (``max_input_tokens``)."""
    profile = getattr(unwrap(llm), "profile", None)
    if isinstance(profile, dict):
        window = profile.get("max_input_tokens")
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            return window
    return None


def message_text(output: Any) -> str:
    """The text of a model output (a message, a message chunk or a string)."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        content = output.content  # what ``.text`` reads when it is a string, read directly
        return str(content) if isinstance(content, str) else str(output.text)
    raise ConfigurationError(
        f"the model returned {type(output).__name__}; expected a message or a string "
        "(llm must be a chat model or LLM, optionally wrapped with bind/with_retry/with_fallbacks)"
    )


def message_usage(output: Any) -> Usage | None:
    """Provider-reported usage from ``AIMessage.usage_metadata``; ``None`` when not reported."""
    meta = getattr(output, "usage_metadata", None)
    if not meta:
        return None
    input_tokens = int(meta.get("input_tokens") or 0)
    output_tokens = int(meta.get("output_tokens") or 0)
    if input_tokens == 0 and output_tokens == 0:
        return None  # a provider that fills zeros has reported nothing
    total = meta.get("total_tokens")
    details = meta.get("input_token_details") or {}
    cached = details.get("cache_read")
    extra = {
        key: dict(meta[key])
        for key in ("input_token_details", "output_token_details")
        if meta.get(key)
    }
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(total) if total else input_tokens + output_tokens,
        cached_input_tokens=int(cached) if cached is not None else None,
        source="provider",
        extra=extra,
    )


def message_model(output: Any) -> str | None:
    """The model name the provider reported (``response_metadata["model_name"]`` or ``model``)."""
    meta = getattr(output, "response_metadata", None) or {}
    for key in ("model_name", "model"):
        value = meta.get(key)
        if isinstance(value, str) and value:
            return value.removeprefix("models/")
    return None


#: ``response_metadata`` keys under which LangChain integrations put the finish reason.
_FINISH_KEYS = ("finish_reason", "stop_reason", "done_reason")


def message_finish_reason(output: Any, *, streamed: bool = False) -> str | None:
    """How the model call ended, from ``response_metadata`` (normalized: ``stop``, ``length``,
    ``content_filter`` ...).

    A streamed reply from a provider integration (``model_provider`` set) that carries no finish
    reason ended without its final chunk: ``incomplete``. ``None`` when nothing says (a model
    that reports no metadata).
    """
    meta = getattr(output, "response_metadata", None) or {}
    for key in _FINISH_KEYS:
        reason = normalize_finish_reason(meta.get(key))
        if reason is not None:
            return reason
    if streamed and meta.get("model_provider"):
        return INCOMPLETE
    return None


def _generation(output: Any, fallback_model: str | None, *, streamed: bool = False) -> Generation:
    return Generation(
        text=message_text(output),
        usage=message_usage(output),
        model=message_model(output) or fallback_model,
        finish_reason=message_finish_reason(output, streamed=streamed),
    )


# --------------------------------------------------------------------------------------------
# Structured verdicts
# --------------------------------------------------------------------------------------------
#: Model classes whose ``with_structured_output`` raised ``NotImplementedError`` (LangChain decides
#: that per class: a chat model without ``bind_tools``), and why; probed once per class.
_UNSUPPORTED: dict[type, str] = {}


def structured_model(
    llm: Any, request: StructuredRequest, config: RunnableConfig | None = None
) -> Runnable[Any, Any] | None:
    """``llm``'s chat model with structured output for ``request.schema`` (``include_raw=True``),
    or ``None`` when the model cannot give structured output.

    The model is taken from under bindings, configurable wrappers and fallbacks (:func:`unwrap`)
    and LangChain picks its default method for the provider (``json_schema`` for ``ChatOpenAI``
    and ``ChatGoogleGenerativeAI``, tool calling for models that only implement ``bind_tools``).

    Raises:
        ConfigurationError: The model cannot, and ``request.required`` (``verdict="structured"``).
    """
    inner = unwrap(llm, config)
    why = _UNSUPPORTED.get(type(inner))
    if why is None:
        build = getattr(inner, "with_structured_output", None)
        if build is None:
            why = f"{type(inner).__name__} has no with_structured_output (it is not a chat model)"
        else:
            try:
                runnable: Runnable[Any, Any] = build(dict(request.schema), include_raw=True)
            except NotImplementedError as exc:
                detail = str(exc).strip() or "not implemented"
                why = f"{type(inner).__name__}.with_structured_output: {detail}"
                _UNSUPPORTED[type(inner)] = why
            else:
                return runnable
    structured_unsupported(request.required, why)
    return None


def _as_mapping(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Mapping):
        return dict(value)
    dump = getattr(value, "model_dump", None)  # a pydantic object
    if callable(dump):
        dumped = dump()
        return dict(dumped) if isinstance(dumped, Mapping) else None
    return None


def _parse_failure(output: Any, raw: Any) -> str:
    """What went wrong when a structured call gave no object (for ``structured_error``)."""
    error = output.get("parsing_error") if isinstance(output, Mapping) else None
    if error is not None:
        return f"the model's structured output could not be parsed: {type(error).__name__}"
    if getattr(raw, "invalid_tool_calls", None):
        return "the model's tool call had invalid arguments"
    return "the model returned no structured object"


def structured_generation(output: Any, fallback_model: str | None) -> Generation:
    """A :class:`selfroute.Generation` from what ``with_structured_output(include_raw=True)``
    returned: ``{"raw": AIMessage, "parsed": dict | None, "parsing_error": ...}``.

    ``structured`` is the parsed object, else the object read from the raw text (a provider that
    returns JSON text, fenced or not). With neither, ``structured_error`` says so and ``text`` is
    the raw output: the core accepts a plain decline in it and fails safe to long context on
    anything else (a broken tool call, truncated JSON or prose must not pass for an answer).
    """
    if isinstance(output, Mapping) and "raw" in output:
        raw, parsed = output.get("raw"), output.get("parsed")
    elif isinstance(output, BaseMessage):
        raw, parsed = output, None
    else:  # a custom with_structured_output that ignores include_raw
        raw, parsed = None, output
    raw_text = message_text(raw) if isinstance(raw, (BaseMessage, str)) else ""
    obj = _as_mapping(parsed)
    error = None
    # LangChain's JSON parser repairs a cut-off object: the text must hold all of it
    content_json = raw_text.strip() and not getattr(raw, "tool_calls", None)
    if obj is not None and content_json and not complete_object(raw_text):
        obj, error = None, "the model's structured output is not a complete JSON object"
    if obj is not None:
        text = json.dumps(obj, ensure_ascii=False)
    else:
        obj = load_structured(raw_text) if error is None else None
        text = raw_text
        if obj is None and error is None:
            error = _parse_failure(output, raw)
    return Generation(
        text=text,
        usage=message_usage(raw),
        model=message_model(raw) or fallback_model,
        structured=obj,
        structured_error=error,
        finish_reason=message_finish_reason(raw),
    )


def _parsed(output: Any, merged: Any, error: Exception | None) -> Any:
    """What ``with_structured_output(include_raw=True)`` returns, for a streamed raw message."""
    if error is None:
        return output
    return {"raw": merged, "parsed": None, "parsing_error": error}


def streamed_structured(output: Any, merged: Any, fallback_model: str | None) -> GenerationChunk:
    """The closing piece of a streamed structured call: the object parsed by LangChain's
    parser, text, usage and model, and the finish reason read as a stream's (none at all:
    ``incomplete``, a cut-off object)."""
    gen = structured_generation(output, fallback_model)
    finish = message_finish_reason(merged, streamed=True) if merged != "" else INCOMPLETE
    return GenerationChunk.of(replace(gen, finish_reason=finish))


def _parser_config(config: RunnableConfig) -> RunnableConfig:
    """The model call's config for the parser after it (its own run, not a second model run)."""
    out = dict(config)
    out.pop("run_name", None)
    return out  # type: ignore[return-value]


#: Response-metadata keys whose repeats ``merge_dicts`` keeps as they are (when equal).
_KEPT_WHEN_EQUAL = frozenset({"id", "output_version", "model_provider"})
_CHANGED = object()


def _carriers(pieces: Sequence[AIMessageChunk]) -> list[AIMessageChunk]:
    """The pieces whose usage or response metadata changes what merging them all says: a piece
    without usage that only repeats a key merging keeps when equal (OpenAI's chunks each carry
    ``{"model_provider": "openai"}``) adds nothing."""
    carriers: list[AIMessageChunk] = []
    seen: dict[str, Any] = {}
    repeat: dict[str, Any] | None = None  # metadata found to add nothing since the last carrier
    for piece in pieces:
        meta = piece.response_metadata
        if piece.usage_metadata is None:
            if not meta or meta == repeat:
                continue
            if (
                carriers
                and meta.keys() <= _KEPT_WHEN_EQUAL
                and all(seen.get(key, _CHANGED) == value for key, value in meta.items())
            ):
                repeat = meta
                continue
        carriers.append(piece)
        repeat = None
        for key, value in meta.items():
            if key not in seen:
                seen[key] = value if isinstance(value, str) else _CHANGED
            elif seen[key] != value:
                seen[key] = _CHANGED
    return carriers


class _Pieces:
    """The pieces of one streamed model call: text as it comes, usage and model at the end."""

    def __init__(self, fallback_model: str | None) -> None:
        self.pieces: list[Any] = []
        self.fallback_model = fallback_model

    def add(self, piece: Any) -> GenerationChunk | None:
        """Keep ``piece``; return its text as a chunk (``None`` when it has none)."""
        self.pieces.append(piece)
        text = message_text(piece)
        return GenerationChunk.of_text(text) if text else None

    def merged(self) -> Any:
        """The pieces merged the way LangChain does (``AIMessageChunk`` addition sums usage)."""
        pieces = self.pieces
        if not pieces:
            return ""
        if all(isinstance(p, BaseMessageChunk) for p in pieces):
            return pieces[0] + pieces[1:] if len(pieces) > 1 else pieces[0]
        if all(isinstance(p, str) for p in pieces):
            return "".join(pieces)
        return pieces[-1]

    def metadata(self) -> Any:
        """What :meth:`merged` says of usage and response metadata (all :meth:`last` reads).

        Message chunks are not added up for it (a chunk sum also merges content, tool-call
        chunks and ids): their response metadata is merged and their usage summed exactly as
        ``AIMessageChunk`` addition does, over the chunks that change either (:func:`_carriers`).
        """
        pieces = self.pieces
        if len(pieces) < 2 or not all(isinstance(p, AIMessageChunk) for p in pieces):
            return self.merged()
        carriers = _carriers(pieces)
        if len(carriers) < 2:
            return carriers[0] if carriers else pieces[0]
        usage = None  # summed as chunk addition sums it (a chunk without usage adds zeros)
        if carriers[0].usage_metadata or any(o.usage_metadata is not None for o in carriers[1:]):
            usage = functools.reduce(
                add_usage, [o.usage_metadata for o in carriers if o.usage_metadata is not None]
            )
        meta = merge_dicts(*(o.response_metadata for o in carriers))
        return _Metadata(response_metadata=meta, usage_metadata=usage)

    def last(self) -> GenerationChunk:
        """The closing chunk: no text, the merged usage, the model name and the finish reason."""
        final = self.metadata()
        return GenerationChunk(
            text="",
            usage=message_usage(final),
            model=message_model(final) or self.fallback_model,
            finish_reason=message_finish_reason(final, streamed=True),
        )


@dataclass(frozen=True)
class _Metadata:
    """The usage and response metadata of a sum of message chunks (see :meth:`_Pieces.metadata`)."""

    response_metadata: dict[str, Any]
    usage_metadata: Any


def retriever_filter(retriever: Any, config: RunnableConfig | None) -> Any:
    """The metadata filter a vector-store retriever applies (``search_kwargs["filter"]``)."""
    inner = unwrap(retriever, config)
    if isinstance(inner, VectorStoreRetriever):
        return inner.search_kwargs.get("filter")
    return None


def retriever_k(retriever: Any) -> int | None:
    """The ``k`` a vector-store retriever was built with (``search_kwargs["k"]``), if any."""
    inner = unwrap(retriever)
    if isinstance(inner, VectorStoreRetriever):
        k = inner.search_kwargs.get("k")
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            return k
    return None


def _takes_k(retriever: Any) -> bool:
    """Whether ``retriever.invoke(query, k=...)`` sets the number of results."""
    while isinstance(retriever, RunnableBindingBase):  # with_retry/with_config pass kwargs on
        retriever = retriever.bound
    if isinstance(retriever, VectorStoreRetriever):
        return True
    if not isinstance(retriever, BaseRetriever):
        return False
    method = retriever._get_relevant_documents
    return _takes_k_param(getattr(method, "__func__", method))


@functools.lru_cache(maxsize=256)
def _takes_k_param(method: Any) -> bool:
    """Whether ``method`` (a retriever class's ``_get_relevant_documents``) has a ``k``
    parameter; remembered per function (``inspect.signature`` costs tens of microseconds)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins only
        return False
    return "k" in params


def _accepts_filter(func: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return "filter" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


# --------------------------------------------------------------------------------------------
# Documents <-> passages
# --------------------------------------------------------------------------------------------
def as_documents(value: Any, what: str) -> list[Document]:
    """Normalize a long context given as ``str``, ``Document`` or a list of them."""
    items = [value] if isinstance(value, (str, Document)) else value
    if isinstance(items, (bytes, dict)) or not isinstance(items, Iterable):
        raise InvalidInputError(
            f"{what} must be a str, a Document or a list of them, got {type(value).__name__}"
        )
    docs: list[Document] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            docs.append(Document(page_content=item))
        elif isinstance(item, Document):
            docs.append(item)
        else:
            raise InvalidInputError(
                f"{what}[{i}] must be a str or a Document, got {type(item).__name__}"
            )
    if not any(d.page_content.strip() for d in docs):
        raise InvalidInputError(f"{what} is empty: no document with any text was given")
    return docs


def _doc_id(doc: Document, id_key: str) -> str | None:
    value = doc.metadata.get(id_key)
    return str(value) if value is not None else None


def _to_passages(docs: Any, id_key: str) -> list[Passage]:
    if isinstance(docs, (str, bytes, Document)) or not isinstance(docs, Iterable):
        raise ConfigurationError(
            f"the retriever returned {type(docs).__name__}; expected a list of Document"
        )
    out: list[Passage] = []
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise ConfigurationError(
                f"the retriever returned {type(doc).__name__} at position {i}; expected Document"
            )
        score = doc.metadata.get("score", doc.metadata.get("relevance_score"))
        out.append(
            Passage(
                text=doc.page_content,
                doc_id=_doc_id(doc, id_key),
                score=float(score) if isinstance(score, (int, float)) else None,
                metadata=dict(doc.metadata),
                source=doc,
            )
        )
    return out


def _context(doc: Document, id_key: str) -> ContextDocument:
    return ContextDocument(
        text=doc.page_content, doc_id=_doc_id(doc, id_key) or doc.id, metadata=dict(doc.metadata)
    )


def build_index(documents: Sequence[Document], *, chunk_words: int, id_key: str) -> LexicalIndex:
    """A BM25 index over the 300-word chunks of ``documents`` (used when there is no retriever)."""
    chunks = []
    for doc in documents:
        if not doc.page_content.strip():
            continue
        did = _doc_id(doc, id_key) or doc.id or document_id(doc.page_content)
        chunks.extend(
            chunk_text(doc.page_content, doc_id=did, chunk_words=chunk_words, metadata=doc.metadata)
        )
    return LexicalIndex(chunks)


def _search(index: LexicalIndex, step: Retrieve, id_key: str) -> list[Passage]:
    out = []
    for p in index.search(step.question, step.k):
        chunk = p.source
        metadata = {
            **chunk.metadata,
            id_key: chunk.doc_id,
            "chunk_index": chunk.index,
            "start": chunk.start,
            "end": chunk.end,
        }
        doc = Document(page_content=chunk.text, metadata={**metadata, "score": p.score})
        out.append(replace(p, metadata=metadata, source=doc))
    return out


# --------------------------------------------------------------------------------------------
# The handler
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LongContextPlan:
    """Where one call's long context comes from.

    Attributes:
        documents: A fixed or per-call long context (takes precedence), or ``None``.
        parent_loader: Sync loader of the parents of retrieved chunks, or ``None``.
        aparent_loader: Async loader, or ``None``.
        use_parents: Whether to load parents when ``documents`` is ``None``.
        index: Supplies the BM25 index over ``documents`` when there is no retriever.
    """

    documents: tuple[Document, ...] | None = None
    parent_loader: ParentLoader | None = None
    aparent_loader: ParentLoader | None = None
    use_parents: bool = False
    index: Callable[[], LexicalIndex] | None = None


class LangChainHandler:
    """Runs the core's steps with LangChain components, as child runs of one chain run.

    Args:
        retriever: Any retriever runnable (``BaseRetriever``), or ``None`` to rank the chunks of
            the long context with BM25.
        llm: The RAG-step model (any chat model or LLM runnable).
        long_context_llm: The long-context model.
        plan: Where the long context comes from.
        config: The config of the parent run (its ``configurable`` and metadata are passed on).
        run_manager: The parent run's manager (child runs hang under it), or ``None``.
        id_key: Metadata key holding a chunk's parent-document id.
        names: Configured model names per stage (used when the provider reports none).
        pass_k: Pass ``k`` to retrievers that take it per call (``False`` keeps the
            retriever's own ``search_kwargs["k"]``).

    Attributes:
        long_context_documents: The LangChain documents of the long context once loaded (the
            fixed or per-call ones, or the parents of the retrieved chunks), else ``None``.
    """

    def __init__(
        self,
        *,
        retriever: Runnable[Any, Any] | None,
        llm: Runnable[Any, Any],
        long_context_llm: Runnable[Any, Any],
        plan: LongContextPlan,
        config: RunnableConfig,
        run_manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun | None,
        id_key: str = "doc_id",
        names: dict[Stage, str | None] | None = None,
        pass_k: bool = True,
    ) -> None:
        self.retriever = retriever
        self.models = {Stage.RAG: llm, Stage.LONG_CONTEXT: long_context_llm}
        self.plan = plan
        self.config = config
        self.run_manager = run_manager
        self.id_key = id_key
        self.names = names or {}
        self.pass_k = pass_k
        self.long_context_documents: list[Document] | None = None

    # helpers ------------------------------------------------------------------------------------
    def _child(self, tag: str, run_name: str | None = None) -> RunnableConfig:
        callbacks = self.run_manager.get_child(tag) if self.run_manager is not None else None
        config = patch_config(self.config, callbacks=callbacks)
        if run_name is not None:
            config["run_name"] = run_name
        return config

    def _model(self, stage: Stage) -> tuple[Runnable[Any, Any], RunnableConfig]:
        tag = TAG_RAG if stage is Stage.RAG else TAG_LONG_CONTEXT
        config = self._child(tag, run_name=tag)
        if stage is Stage.RAG:  # its text may be a decline: keep it out of "messages" streams
            config["tags"] = [*config.get("tags", []), TAG_NOSTREAM]
        return self.models[stage], config

    def _classified(self, step: Generate) -> Any:
        """Context of one model call: a provider rejection (401, 404 ``model_not_found`` ...)
        becomes a :class:`~selfroute.ModelConfigurationError` naming the stage and model."""
        return classified(
            step.stage, self.names.get(step.stage) or model_name(self.models[step.stage])
        )

    def _structured(self, step: Generate) -> Runnable[Any, Any] | None:
        """The structured-output runnable for ``step``, or ``None`` to send the plain prompt."""
        if step.structured is None:
            return None
        return structured_model(self.models[step.stage], step.structured, self.config)

    def _structured_input(self, step: Generate) -> tuple[list[HumanMessage], RunnableConfig]:
        assert step.structured is not None
        _, config = self._model(step.stage)
        # The structured runnable is model | parser: the tag is made inheritable so the model
        # call inside it is tagged too, as a plain model call is.
        tag = TAG_RAG if step.stage is Stage.RAG else TAG_LONG_CONTEXT
        config["tags"] = [*config.get("tags", []), tag]
        return [HumanMessage(content=step.structured.prompt)], config

    def _call_structured(self, step: Generate, structured: Runnable[Any, Any]) -> Generation:
        messages, config = self._structured_input(step)
        with self._classified(step):
            output = structured.invoke(messages, config=config)
        return structured_generation(output, self.names.get(step.stage))

    async def _acall_structured(self, step: Generate, structured: Runnable[Any, Any]) -> Generation:
        messages, config = self._structured_input(step)
        with self._classified(step):
            output = await structured.ainvoke(messages, config=config)
        return structured_generation(output, self.names.get(step.stage))

    def _retriever_kwargs(self, step: Retrieve) -> dict[str, Any]:
        # A retriever that takes ``k`` per call gets it, so ``k`` (also when configured per call)
        # decides how many chunks are fetched rather than only how many are kept.
        return {"k": step.k} if self.pass_k and _takes_k(self.retriever) else {}

    def _parent_chunks(self, step: LoadLongContext) -> list[Document]:
        """The retrieved chunks whose parents are the long context (none when it is not)."""
        if self.plan.documents is not None or not self.plan.use_parents:
            return []
        return [p.source for p in step.passages if isinstance(p.source, Document)]

    def _loader(self) -> Runnable[list[Document], Any]:
        plan = self.plan
        flt = retriever_filter(self.retriever, self.config)

        def bind(func: ParentLoader | None) -> ParentLoader | None:
            if func is None or flt is None or not _accepts_filter(func):
                return func
            return functools.partial(func, filter=flt)

        func, afunc = bind(plan.parent_loader), bind(plan.aparent_loader)
        if func is None:
            if afunc is None:  # pragma: no cover - guarded by the caller
                raise ConfigurationError("no parent loader configured")
            return RunnableLambda(afunc, name=TAG_PARENTS)
        return RunnableLambda(func, afunc=afunc, name=TAG_PARENTS)

    def _ordered(self, parents: Any, chunks: list[Document]) -> list[ContextDocument]:
        if isinstance(parents, (str, Document)) or not isinstance(parents, Iterable):
            raise ConfigurationError(
                f"the parent loader returned {type(parents).__name__}; expected a list of Document"
            )
        wanted: dict[str, int] = {}
        for chunk in chunks:
            did = _doc_id(chunk, self.id_key)
            if did is not None:
                wanted.setdefault(did, len(wanted))
        docs: list[Document] = []
        for i, parent in enumerate(parents):
            if not isinstance(parent, Document):
                raise ConfigurationError(
                    f"the parent loader returned {type(parent).__name__} at position {i}; "
                    "expected Document"
                )
            did = _doc_id(parent, self.id_key)
            if did is not None and did not in wanted:
                raise ConfigurationError(
                    f"the parent loader returned document {did!r}, which none of the retrieved "
                    "chunks belongs to; a parent loader must only return the parents of the "
                    "chunks it is given"
                )
            docs.append(parent)
        docs.sort(key=lambda d: wanted.get(_doc_id(d, self.id_key) or "", len(wanted)))
        self.long_context_documents = docs
        return [_context(d, self.id_key) for d in docs]

    def _fixed(self) -> list[ContextDocument] | None:
        if self.plan.documents is None:
            return None
        self.long_context_documents = list(self.plan.documents)
        return [_context(d, self.id_key) for d in self.plan.documents]

    def _sync_loader_check(self) -> None:
        if self.plan.parent_loader is None and self.plan.aparent_loader is not None:
            raise ConfigurationError(
                "only aparent_loader was given, which cannot run in a sync call; use "
                "ainvoke/astream/abatch, or also give parent_loader"
            )

    # sync protocol ----------------------------------------------------------------------------
    def retrieve(self, step: Retrieve) -> list[Passage]:
        """Top-k chunks from the retriever (or BM25 over the long context)."""
        if self.retriever is None:
            if self.plan.index is None:  # pragma: no cover - guarded by SelfRoute
                raise ConfigurationError("no retriever and no long context to search")
            return _search(self.plan.index(), step, self.id_key)
        docs = self.retriever.invoke(
            step.question, config=self._child(TAG_RETRIEVE), **self._retriever_kwargs(step)
        )
        return _to_passages(docs, self.id_key)

    def generate(self, step: Generate) -> Generation:
        """One model call, usage read from ``AIMessage.usage_metadata``.

        A RAG step that offers a structured verdict is sent with the model's structured output
        when it has one (``Generation.structured`` holds the object), else as the plain prompt.
        """
        structured = self._structured(step)
        if structured is not None:
            return self._call_structured(step, structured)
        llm, config = self._model(step.stage)
        with self._classified(step):
            output = llm.invoke([HumanMessage(content=step.prompt)], config=config)
        return _generation(output, self.names.get(step.stage))

    def stream(self, step: Generate) -> Iterator[GenerationChunk]:
        """A streamed model call; usage and model arrive on the last piece.

        A structured verdict streams the object's JSON text (the core shows the answer once
        ``answerable`` is known), then the parsed object with usage and model.
        """
        structured = self._structured(step)
        if structured is not None:
            yield from _stream_structured(self, step, structured)
            return
        llm, config = self._model(step.stage)
        pieces = _Pieces(self.names.get(step.stage))
        with self._classified(step):
            for piece in llm.stream([HumanMessage(content=step.prompt)], config=config):
                if chunk := pieces.add(piece):
                    yield chunk
        yield pieces.last()

    def load_long_context(self, step: LoadLongContext) -> list[ContextDocument] | None:
        """The fixed/per-call documents, or the parents of the retrieved chunks."""
        chunks = self._parent_chunks(step)
        if not chunks:
            return self._fixed()
        self._sync_loader_check()
        parents = self._loader().invoke(chunks, config=self._child(TAG_PARENTS, TAG_PARENTS))
        return self._ordered(parents, chunks)

    # async protocol ---------------------------------------------------------------------------
    async def aretrieve(self, step: Retrieve) -> list[Passage]:
        """Async :meth:`retrieve` (``retriever.ainvoke``)."""
        if self.retriever is None:
            index = self.plan.index
            if index is None:  # pragma: no cover - guarded by SelfRoute
                raise ConfigurationError("no retriever and no long context to search")
            built = await run_in_executor(self.config, index)
            return _search(built, step, self.id_key)
        docs = await self.retriever.ainvoke(
            step.question, config=self._child(TAG_RETRIEVE), **self._retriever_kwargs(step)
        )
        return _to_passages(docs, self.id_key)

    async def agenerate(self, step: Generate) -> Generation:
        """Async :meth:`generate` (``llm.ainvoke``)."""
        structured = self._structured(step)
        if structured is not None:
            return await self._acall_structured(step, structured)
        llm, config = self._model(step.stage)
        with self._classified(step):
            output = await llm.ainvoke([HumanMessage(content=step.prompt)], config=config)
        return _generation(output, self.names.get(step.stage))

    async def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        """Async :meth:`stream` (``llm.astream``)."""
        structured = self._structured(step)
        if structured is not None:
            async for piece in _astream_structured(self, step, structured):
                yield piece
            return
        llm, config = self._model(step.stage)
        pieces = _Pieces(self.names.get(step.stage))
        with self._classified(step):
            async for piece in llm.astream([HumanMessage(content=step.prompt)], config=config):
                if chunk := pieces.add(piece):
                    yield chunk
        yield pieces.last()

    async def aload_long_context(self, step: LoadLongContext) -> list[ContextDocument] | None:
        """Async :meth:`load_long_context` (a sync-only loader runs in a worker thread)."""
        chunks = self._parent_chunks(step)
        if not chunks:
            return self._fixed()
        loader = self._loader()
        parents = await loader.ainvoke(chunks, config=self._child(TAG_PARENTS, TAG_PARENTS))
        return self._ordered(parents, chunks)


def _stream_structured(
    handler: LangChainHandler, step: Generate, structured: Runnable[Any, Any]
) -> Iterator[GenerationChunk]:
    """A structured call streamed: the object's JSON text piece by piece
    (``structured_delta``), then the parsed object as ``generate`` returns it."""
    split = split_structured(structured)
    if split is None:  # a custom with_structured_output: one call
        yield GenerationChunk.of(handler._call_structured(step, structured))
        return
    model, parser = split
    messages, config = handler._structured_input(step)
    pieces, deltas = _Pieces(handler.names.get(step.stage)), ObjectDeltas()
    with handler._classified(step):
        for piece in model.stream(messages, config=config):
            pieces.pieces.append(piece)
            if delta := deltas.delta(piece, message_text(piece)):
                yield GenerationChunk(structured_delta=delta)
    merged, error = pieces.merged(), None
    try:
        output = parser.invoke({"raw": merged}, config=_parser_config(config))
    except Exception as exc:  # the parser's own fallback catches parse errors; anything else
        output, error = None, exc
    yield streamed_structured(_parsed(output, merged, error), merged, pieces.fallback_model)


async def _astream_structured(
    handler: LangChainHandler, step: Generate, structured: Runnable[Any, Any]
) -> AsyncIterator[GenerationChunk]:
    """Async :func:`_stream_structured`."""
    split = split_structured(structured)
    if split is None:
        yield GenerationChunk.of(await handler._acall_structured(step, structured))
        return
    model, parser = split
    messages, config = handler._structured_input(step)
    pieces, deltas = _Pieces(handler.names.get(step.stage)), ObjectDeltas()
    with handler._classified(step):
        async for piece in model.astream(messages, config=config):
            pieces.pieces.append(piece)
            if delta := deltas.delta(piece, message_text(piece)):
                yield GenerationChunk(structured_delta=delta)
    merged, error = pieces.merged(), None
    try:
        output = await parser.ainvoke({"raw": merged}, config=_parser_config(config))
    except Exception as exc:
        output, error = None, exc
    yield streamed_structured(_parsed(output, merged, error), merged, pieces.fallback_model)
