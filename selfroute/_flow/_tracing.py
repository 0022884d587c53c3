"""OpenTelemetry spans of routed questions, opt-in with ``RouteConfig(tracing=...)``.

The drivers (:func:`~selfroute.drive`, :func:`~selfroute.adrive`) ask :func:`start_trace` for the
trace of the flow they run and report each step to it; with tracing off they get :data:`OFF`,
whose methods do nothing, and ``opentelemetry`` is never imported. Spans follow the OpenInference
semantic conventions (read by Arize Phoenix, Langfuse and other OTLP backends):

* one ``CHAIN`` span per question (``SelfRoute``): the question as ``input.value``, the answer as
  ``output.value``, and under ``selfroute.``: route, reason, verdict, k, tokens per stage, cost,
  always-LC tokens and cost, ``token_ratio``;
* a ``RETRIEVER`` child for retrieval (``retrieval.documents.N.document.content/id/score``), a
  ``CHAIN`` child for loading the long context, and an ``LLM`` child per model call
  (``selfroute.rag`` per k-ladder rung, ``selfroute.long_context``) with ``llm.model_name``,
  ``llm.token_count.prompt/completion/total``, ``llm.input_messages``/``llm.output_messages``,
  the verdict, and ``llm.cost.total`` when the config has prices.

Model-call spans are ended when the result is known (with the call's own end time), so that they
carry what the flow recorded for the call: its verdict, and its tokens even when the provider
reported none (counted locally; ``selfroute.tokens.source`` says so). A failed step's span, and
the question's span when the call fails, get status ``ERROR`` and an ``exception`` event (its
message redacted like every error selfroute records). While a step runs its span is the current
span, so spans of instrumented clients under it (an OpenAI or HTTP instrumentation) nest there;
nothing is left attached across a streamed chunk.

The batch driver (:class:`~selfroute.BatchJob`) reports the steps of each question's flow to a
trace started with ``batch=True``: every span carries ``selfroute.batch=true``, and no span ends
(is exported) before the question's result is known; each span keeps the end time it had, and all
of them end together with the question's. A question whose job a crash interrupted is replayed by
the process that finishes it, so its trace is emitted once, complete, by that process.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar, cast

from selfroute._errors import ConfigurationError, LongContextError
from selfroute._flow._steps import (
    Generate,
    Generation,
    LoadLongContext,
    Retrieve,
    Settle,
    Speculate,
)
from selfroute._redact import redact, redact_exception
from selfroute._result import RouteResult, Stage, StepRecord

__all__ = ["OFF", "FlowTrace", "check_tracing", "start_trace"]

T = TypeVar("T")

#: The instrumentation scope of selfroute's spans.
TRACER_NAME = "selfroute"
_EXTRA_HINT = "pip install 'selfroute[tracing]'"
_log = logging.getLogger("selfroute")


def _otel() -> Any:
    """``opentelemetry.trace`` (imported on first use; only when tracing is on)."""
    try:
        from opentelemetry import trace
    except ImportError:
        raise ConfigurationError(
            f"tracing=True needs the opentelemetry-api package: {_EXTRA_HINT} "
            "(and an OpenTelemetry SDK or exporter in your application to send the spans)"
        ) from None
    return trace


def check_tracing(setting: Any) -> None:
    """Validate ``RouteConfig.tracing``: ``False``/``None`` (off), ``True`` (the global tracer
    provider) or a ``TracerProvider`` (anything with ``get_tracer``).

    Raises:
        ConfigurationError: Another value, or tracing on without ``opentelemetry-api``.
    """
    if setting is None or setting is False:
        return
    if setting is True:
        _otel()
        return
    if not callable(getattr(setting, "get_tracer", None)):
        raise ConfigurationError(
            "tracing must be True (the global OpenTelemetry tracer provider), False, or a "
            f"TracerProvider, got {type(setting).__name__}"
        )


class _Off:
    """The trace of a flow run with tracing off: every method does nothing."""

    __slots__ = ()

    def start(self, step: Any) -> None:
        return None

    def active(self, span: Any) -> _Off:
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None

    def iterate(self, span: Any, chunks: Iterable[T]) -> Iterable[T]:
        return chunks

    def aiterate(self, span: Any, chunks: AsyncIterator[T]) -> AsyncIterator[T]:
        return chunks

    def done(self, span: Any, step: Any, value: Any) -> None:
        return None

    def failed(self, span: Any, exc: BaseException) -> None:
        return None

    def finish(self, result: RouteResult) -> None:
        return None

    def fail(self, exc: BaseException) -> None:
        return None

    def close(self) -> None:
        return None


#: The trace of every flow run with tracing off.
OFF = _Off()


def start_trace(flow: Any, *, batch: bool = False) -> FlowTrace | _Off:
    """The trace of ``flow``: :class:`FlowTrace` when its config turns tracing on, else
    :data:`OFF` (a flow that is not a :class:`~selfroute._flow._core.RouteFlow` is not traced).
    ``batch``: the flow runs in a batch job (see the module docstring)."""
    config = getattr(flow, "config", None)
    setting = getattr(config, "tracing", None)
    if setting is None or setting is False:
        return OFF
    trace = _otel()
    try:
        provider = trace.get_tracer_provider() if setting is True else setting
        return FlowTrace(provider.get_tracer(TRACER_NAME), flow.question, config, batch=batch)
    except Exception:  # tracing must not break a call
        _log.warning("selfroute: tracing failed to start", exc_info=True)
        return OFF


def _kind(value: str) -> dict[str, Any]:
    return {"openinference.span.kind": value}


def _record_error(span: Any, exc: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    message = redact_exception(exc)
    stack = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    attributes = {"exception.message": message, "exception.stacktrace": redact(stack)}
    span.record_exception(exc, attributes=attributes)
    span.set_status(Status(StatusCode.ERROR, message))


F = TypeVar("F", bound=Callable[..., Any])


def _never_raises(method: F) -> F:
    """A trace method whose failure is logged, never raised: tracing must not break a call."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception:
            _log.warning("selfroute: tracing failed in %s", method.__name__, exc_info=True)
            return None

    return cast(F, guarded)


