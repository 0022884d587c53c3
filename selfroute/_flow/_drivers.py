"""The two drivers that run the flow: :func:`drive` (sync) and :func:`adrive` (async).

Each sends every step the flow yields to a handler (an adapter's translation into framework calls)
and feeds the answer back -- the way httpx writes one ``auth_flow`` and drives it from ``Client``
and ``AsyncClient``. A handler failure is thrown back into the flow, which decides what to do
(escalate or raise). Cancellation (:class:`asyncio.CancelledError`, ``KeyboardInterrupt``) is never
caught.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from dataclasses import dataclass, replace
from typing import Any, cast

from selfroute._errors import SelfRouteError
from selfroute._faults import mark_processed
from selfroute._flow._steps import (
    AsyncStepHandler,
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    Retrieve,
    Settle,
    Speculate,
    Step,
    StepHandler,
)
from selfroute._flow._timeouts import (
    abounded,
    abounded_stream,
    bounded,
    bounded_stream,
    step_subject,
    timeout_error,
)
from selfroute._flow._tracing import start_trace
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._result import Reason, Route, RouteResult, Stage
from selfroute._streaming import SentinelSniffer
from selfroute._structured_stream import StreamStatus, VerdictStream
from selfroute._usage import Usage

__all__ = [
    "FlowEvent",
    "ResultEvent",
    "RouteEvent",
    "TokenEvent",
    "adrive",
    "arun_flow",
    "drive",
    "run_flow",
]


@dataclass(frozen=True)
class TokenEvent:
    """Answer text that can be shown to the user.

    Attributes:
        text: The text delta.
        stage: The stage that wrote it.
    """

    text: str
    stage: Stage


@dataclass(frozen=True)
class RouteEvent:
    """The route became known, or changed.

    Emitted before the first token of each route. ``retracted`` is true when text of the RAG
    answer was already emitted and the full output then turned out to be a decline (a refusal whose
    opening looked like an answer): callers should discard the text shown so far.
    """

    route: Route
    reason: Reason | None = None
    retracted: bool = False


@dataclass(frozen=True)
class ResultEvent:
    """The last event: the full result."""

    result: RouteResult


FlowEvent = TokenEvent | RouteEvent | ResultEvent


class _StreamState:
    """Shared bookkeeping of the two drivers for streaming (no I/O)."""

    def __init__(self) -> None:
        self.sniffer: SentinelSniffer | None = None
        self.preview: VerdictStream | None = None
        self.holding = False
        self.emitted_rag = False
        self.lc_held = False

    def start(self, step: Generate) -> None:
        self.parts: list[str] = []
        self.usage: Usage | None = None
        self.last: GenerationChunk | None = None
        self.obj: GenerationChunk | None = None
        self.finish_reason: str | None = None
        self.holding = step.hold
        self.preview = None
        if step.stage is Stage.RAG and not step.hold:
            self.sniffer = _sniffer(step)
        else:
            self.sniffer = None
        if step.stage is Stage.LONG_CONTEXT:
            self.lc_held = step.hold

    def broke(self, exc: BaseException) -> None:
        """The stream failed: if chunks had arrived, the provider worked on the call."""
        if getattr(self, "last", None) is not None or any(getattr(self, "parts", ())):
            mark_processed(exc, "".join(self.parts))

    def generation(self, latency_s: float = 0.0) -> Generation:
        """The streamed call as one :class:`Generation` (text joined, usage summed, the model
        name and any structured object kept), ``latency_s`` set (built once, not copied by
        ``dataclasses.replace`` to set it)."""
        obj = self.obj
        structured = obj.structured if obj is not None else None
        error = obj.structured_error if obj is not None else None
        preview = self.preview
        if structured is not None and preview is not None and preview.live:
            # the streamed object never closed: what the client's parser made of it (partial
            # JSON parsers repair a cut-off object) is no verdict
            structured, error = None, "the streamed object ended before it was complete"
        return Generation(
            text="".join(self.parts),
            usage=self.usage,
            model=self.last.model if self.last is not None else None,
            structured=structured,
            structured_error=error,
            finish_reason=self.finish_reason,
            latency_s=latency_s,
        )

    def feed(self, step: Generate, chunk: GenerationChunk) -> list[FlowEvent]:
        """Keep ``chunk``; return the events it releases (called once per streamed piece: the
        pieces that only carry text take the shortest way)."""
        text = chunk.text
        self.parts.append(text or "")
        if chunk.model or self.last is None:
            self.last = chunk
        if chunk.usage is not None:
            self.usage = chunk.usage if self.usage is None else self.usage + chunk.usage
        if chunk.structured is not None or chunk.structured_error is not None:
            self.obj = chunk
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.structured_delta:
            return self._preview(step, chunk.structured_delta)
        if not text or self.holding:
            return []
        if step.stage is Stage.RAG:
            assert self.sniffer is not None
            released = self.sniffer.feed(text)
            if released and self.emitted_rag:
                return [_token(released, Stage.RAG)]
            return self._release(released)
        return [_token(text, Stage.LONG_CONTEXT)]

    def _release(self, released: str) -> list[FlowEvent]:
        """Events showing ``released`` RAG text (the route first, the first time)."""
        if not released:
            return []
        events: list[FlowEvent] = []
        if not self.emitted_rag:
            self.emitted_rag = True
            events.append(RouteEvent(Route.RAG, Reason.ANSWERED))
        events.append(_token(released, Stage.RAG))
        return events

    def _preview(self, step: Generate, delta: str) -> list[FlowEvent]:
        """Read a piece of a streamed structured verdict: once ``answerable`` is true, its
        ``answer`` text goes through the sniffer as plain RAG text does (a decline written into
        the answer is held back too); a false or unreadable verdict shows nothing (the whole
        object decides). Grounded answers are held until their quotes are checked."""
        if step.stage is not Stage.RAG or step.structured is None:
            return []
        if self.preview is None:
            self.preview = VerdictStream()
            self.sniffer = _sniffer(step)
        text = self.preview.feed(delta)
        if not text or step.grounded or self.preview.status is not StreamStatus.ANSWERING:
            return []
        assert self.sniffer is not None
        return self._release(self.sniffer.feed(text))

    def before_step(self, step: Step) -> list[FlowEvent]:
        """Called with each step after the first RAG generation: announce the LC route, or take
        back RAG text shown by a rung that then turned out to decline."""
        if isinstance(step, Settle) and not step.cancel:  # the speculative LC call is the answer
            retracted = self.emitted_rag
            self.emitted_rag = False
            self.lc_held = True  # it ran unstreamed: its text is emitted with the result
            return [RouteEvent(Route.LONG_CONTEXT, None, retracted=retracted)]
        if not isinstance(step, Generate):
            return []
        retracted = self.emitted_rag
        self.emitted_rag = False
        if step.stage is Stage.LONG_CONTEXT:
            return [RouteEvent(Route.LONG_CONTEXT, None, retracted=retracted)]
        if retracted:  # the next rung of the k-ladder
            return [RouteEvent(Route.RAG, None, retracted=True)]
        return []

    def finish(self, result: RouteResult) -> list[FlowEvent]:
        events: list[FlowEvent] = []
        answer = result.answer
        if result.route is Route.RAG and answer:
            if self.emitted_rag and self.sniffer is not None:
                rest = self.sniffer.remainder(answer)
            else:  # nothing shown yet: held (structured/grounded) or never released
                events.append(RouteEvent(Route.RAG, result.reason))
                rest = answer
            if rest:
                events.append(TokenEvent(rest, Stage.RAG))
        elif result.route is Route.LONG_CONTEXT and self.lc_held and answer:
            events.append(TokenEvent(answer, Stage.LONG_CONTEXT))
        events.append(ResultEvent(result))
        return events


def _token(text: str, stage: Stage) -> TokenEvent:
    """``TokenEvent(text, stage)``, built for less (one per streamed token; a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``)."""
    event = object.__new__(TokenEvent)
    state = event.__dict__
    state["text"] = text
    state["stage"] = stage
    return event


def _sniffer(step: Generate) -> SentinelSniffer:
    return SentinelSniffer(
        sentinel=step.sentinel or DEFAULT_SENTINEL,
        strict=step.strict,
        hold_chars=step.hold_chars,
        question=step.question,
        detector=step.detector,
    )


def _timed(gen: Any, t0: float) -> Any:
    """``gen`` with its latency set; anything else is passed on for the flow to reject."""
    return replace(gen, latency_s=time.perf_counter() - t0) if isinstance(gen, Generation) else gen


class _ThreadSpeculation:
    """A speculative call of the sync driver: ``handler.stream`` in a daemon thread.

    A blocked socket cannot be interrupted from another thread, but a stream can be closed: once
    cancelled, the thread stops reading at the next chunk and closes the stream, which closes the
    HTTP response, so the provider stops generating (and billing output) instead of running the
    request to its end. Before the first chunk arrives the request cannot be cut.
    """

    def __init__(self, handler: StepHandler, step: Generate) -> None:
        self.t0 = time.perf_counter()
        self.box: dict[str, Any] = {}
        self.done = threading.Event()
        self.cancelled = threading.Event()
        context = contextvars.copy_context()  # callbacks and tracing see the caller's context

        def run() -> None:
            try:
                self.box["value"] = context.run(self._collect, handler, step)
            except BaseException as exc:  # handed over when settled
                self.box["error"] = exc
            finally:
                self.done.set()

        threading.Thread(target=run, name="selfroute-speculate", daemon=True).start()

    def _collect(self, handler: StepHandler, step: Generate) -> Generation | None:
        collected = _StreamState()
        collected.start(step)
        chunks = iter(handler.stream(step))
        try:
            for chunk in chunks:
                if self.cancelled.is_set():
                    return None
                collected.feed(step, chunk)
        except Exception as exc:
            collected.broke(exc)
            raise
        finally:
            close = getattr(chunks, "close", None)
            if callable(close):
                close()  # a generator's close closes the HTTP response under it
        return collected.generation()

    def settle(self, cancel: bool, timeout_s: float | None = None) -> Any:
        if cancel:
            self.cancelled.set()
            if self.done.is_set() and "error" not in self.box:
                return _timed(self.box["value"], self.t0)
            return None
        if not self.done.wait(timeout_s):
            self.cancelled.set()
            raise timeout_error("the model", timeout_s or 0.0)
        if "error" in self.box:
            raise self.box["error"]
        return _timed(self.box["value"], self.t0)


class _TaskSpeculation:
    """A speculative call of the async driver: ``handler.agenerate`` as a task."""

    def __init__(self, handler: AsyncStepHandler, step: Generate) -> None:
        self.t0 = time.perf_counter()
        self.task: asyncio.Future[Generation] = asyncio.ensure_future(handler.agenerate(step))

    async def settle(self, cancel: bool, timeout_s: float | None = None) -> Any:
        task = self.task
        if cancel:
            if task.done() and not task.cancelled() and task.exception() is None:
                return _timed(task.result(), self.t0)
            task.cancel()
            return None
        return _timed(await abounded(task, timeout_s, "the model"), self.t0)


def _run_step(handler: StepHandler, step: Step, t0: float) -> Any:
    """Answer a step that does not stream (the sync driver's handler call, with its time limit)."""
    if isinstance(step, Retrieve):
        return bounded(
            functools.partial(handler.retrieve, step), step.timeout_s, step_subject(step)
        )
    if isinstance(step, LoadLongContext):
        load = functools.partial(handler.load_long_context, step)
        return bounded(load, step.timeout_s, step_subject(step))
    if isinstance(step, Speculate):
        return _ThreadSpeculation(handler, step.generate)
    if isinstance(step, Settle):
        return step.handle.settle(step.cancel, step.timeout_s)
    if isinstance(step, Generate):
        call = functools.partial(handler.generate, step)
        return _timed(bounded(call, step.timeout_s, step_subject(step)), t0)
    raise SelfRouteError(f"unknown step {step!r}")  # pragma: no cover - defensive


async def _arun_step(
    handler: AsyncStepHandler, step: Step, t0: float, speculations: list[_TaskSpeculation]
) -> Any:
    """Async :func:`_run_step`."""
    if isinstance(step, Retrieve):
        return await abounded(handler.aretrieve(step), step.timeout_s, step_subject(step))
    if isinstance(step, LoadLongContext):
        load = handler.aload_long_context(step)
        return await abounded(load, step.timeout_s, step_subject(step))
    if isinstance(step, Speculate):
        speculation = _TaskSpeculation(handler, step.generate)
        speculations.append(speculation)
        return speculation
    if isinstance(step, Settle):
        return await step.handle.settle(step.cancel, step.timeout_s)
    if isinstance(step, Generate):
        call = handler.agenerate(step)
        return _timed(await abounded(call, step.timeout_s, step_subject(step)), t0)
    raise SelfRouteError(f"unknown step {step!r}")  # pragma: no cover - defensive


def drive(
    flow: Generator[Step, Any, RouteResult], handler: StepHandler, *, stream: bool = False
) -> Iterator[FlowEvent]:
    """Run ``flow`` with a sync ``handler``, yielding events; the last is a :class:`ResultEvent`.

    With ``stream=True`` model calls go through ``handler.stream`` and answer text is yielded as
    :class:`TokenEvent` (RAG text only once it can no longer be a decline). Each step is
    reported to the flow's trace (OpenTelemetry spans when its config turns tracing on).
    """
    state = _StreamState()
    send: Any = None
    error: BaseException | None = None
    trace = start_trace(flow)
    try:
        while True:
            try:
                step = flow.throw(error) if error is not None else flow.send(send)
            except StopIteration as stop:
                trace.finish(stop.value)
                yield from state.finish(stop.value)
                return
            except Exception as exc:
                trace.fail(exc)
                raise
            send, error = None, None
            if stream:
                yield from state.before_step(step)
            t0 = time.perf_counter()
            span = trace.start(step)
            try:
                if stream and isinstance(step, Generate):
                    state.start(step)
                    try:
                        chunks = trace.iterate(span, handler.stream(step))
                        for chunk in bounded_stream(chunks, step.timeout_s):
                            yield from state.feed(step, chunk)
                    except Exception as exc:
                        state.broke(exc)
                        raise
                    send = state.generation(time.perf_counter() - t0)
                else:
                    with trace.active(span):
                        send = _run_step(handler, step, t0)
            except Exception as exc:
                trace.failed(span, exc)
                error = exc
            else:
                trace.done(span, step, send)
    finally:  # failed, finished, or the stream abandoned: every span ends
        trace.close()


async def adrive(
    flow: Generator[Step, Any, RouteResult], handler: AsyncStepHandler, *, stream: bool = False
) -> AsyncIterator[FlowEvent]:
    """Async twin of :func:`drive`: awaits the handler, never blocks the event loop."""
    state = _StreamState()
    send: Any = None
    error: BaseException | None = None
    speculations: list[_TaskSpeculation] = []
    trace = start_trace(flow)
    try:
        while True:
            try:
                step = flow.throw(error) if error is not None else flow.send(send)
            except StopIteration as stop:
                trace.finish(stop.value)
                for ev in state.finish(stop.value):
                    yield ev
                return
            except Exception as exc:
                trace.fail(exc)
                raise
            send, error = None, None
            if stream:
                for ev in state.before_step(step):
                    yield ev
            t0 = time.perf_counter()
            span = trace.start(step)
            try:
                if stream and isinstance(step, Generate):
                    state.start(step)
                    try:
                        chunks = trace.aiterate(span, handler.astream(step))
                        async for chunk in abounded_stream(chunks, step.timeout_s):
                            for ev in state.feed(step, chunk):
                                yield ev
                    except Exception as exc:
                        state.broke(exc)
                        raise
                    send = state.generation(time.perf_counter() - t0)
                else:
                    with trace.active(span):
                        send = await _arun_step(handler, step, t0, speculations)
            except Exception as exc:
                trace.failed(span, exc)
                error = exc
            else:
                trace.done(span, step, send)
    finally:  # cancelled, failed or finished: no speculative call outlives the run
        for spec in speculations:
            spec.task.cancel()
        trace.close()


def run_flow(flow: Generator[Step, Any, RouteResult], handler: StepHandler) -> RouteResult:
    """Run ``flow`` to completion with a sync handler and return its result."""
    for event in drive(flow, handler):
        if isinstance(event, ResultEvent):
            return event.result
    raise SelfRouteError("flow ended without a result")  # pragma: no cover


async def arun_flow(
    flow: Generator[Step, Any, RouteResult], handler: AsyncStepHandler
) -> RouteResult:
    """Run ``flow`` to completion with an async handler and return its result.

    The driver is closed the moment it gives the result, not finalised by the event loop later:
    until then it would hold the flow (its long-context prompt, a copy of the whole document) and
    any speculative call it has not cancelled yet."""
    events = cast(AsyncGenerator[FlowEvent, None], adrive(flow, handler))
    async with contextlib.aclosing(events):
        async for event in events:
            if isinstance(event, ResultEvent):
                return event.result
    raise SelfRouteError("flow ended without a result")  # pragma: no cover
