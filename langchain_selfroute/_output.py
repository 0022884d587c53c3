"""What :class:`~langchain_selfroute.SelfRoute` returns: a result mapping and addable stream chunks.

Both follow LangChain's convention for chains with structured output (``create_retrieval_chain``):
the output is a ``dict`` (so ``itemgetter``, ``pick``, ``RunnablePassthrough.assign``, LangGraph
state and checkpointers take it as it is), with typed attribute access on top
(``out.answer``, ``out.route.value``, ``out.token_ratio``). The mapping's values are plain
(strings, numbers, lists, dicts) or LangChain ``Document``/message objects, so a LangGraph
checkpointer restores them under ``LANGGRAPH_STRICT_MSGPACK`` with no allowlist. Stream chunks are dicts of the same
keys that add up with ``+``: ``functools.reduce(operator.add, route.stream(x)) == route.invoke(x)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from langchain_core.documents import Document
from langchain_core.load import dumpd, load
from langchain_core.load.serializable import Serializable
from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, TypeAdapter
from pydantic_core import core_schema

from selfroute import (
    Abstention,
    Citation,
    Passage,
    Reason,
    Route,
    RouteResult,
    Stage,
    StepRecord,
    Usage,
)

__all__ = [
    "CHECKPOINT_TYPES",
    "OUTPUT_KEYS",
    "SelfRouteChunk",
    "SelfRouteOutput",
    "passage_document",
]

#: The keys of a :class:`SelfRouteOutput` (those of the core's ``RouteResult.to_dict()``); other
#: keys of an output are input keys passed through.
OUTPUT_KEYS = (
    "question",
    "answer",
    "route",
    "reason",
    "rag_answer",
    "sources",
    "steps",
    "usage",
    "usage_by_stage",
    "long_context_tokens",
    "long_context_tokens_source",
    "token_ratio",
    "context",
    "cost",
    "long_context_cost",
    "latency_s",
    "error",
    "abstained",
    "abstention",
    "rag_verdict",
    "long_context_verdict",
    "disputed",
    "verified",
    "citations",
    "unverified_answer",
    "k_used",
)
_OUTPUT_KEYS = frozenset(OUTPUT_KEYS)

#: The selfroute types behind an output's typed attributes. An output's mapping holds none of them
#: (its values are plain), so a checkpointer needs no allowlist for it; the tuple is for state you
#: build yourself from ``out.result`` or ``out.steps``:
#: ``JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)``.
CHECKPOINT_TYPES: tuple[type, ...] = (Route, Reason, Stage, Abstention, Usage, StepRecord, Citation)


def passage_document(passage: Passage) -> Document:
    """The LangChain ``Document`` behind a core passage (rebuilt from its text if it has none)."""
    if isinstance(passage.source, Document):
        return passage.source
    metadata = dict(passage.metadata)
    if passage.doc_id is not None:
        metadata.setdefault("doc_id", passage.doc_id)
    if passage.score is not None:
        metadata.setdefault("score", passage.score)
    return Document(page_content=passage.text, metadata=metadata)


def _fields(result: RouteResult) -> dict[str, Any]:
    """The mapping form of a core result: plain values (enum values as strings, usage, steps and
    citations as dicts; sources as ``Document``), lists rather than tuples, so a checkpointed
    copy compares equal and a strict msgpack checkpointer blocks nothing."""
    return {
        "question": result.question,
        "answer": result.answer,
        "route": result.route.value,
        "reason": result.reason.value,
        "rag_answer": result.rag_answer,
        "sources": [passage_document(p) for p in result.sources],
        "steps": [s.to_dict() for s in result.steps],
        "usage": result.usage.to_dict(),
        "usage_by_stage": {
            st.value: result.stage_usage(st).to_dict()
            for st in Stage
            if any(s.stage is st for s in result.steps)
        },
        "long_context_tokens": result.long_context_tokens,
        "long_context_tokens_source": result.long_context_tokens_source,
        "token_ratio": result.token_ratio,
        "context": dict(result.context) if result.context is not None else None,
        "cost": result.cost,
        "long_context_cost": result.long_context_cost,
        "latency_s": result.latency_s,
        "error": result.error,
        "abstained": result.abstained,
        "abstention": None if result.abstention is None else result.abstention.value,
        "rag_verdict": result.rag_verdict,
        "long_context_verdict": result.long_context_verdict,
        "disputed": result.disputed,
        "verified": result.verified,
        "citations": [c.to_dict() for c in result.citations],
        "unverified_answer": result.unverified_answer,
        "k_used": result.k_used,
    }


# --------------------------------------------------------------------------------------------
# Typed values from the plain mapping (and plain values from typed ones given to a constructor)
# --------------------------------------------------------------------------------------------
def _usage(value: Any) -> Usage:
    return value if isinstance(value, Usage) else Usage.from_dict(value)


def _step(value: Any) -> StepRecord:
    return value if isinstance(value, StepRecord) else StepRecord.from_dict(value)


def _document(value: Any) -> Document:
    if isinstance(value, Document):
        return value
    data = dict(value)
    if data.get("lc") == 1 and data.get("type") == "constructor":
        revived = load(data)
        if isinstance(revived, Document):
            return revived
    return Document(
        page_content=data.get("page_content", ""),
        metadata=dict(data.get("metadata") or {}),
        id=data.get("id"),
    )


def _citation(value: Any) -> Citation:
    return value if isinstance(value, Citation) else Citation(**dict(value))


def _optional_enum(kind: type[Abstention], value: Any) -> Abstention | None:
    return None if value is None else kind(value)


def _plain(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the output keys' values in the plain form :func:`_fields` gives (typed
    values, e.g. from an older checkpoint or a hand-built mapping, are turned plain)."""
    out = dict(data)
    for key, make in (("route", Route), ("reason", Reason), ("abstention", Abstention)):
        if out.get(key) is not None:
            out[key] = make(out[key]).value
    if "sources" in out:
        out["sources"] = [_document(d) for d in out["sources"] or ()]
    if "steps" in out:
        out["steps"] = [_step(s).to_dict() for s in out["steps"] or ()]
    if out.get("usage") is not None:
        out["usage"] = _usage(out["usage"]).to_dict()
    if "usage_by_stage" in out:
        out["usage_by_stage"] = {
            str(k): _usage(v).to_dict() for k, v in (out["usage_by_stage"] or {}).items()
        }
    if "citations" in out:
        out["citations"] = [_citation(c).to_dict() for c in out["citations"] or ()]
    return out