#: OpenInference's switches (environment variables) and the attributes each one hides.
_HIDING = {
    "OPENINFERENCE_HIDE_INPUTS": ("input.value", "input.mime_type", "llm.input_messages."),
    "OPENINFERENCE_HIDE_INPUT_MESSAGES": ("llm.input_messages.",),
    "OPENINFERENCE_HIDE_OUTPUTS": ("output.value", "output.mime_type", "llm.output_messages."),
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES": ("llm.output_messages.",),
}


def _hidden_prefixes() -> tuple[str, ...]:
    """The attribute prefixes hidden by the ``OPENINFERENCE_HIDE_*`` variables set to true."""
    out: list[str] = []
    for name, prefixes in _HIDING.items():
        if os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on"):
            out.extend(prefixes)
    return tuple(out)


def _visible(attributes: Mapping[str, Any], hidden: tuple[str, ...]) -> dict[str, Any]:
    """``attributes`` without ``None`` values and without what the switches hide (retrieved
    document text counts as output)."""
    out = {k: v for k, v in attributes.items() if v is not None}
    if hidden:
        drop_docs = "output.value" in hidden
        out = {
            k: v
            for k, v in out.items()
            if not k.startswith(hidden) and not (drop_docs and k.endswith(".document.content"))
        }
    return out


def _documents(passages: Any) -> dict[str, Any]:
    """``retrieval.documents.N.document.*`` of what a retriever returned."""
    out: dict[str, Any] = {}
    items = passages if isinstance(passages, Sequence) else ()
    for i, p in enumerate(items):
        prefix = f"retrieval.documents.{i}.document."
        out[prefix + "content"] = str(getattr(p, "text", p))
        doc_id = getattr(p, "doc_id", None)
        if doc_id is not None:
            out[prefix + "id"] = str(doc_id)
        score = getattr(p, "score", None)
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            out[prefix + "score"] = float(score)
        metadata = getattr(p, "metadata", None)
        if metadata:
            out[prefix + "metadata"] = json.dumps(dict(metadata), default=str, sort_keys=True)
    return out


class _StepSpan:
    """A child span and what the trace keeps about it until it ends."""

    __slots__ = ("context", "deferred", "end_ns", "ended", "generation", "span", "stage")

    def __init__(self, span: Any, context: Any, stage: Stage | None, deferred: bool) -> None:
        self.span = span
        self.context = context
        self.stage = stage
        self.deferred = deferred  # kept open until flush() (a batch question's span)
        self.generation: Generation | None = None
        self.end_ns: int | None = None
        self.ended = False

    def end(self, end_ns: int | None = None) -> None:
        if not self.ended:
            self.ended = True
            if self.deferred:
                self.end_ns = end_ns if end_ns is not None else time.time_ns()
            else:
                self.span.end(end_time=end_ns)

    def flush(self) -> None:
        """End a deferred span, with the end time it was given."""
        if self.deferred:
            self.deferred = False
            self.span.end(end_time=self.end_ns)


class _Active:
    """Makes a span the current one while a step runs (no yield may happen inside)."""

    __slots__ = ("context", "token")

    def __init__(self, context: Any) -> None:
        self.context = context

    def __enter__(self) -> None:
        from opentelemetry import context

        self.token = context.attach(self.context)

    def __exit__(self, *exc: object) -> None:
        from opentelemetry import context

        context.detach(self.token)