def _jsonable(value: Any) -> Any:
    """A passed-through input value in JSON form (LangChain objects as their ``dumpd`` form)."""
    if isinstance(value, Serializable):
        return dumpd(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _revive(value: Any) -> Any:
    """Inverse of :func:`_jsonable` for passed-through values."""
    if isinstance(value, Mapping):
        if value.get("lc") == 1 and value.get("type") == "constructor":
            return load(dict(value))
        return {k: _revive(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_revive(v) for v in value]
    return value


class _Schema(BaseModel):
    """The JSON schema of a Self-Route output (extra keys are passed-through input keys)."""

    model_config = ConfigDict(title="SelfRouteOutput", extra="allow", arbitrary_types_allowed=True)

    question: str
    answer: str | None
    route: Route
    reason: Reason
    rag_answer: str | None = None
    sources: list[Document] = Field(default_factory=list)
    steps: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    usage_by_stage: dict[str, dict[str, Any]] = Field(default_factory=dict)
    long_context_tokens: int | None = None
    long_context_tokens_source: str | None = None
    token_ratio: float | None = None
    context: dict[str, Any] | None = None
    cost: float | None = None
    long_context_cost: float | None = None
    latency_s: float = 0.0
    error: str | None = None
    abstained: bool = False
    abstention: Abstention | None = None
    rag_verdict: str | None = None
    long_context_verdict: str | None = None
    disputed: bool = False
    verified: bool | None = None
    citations: list[dict[str, Any]] = Field(default_factory=list)
    unverified_answer: str | None = None
    k_used: int | None = None


# --------------------------------------------------------------------------------------------
# Typed read access shared by the output and the chunks
# --------------------------------------------------------------------------------------------
class _Fields(dict[str, Any]):
    """Typed attribute access to the output keys of a mapping (missing keys read as unset)."""

    _result: RouteResult | None = None
    _long_context_documents: list[Document] | None = None

    @property
    def question(self) -> str:
        """The question asked (stripped)."""
        return str(self.get("question") or "")

    @property
    def answer(self) -> str | None:
        """The final answer (a stream chunk: its text so far)."""
        value = self.get("answer")
        return None if value is None else str(value)

    @property
    def reason(self) -> Reason | None:
        """Why the route was taken (``answered``, ``declined``, ``refused``, ...)."""
        value = self.get("reason")
        return None if value is None else Reason(value)

    @property
    def rag_answer(self) -> str | None:
        """What the RAG step answered (the decline text when it declined)."""
        value: str | None = self.get("rag_answer")
        return value

    @property
    def sources(self) -> list[Document]:
        """The retrieved chunk ``Document`` objects shown to the RAG step, best first."""
        return [_document(d) for d in self.get("sources") or ()]

    @property
    def long_context_tokens(self) -> int | None:
        """The always-long-context counterfactual: input tokens of sending the whole context."""
        value: int | None = self.get("long_context_tokens")
        return value

    @property
    def long_context_tokens_source(self) -> str | None:
        """``provider``, ``tokenizer`` or ``heuristic``."""
        value: str | None = self.get("long_context_tokens_source")
        return value

    @property
    def cost(self) -> float | None:
        """Money spent (needs ``prices``)."""
        value: float | None = self.get("cost")
        return value

    @property
    def long_context_cost(self) -> float | None:
        """Money always-long-context would have cost (needs ``prices``)."""
        value: float | None = self.get("long_context_cost")
        return value

    @property
    def latency_s(self) -> float:
        """Wall time of the call."""
        return float(self.get("latency_s") or 0.0)

    @property
    def error(self) -> str | None:
        """A fault that was absorbed on the way (failed RAG call or retriever), if any."""
        value: str | None = self.get("error")
        return value

    @property
    def abstention(self) -> Abstention | None:
        """Why the answer is a decline (``declined``, ``ungrounded``, ``over_budget``), or None."""
        return _optional_enum(Abstention, self.get("abstention"))

    @property
    def citations(self) -> list[Citation]:
        """Grounded mode: the final answer's quotes and where they were found."""
        return [_citation(c) for c in self.get("citations") or ()]

    @property
    def verified(self) -> bool | None:
        """Grounded mode: whether the final answer's quotes were all found."""
        value: bool | None = self.get("verified")
        return value

    @property
    def unverified_answer(self) -> str | None:
        """Grounded mode: a long-context answer withheld because its quotes were not found."""
        value: str | None = self.get("unverified_answer")
        return value

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        """The model calls made, in order, with usage, model name and latency (with the raw
        model outputs while the core result is at hand; not after a JSON or checkpoint trip)."""
        if self._result is not None and "steps" in self:
            return self._result.steps
        return tuple(_step(s) for s in self.get("steps") or ())

    @property
    def usage(self) -> Usage:
        """Total tokens over all model calls (``usage.source`` says whether it was estimated)."""
        value = self.get("usage")
        return Usage.zero() if value is None else _usage(value)

    @property
    def token_ratio(self) -> float | None:
        """Input tokens spent divided by the always-long-context counterfactual."""
        value: float | None = self.get("token_ratio")
        return value

    @property
    def context(self) -> dict[str, Any] | None:
        """Facts about the long context sent or priced (size, fitting strategy, truncation)."""
        value = self.get("context")
        return dict(value) if value is not None else None

    @property
    def abstained(self) -> bool:
        """True when the answer is a decline: it was not found in the documents."""
        return bool(self.get("abstained", False))

    @property
    def disputed(self) -> bool:
        """True when the answer came from long context after the RAG step declined and nothing
        verified it (show it with care; ``grounded=True`` settles such answers)."""
        return bool(self.get("disputed", False))

    @property
    def rag_verdict(self) -> str | None:
        """What the RAG step's output was (``answered``, ``sentinel``, ``refusal``, ...)."""
        value: str | None = self.get("rag_verdict")
        return value

    @property
    def long_context_verdict(self) -> str | None:
        """What the long-context step's output was, or ``None`` if it did not run."""
        value: str | None = self.get("long_context_verdict")
        return value

    @property
    def k_used(self) -> int | None:
        """Chunks shown to the last RAG call (a ``k_ladder`` may have grown it)."""
        value: int | None = self.get("k_used")
        return value

    @property
    def long_context_documents(self) -> list[Document] | None:
        """The documents of the long context (the fixed or per-call ones, or the parents of the
        retrieved chunks) when this call loaded them; ``None`` otherwise, and after a JSON or
        checkpoint trip (they are not part of the mapping)."""
        return self._long_context_documents

    @property
    def documents_used(self) -> list[Document]:
        """The documents the answer was written from: the retrieved chunks shown to the RAG step
        when it answered, else the long-context documents (the chunks when those are unknown).
        ``create_retrieval_chain``'s ``context``."""
        if self.get("route") == Route.LONG_CONTEXT and self._long_context_documents is not None:
            return list(self._long_context_documents)
        return self.sources

    @property
    def answered_from_chunks(self) -> bool:
        """True when the RAG step answered from the retrieved chunks."""
        return self.get("route") == Route.RAG and self.get("reason") == Reason.ANSWERED

    @property
    def passthrough(self) -> dict[str, Any]:
        """The input keys passed through to the output (those SelfRoute did not use)."""
        return {k: v for k, v in self.items() if k not in _OUTPUT_KEYS}

    @property
    def result(self) -> RouteResult:
        """The core :class:`selfroute.RouteResult` (rebuilt from the mapping when it was
        restored from JSON or a checkpoint; raw model outputs are not kept then)."""
        if self._result is None:
            missing = [k for k in ("question", "route", "reason") if k not in self]
            if missing:
                raise AttributeError(f"not a complete Self-Route result: no {missing}")
            self._result = RouteResult(
                question=self.question,
                answer=self.answer,
                route=Route(self["route"]),
                reason=Reason(self["reason"]),
                rag_answer=self.rag_answer,
                sources=tuple(_passage(d) for d in self.sources),
                steps=self.steps,
                long_context_tokens=self.long_context_tokens,
                long_context_tokens_source=self.long_context_tokens_source,
                context=self.context,
                cost=self.cost,
                long_context_cost=self.long_context_cost,
                latency_s=self.latency_s,
                error=self.error,
                abstention=self.abstention,
                citations=tuple(self.citations),
                verified=self.verified,
                unverified_answer=self.unverified_answer,
            )
        return self._result

    def stage_usage(self, stage: Stage | str) -> Usage:
        """Usage of one stage: ``rag`` or ``long_context``."""
        return self.result.stage_usage(stage)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serializable dict: the core's ``RouteResult.to_dict()`` keys (sources as
        serialized ``Document`` objects) plus passed-through input keys (LangChain objects in
        their ``dumpd`` form)."""
        data: dict[str, Any] = {k: _jsonable(v) for k, v in self.passthrough.items()}
        if "route" in self:
            core = self.result.to_dict()
            core["sources"] = [d.model_dump() for d in self.sources]
            core["answer"] = self.get("answer", core["answer"])
            data.update(core)
        elif "answer" in self:
            data["answer"] = self["answer"]
        return data

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Same as :meth:`to_dict` (kept from when the output was a pydantic model)."""
        return self.to_dict()

    def model_dump_json(self, **kwargs: Any) -> str:
        """:meth:`to_dict` as JSON text (``indent`` is honoured)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=kwargs.get("indent"))


def _passage(doc: Document) -> Passage:
    score = doc.metadata.get("score", doc.metadata.get("relevance_score"))
    doc_id = doc.metadata.get("doc_id")
    return Passage(
        text=doc.page_content,
        doc_id=str(doc_id) if doc_id is not None else None,
        score=float(score) if isinstance(score, (int, float)) else None,
        metadata=dict(doc.metadata),
        source=doc,
    )


class SelfRouteOutput(_Fields):
    """The result of one Self-Route call: a ``dict`` with typed attribute access.

    The keys are those of the core's ``RouteResult.to_dict()`` (``question``, ``answer``,
    ``route``, ``reason``, ``sources``, ``usage``, ``token_ratio``, ...) with plain values
    (``"rag"``, ``{"input_tokens": ...}``; LangChain ``Document`` sources) and typed attributes
    (``out.route`` a ``Route``, ``out.usage`` a ``Usage``, ``out.steps`` a tuple of ``StepRecord``),
    plus the input keys SelfRoute did not use, passed through (``chat_history``, LangGraph
    state keys), as ``create_retrieval_chain`` does. So ``out["answer"]``, ``out.get``,
    ``itemgetter("answer")``, ``route.pick("answer")`` and ``RunnablePassthrough.assign`` work,
    and so do ``out.answer``, ``out.route.value`` and ``out.token_ratio``.

    A copy restored from JSON (:meth:`model_validate_json`) or a LangGraph checkpoint (a plain
    dict, strict msgpack included) compares equal; ``SelfRouteOutput.model_validate(restored)`` gives the typed view back.
    """

    _schema: ClassVar[TypeAdapter[_Schema]] = TypeAdapter(_Schema)

    def __init__(self, data: Mapping[str, Any] | Iterable[tuple[str, Any]] = (), /) -> None:
        super().__init__(_plain(dict(data)))

    @classmethod
    def from_result(
        cls,
        result: RouteResult,
        passthrough: Mapping[str, Any] | None = None,
        long_context_documents: Iterable[Document] | None = None,
    ) -> SelfRouteOutput:
        """Wrap a core result (``passthrough``: input keys to carry over;
        ``long_context_documents``: the long context's documents, if it was loaded)."""
        out = cls()
        if passthrough:
            dict.update(out, passthrough)
        dict.update(out, _fields(result))
        out._result = result
        if long_context_documents is not None:
            out._long_context_documents = list(long_context_documents)
        return out

    @property
    def route(self) -> Route:
        """``rag`` (answered from the retrieved chunks) or ``long_context``."""
        return Route(self["route"])

    @classmethod
    def model_validate(cls, data: Any) -> SelfRouteOutput:
        """Rebuild an output from its mapping (e.g. a checkpointed plain dict) or its
        :meth:`to_dict` form."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise TypeError(f"SelfRouteOutput needs a mapping, got {type(data).__name__}")
        plain = {k: (v if k in _OUTPUT_KEYS else _revive(v)) for k, v in data.items()}
        return cls(plain)

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> SelfRouteOutput:
        """Inverse of :meth:`model_dump_json`."""
        return cls.model_validate(json.loads(text))

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        """The JSON schema of the :meth:`to_dict` form."""
        return cls._schema.json_schema()

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validate any mapping into an output; serialize as :meth:`to_dict`; schema of
        :class:`_Schema`."""
        return core_schema.no_info_plain_validator_function(
            cls.model_validate,
            json_schema_input_schema=handler.generate_schema(_Schema),
            serialization=core_schema.plain_serializer_function_ser_schema(
                lambda value: value.to_dict()
            ),
        )


class SelfRouteChunk(_Fields):
    """One piece of a streamed Self-Route call: a ``dict`` of output keys that adds up.

    Text chunks are ``{"answer": delta}``; the last chunk carries every other output key (and
    the passed-through input keys), with :attr:`output` set to the whole result. Adding the
    chunks of a stream gives a mapping equal to what ``invoke`` returns, so
    ``itemgetter("answer")`` on a chunk is the text delta and on the sum the answer.

    Beyond the mapping, a chunk says how the call is going: :attr:`route` is the route taken so
    far (the first chunk already carries it) and :attr:`stage` names the stage that wrote the
    text. No chunk is sent before there is answer text or the result (a route-only chunk would
    start the stream before the long-context call has run, and ``with_fallbacks`` could no
    longer fall back when it fails). A chunk with ``retracted=True`` means the text streamed
    before it is withdrawn (rare: a refusal whose opening looked like an answer; the
    long-context answer follows), its own text replacing it (when the final answer differs from
    the text shown, e.g. quotes cleaned off, it comes again whole). Adding chunks does this for
    you.

    Attributes:
        stage: The stage that wrote ``text``.
        retracted: The text streamed before this chunk is withdrawn.
        output: The full result, on the last chunk only.
    """

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        /,
        *,
        route: Route | None = None,
        text: str = "",
        stage: Stage | None = None,
        reason: Reason | None = None,
        retracted: bool = False,
        output: SelfRouteOutput | None = None,
    ) -> None:
        super().__init__(data or {})
        self.setdefault("answer", text)
        self._route = route
        self._reason = reason
        self.stage = stage
        self.retracted = retracted
        self.output = output

    @classmethod
    def delta(
        cls,
        text: str,
        *,
        route: Route | None,
        stage: Stage | None,
        reason: Reason | None,
        retracted: bool,
    ) -> SelfRouteChunk:
        """A text chunk ``{"answer": text}``: ``SelfRouteChunk(route=..., text=..., ...)``, built
        for less (a stream makes one per token; the same mapping and attributes, set directly).

        Args:
            text: The answer text delta.
            route: The route taken so far.
            stage: The stage that wrote ``text``.
            reason: Why the route was taken, when known.
            retracted: The text streamed before this chunk is withdrawn.

        Returns:
            The chunk.
        """
        chunk = dict.__new__(cls)
        chunk["answer"] = text
        state = chunk.__dict__
        state["_route"] = route
        state["_reason"] = reason
        state["stage"] = stage
        state["retracted"] = retracted
        state["output"] = None
        return chunk

    @property
    def route(self) -> Route | None:
        """The route taken so far (``None`` only before it is known)."""
        if self._route is not None:
            return self._route
        value = self.get("route")
        return None if value is None else Route(value)

    @property
    def reason(self) -> Reason | None:
        """Why the route was taken, when known."""
        if self._reason is not None:
            return self._reason
        value = self.get("reason")
        return None if value is None else Reason(value)

    @property
    def text(self) -> str:
        """Answer text delta (of a sum of chunks: the answer so far)."""
        return str(self.get("answer") or "")

    @property
    def is_final(self) -> bool:
        """True for the last chunk (the one with the result)."""
        return self.output is not None

    def __add__(self, other: object) -> SelfRouteChunk:
        if not isinstance(other, SelfRouteChunk):
            return NotImplemented
        # Called once per chunk by LangChain (a stream's run output is the sum of its chunks):
        # built without __init__ and the properties, the same sum for less.
        merged = dict.__new__(SelfRouteChunk)
        merged.update(self)
        merged.update(other)
        retracted = other.retracted
        head = "" if retracted else self.get("answer")
        merged["answer"] = str(head or "") + str(other.get("answer") or "")
        route, mine = other.route, self.route
        switched = route is not None and route != mine
        state = merged.__dict__
        state["_route"] = route or mine
        reason = other.reason
        state["_reason"] = reason if (reason is not None or switched) else self.reason
        state["stage"] = other.stage or self.stage
        state["retracted"] = self.retracted or retracted
        state["output"] = other.output or self.output
        return merged

    def __repr__(self) -> str:
        flags = f", route={self.route!r}" if self.route is not None else ""
        flags += ", retracted=True" if self.retracted else ""
        return f"SelfRouteChunk({dict.__repr__(self)}{flags})"