class FlowTrace:
    """The spans of one routed question (see the module docstring).

    Args:
        tracer: The OpenTelemetry tracer.
        question: The question.
        config: The flow's :class:`~selfroute.RouteConfig`.
        batch: The flow runs in a batch job: ``selfroute.batch=true`` on every span, and no
            span ends before the question's.
    """

    def __init__(self, tracer: Any, question: str, config: Any, *, batch: bool = False) -> None:
        trace = _otel()
        self._config = config
        self._tracer = tracer
        attributes = {
            **_kind("CHAIN"),
            "input.value": question,
            "input.mime_type": "text/plain",
            "selfroute.k": config.k,
            "selfroute.verdict_mode": config.verdict.value,
        }
        if config.k_ladder:
            attributes["selfroute.k_ladder"] = list(config.k_ladder)
        self._batch = batch
        self._extra: dict[str, Any] = {"selfroute.batch": True} if batch else {}
        attributes.update(self._extra)
        self._hidden = _hidden_prefixes()
        self._root = tracer.start_span("SelfRoute", attributes=self._visible(attributes))
        self._context = trace.set_span_in_context(self._root)
        self._spans: list[_StepSpan] = []
        self._speculating: dict[int, _StepSpan] = {}
        self._closed = False

    def _visible(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        return _visible(attributes, self._hidden)

    def _set(self, span: Any, attributes: Mapping[str, Any]) -> None:
        span.set_attributes(self._visible(attributes))

    # steps -----------------------------------------------------------------------------------
    def _child(self, name: str, attributes: dict[str, Any], stage: Stage | None) -> _StepSpan:
        span = self._tracer.start_span(
            name, context=self._context, attributes=self._visible({**attributes, **self._extra})
        )
        from opentelemetry import trace

        context = trace.set_span_in_context(span, self._context)
        child = _StepSpan(span, context, stage, self._batch)
        self._spans.append(child)
        return child

    def _llm_span(self, step: Generate) -> _StepSpan:
        attributes = {
            **_kind("LLM"),
            "input.value": step.prompt,
            "input.mime_type": "text/plain",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": step.prompt,
            "selfroute.stage": step.stage.value,
            "selfroute.speculative": step.speculative,
        }
        if step.k is not None:
            attributes["selfroute.k"] = step.k
        return self._child(f"selfroute.{step.stage.value}", attributes, step.stage)

    @_never_raises
    def start(self, step: Any) -> _StepSpan | None:
        """The span of ``step`` (started now; ``Settle`` continues its speculative call's)."""
        if isinstance(step, Retrieve):
            attributes = {**_kind("RETRIEVER"), "input.value": step.question, "selfroute.k": step.k}
            return self._child("selfroute.retrieve", attributes, None)
        if isinstance(step, LoadLongContext):
            attributes = {**_kind("CHAIN"), "selfroute.purpose": step.purpose}
            return self._child("selfroute.load_long_context", attributes, None)
        if isinstance(step, Generate):
            return self._llm_span(step)
        if isinstance(step, Speculate):
            return self._llm_span(step.generate)
        if isinstance(step, Settle):
            return self._speculating.pop(id(step.handle), None)
        return None

    def active(self, span: _StepSpan | None) -> Any:
        """A context manager making ``span`` current while its step runs."""
        return _Active(span.context) if span is not None else OFF

    def iterate(self, span: _StepSpan | None, chunks: Iterable[T]) -> Iterator[T]:
        """``chunks`` with ``span`` current while each chunk is fetched (not between them)."""
        iterator = iter(chunks)
        active = self.active(span)
        try:
            while True:
                with active:
                    try:
                        chunk = next(iterator)
                    except StopIteration:
                        return
                yield chunk
        finally:
            close = getattr(iterator, "close", None)
            if callable(close):
                close()

    async def aiterate(self, span: _StepSpan | None, chunks: AsyncIterator[T]) -> AsyncIterator[T]:
        """Async :meth:`iterate`."""
        iterator = chunks.__aiter__()
        active = self.active(span)
        try:
            while True:
                with active:
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        return
                yield chunk
        finally:
            aclose = getattr(iterator, "aclose", None)
            if callable(aclose):
                await aclose()

    @_never_raises
    def done(self, span: _StepSpan | None, step: Any, value: Any) -> None:
        """``step`` answered ``value``: retrieval and loading spans end now; a model call's when
        the result is known (a speculative one's when it is settled)."""
        if span is None:
            return
        if isinstance(step, Retrieve):
            count = len(value) if isinstance(value, Sequence) else None
            self._set(span.span, {**_documents(value), "selfroute.retrieved": count})
            span.end()
        elif isinstance(step, LoadLongContext):
            count = len(value) if isinstance(value, Sequence) else 0
            span.span.set_attribute("selfroute.documents", count)
            span.end()
        elif isinstance(step, Speculate):
            self._speculating[id(value)] = span
        else:  # Generate, or the Settle of a speculative call (None: cancelled unfinished)
            span.generation = value if isinstance(value, Generation) else None
            span.end_ns = time.time_ns()
            if isinstance(step, Settle) and step.cancel:
                span.span.set_attribute("selfroute.wasted", True)

    @_never_raises
    def failed(self, span: _StepSpan | None, exc: BaseException) -> None:
        """``step`` failed (the flow decides whether the call fails): its span ends in error."""
        if span is None:
            return
        _record_error(span.span, exc)
        span.end()

    # the question ----------------------------------------------------------------------------
    def _end_calls(self, records: Sequence[StepRecord]) -> None:
        """End the model-call spans, each with what the flow recorded for it."""
        for stage in (Stage.RAG, Stage.LONG_CONTEXT):
            calls = [s for s in self._spans if s.stage is stage]
            recorded = [r for r in records if r.stage is stage]
            for i, call in enumerate(calls):
                if call.ended:
                    continue
                record = recorded[i] if i < len(recorded) else None
                self._set(call.span, self._call_attributes(call, record))
                call.end(call.end_ns)

    def _call_attributes(self, call: _StepSpan, record: StepRecord | None) -> dict[str, Any]:
        gen = call.generation
        if record is None:
            usage = gen.usage if gen is not None else None
            model, output = (gen.model, gen.text) if gen is not None else (None, None)
            finish = gen.finish_reason if gen is not None else None
        else:
            usage, model, output = record.usage, record.model, record.output
            finish = record.finish_reason
        out: dict[str, Any] = {"llm.model_name": model, "llm.finish_reason": finish}
        if output is not None:
            out.update(
                {
                    "output.value": output,
                    "output.mime_type": "text/plain",
                    "llm.output_messages.0.message.role": "assistant",
                    "llm.output_messages.0.message.content": output,
                }
            )
        if usage is not None:
            out.update(
                {
                    "llm.token_count.prompt": usage.input_tokens,
                    "llm.token_count.completion": usage.output_tokens,
                    "llm.token_count.total": usage.total_tokens,
                    "llm.token_count.prompt_details.cache_read": usage.cached_input_tokens,
                    "selfroute.tokens.source": usage.source,
                }
            )
            prices = self._config.prices
            if prices is not None:
                out["llm.cost.total"] = prices.cost(model, usage, batch=self._batch)
        if record is not None:
            out["selfroute.verdict"] = record.verdict
            out["selfroute.wasted"] = record.wasted or None
            out["selfroute.structured"] = record.structured or None
            out["selfroute.grounded"] = record.grounded
            out["selfroute.step_error"] = record.error
        return out

    def _result_attributes(self, result: RouteResult) -> dict[str, Any]:
        usage = result.usage
        return {
            "output.value": result.answer if result.answer is not None else "",
            "output.mime_type": "text/plain",
            "selfroute.route": result.route.value,
            "selfroute.reason": result.reason.value,
            "selfroute.verdict": result.rag_verdict,
            "selfroute.long_context_verdict": result.long_context_verdict,
            "selfroute.k_used": result.k_used,
            "selfroute.abstention": result.abstention.value if result.abstention else None,
            "selfroute.tokens.input": usage.input_tokens,
            "selfroute.tokens.output": usage.output_tokens,
            "selfroute.tokens.total": usage.total_tokens,
            "selfroute.tokens.rag": result.stage_usage(Stage.RAG).total_tokens,
            "selfroute.tokens.long_context": result.stage_usage(Stage.LONG_CONTEXT).total_tokens,
            "selfroute.always_lc_tokens": result.long_context_tokens,
            "selfroute.always_lc_tokens_source": result.long_context_tokens_source,
            "selfroute.token_ratio": result.token_ratio,
            "selfroute.cost": result.cost,
            "selfroute.always_lc_cost": result.long_context_cost,
            "selfroute.error": result.error,
        }

    @_never_raises
    def finish(self, result: RouteResult) -> None:
        """The flow returned ``result``: end every span, the question's with status OK."""
        from opentelemetry.trace import Status, StatusCode

        self._end_calls(result.steps)
        self._set(self._root, self._result_attributes(result))
        self._root.set_status(Status(StatusCode.OK))
        self._end_root()

    @_never_raises
    def fail(self, exc: BaseException) -> None:
        """The call failed with ``exc``: the question's span ends in error (with the partial
        result's facts when ``exc`` carries one)."""
        partial = exc.partial if isinstance(exc, LongContextError) else None
        self._end_calls(partial.steps if partial is not None else ())
        if partial is not None:
            attributes = self._result_attributes(partial)
            attributes.pop("output.value")
            attributes.pop("output.mime_type")
            self._set(self._root, attributes)
        _record_error(self._root, exc)
        self._end_root()

    def _end_root(self) -> None:
        if not self._closed:
            self._closed = True
            for span in self._spans:
                span.flush()
            self._root.end()

    @_never_raises
    def close(self) -> None:
        """End whatever is still open (the run was cancelled or its stream abandoned)."""
        if self._closed:
            return
        self._end_calls(())
        for span in self._spans:
            span.end()
        self._root.set_attribute("selfroute.incomplete", True)
        self._end_root()
