"""The handle of a batch job: ``status()``, ``wait()``, ``results()`` and their async twins.

:class:`BatchJob` runs :meth:`JobCore.advance <selfroute._batch._core.JobCore.advance>` with a
sync or an async executor: the sync one calls the handler and the backend directly, the async
one awaits their ``a``-methods (never blocking the event loop).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from selfroute._batch._core import (
    DEADLINE_NOTE,
    SPECULATION_NOTE,
    BatchEvent,
    BatchItem,
    BatchOutcome,
    Cancel,
    Fetch,
    Find,
    FlowFactory,
    JobCore,
    JobStatus,
    Op,
    Poll,
    RunStep,
    Submit,
)
from selfroute._batch._settings import job_settings
from selfroute._batch._store import JobStore
from selfroute._errors import ConfigurationError, InvalidInputError, SelfRouteError
from selfroute._flow import Retrieve, RouteConfig, self_route_flow
from selfroute._flow._timeouts import abounded, bounded, step_subject
from selfroute._pricing import PriceTable

__all__ = ["BatchJob", "as_items", "batch_config"]

HandlerSource = Any  # a handler, or ``item -> handler``


def as_items(inputs: Iterable[Any]) -> list[BatchItem]:
    """Batch items from questions, ``{"id", "question"}`` mappings or :class:`BatchItem`.

    Items without an id are numbered by position; ids must be unique.
    """
    items: list[BatchItem] = []
    for i, value in enumerate(inputs):
        if isinstance(value, BatchItem):
            item = value
        elif isinstance(value, str):
            item = BatchItem(str(i), value)
        elif isinstance(value, Mapping):
            if "question" not in value:
                raise InvalidInputError(f"input {i} has no 'question': {dict(value)!r}")
            ident = value.get("id")
            item = BatchItem(str(i) if ident is None else str(ident), value["question"], value)
        else:
            raise InvalidInputError(
                f"input {i} must be a question, a mapping with 'question' or a BatchItem; got "
                f"{type(value).__name__}"
            )
        if not isinstance(item.question, str):
            raise InvalidInputError(f"input {i}: question must be a string")
        items.append(item)
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise InvalidInputError(f"duplicate item id {item.id!r}")
        seen.add(item.id)
    return items


def batch_config(config: RouteConfig) -> tuple[RouteConfig, tuple[str, ...]]:
    """``config`` as a batch run uses it, and the notes on what changed (speculation and the
    per-question deadline off)."""
    notes: list[str] = []
    if config.speculate_below is not None:
        config = replace(config, speculate_below=None)
        notes.append(SPECULATION_NOTE)
    if config.deadline_s is not None:
        config = replace(config, deadline_s=None)
        notes.append(DEADLINE_NOTE)
    return config, tuple(notes)


def _backend_name(backend: Any) -> str:
    name = getattr(backend, "name", None)
    if not isinstance(name, str) or not callable(getattr(backend, "model_for", None)):
        raise ConfigurationError(
            f"{type(backend).__name__} is not a batch backend (it needs name, model_for, submit, "
            "find, poll, fetch and cancel; see selfroute.BatchBackend)"
        )
    return name


class BatchJob:
    """Many Self-Route questions answered through a provider batch API, in phases.

    Phase 1 sends every question's RAG prompt as one batch; phase 2 the long-context prompts of
    the questions whose RAG step declined (or the next k-ladder rung); and so on. Retrieval runs
    locally. With ``job_file`` the job survives the process: run the same code again and it
    resumes where it stopped, without submitting finished work again.

    Args:
        inputs: Questions, ``{"id", "question", ...}`` mappings or :class:`BatchItem`.
        config: The flow's settings (``speculate_below`` is switched off, with a note).
        handler: Runs ``Retrieve`` and ``LoadLongContext`` (a :class:`~selfroute.flow.StepHandler`
            or, for the async methods, an :class:`~selfroute.flow.AsyncStepHandler`), or a
            function ``item -> handler`` for per-question handlers.
        backend: The provider's batch API (:class:`OpenAIBatchBackend`,
            :class:`GeminiBatchBackend`, or your own :class:`BatchBackend`).
        job_file: Where the job state lives (``None``: in memory only, not resumable).
        flow: Build each item's flow yourself instead (``item -> generator``); ``config`` is
            then only used for prices.
        prices: Price table for batch costs (defaults to ``config.prices``).
        poll_interval_s: First pause between polls in :meth:`wait` (default: the
            ``SELFROUTE_BATCH_POLL_S`` environment variable, else 30 s).
        max_poll_interval_s: The pause grows by half each idle poll up to this (default: ten
            times ``poll_interval_s``).
        max_attempts: Batches a request may be lost in (expired, failed) before it counts as a
            failed model call (which the flow escalates as it would online).
        on_event: Called with each :class:`BatchEvent` (progress display).
        settings: What else the answers depend on (the command line gives its retrieval
            settings), recorded in the job file beside the flow's settings and the backend's
            models and options: a rerun whose settings differ raises a
            :class:`~selfroute.ConfigurationError` naming them, before anything is sent.

    Raises:
        ConfigurationError: The job file is damaged, belongs to other questions, other
            settings or another provider, or another run of the job holds it (each run locks
            the job file until its :meth:`results` return or :meth:`close`).
    """

    def __init__(
        self,
        inputs: Iterable[Any],
        *,
        handler: HandlerSource,
        backend: Any,
        config: RouteConfig | None = None,
        job_file: str | os.PathLike[str] | None = None,
        flow: FlowFactory | None = None,
        prices: PriceTable | None = None,
        poll_interval_s: float | None = None,
        max_poll_interval_s: float | None = None,
        max_attempts: int = 3,
        on_event: Callable[[BatchEvent], None] | None = None,
        settings: Mapping[str, Any] | None = None,
    ) -> None:
        self.items = as_items(inputs)
        name = _backend_name(backend)
        cfg, notes = batch_config(config or RouteConfig())
        self.config = cfg
        if flow is None:

            def flow(item: BatchItem) -> Any:
                return self_route_flow(item.question, cfg)

        self.backend = backend
        self._handler = handler
        if poll_interval_s is None:
            poll_interval_s = float(os.environ.get("SELFROUTE_BATCH_POLL_S") or 30.0)
        self.poll_interval_s = float(poll_interval_s)
        if max_poll_interval_s is None:
            max_poll_interval_s = self.poll_interval_s * 10
        self.max_poll_interval_s = max(float(max_poll_interval_s), self.poll_interval_s)
        wanted = job_settings(cfg, backend, settings)
        store = JobStore(job_file, name, [(it.id, it.question) for it in self.items], wanted)
        notes = (*notes, *store.notes)
        self._core = JobCore(
            store,
            self.items,
            flow,
            backend_name=name,
            model_for=backend.model_for,
            one_model_per_batch=bool(getattr(backend, "one_model_per_batch", False)),
            limits=(getattr(backend, "max_requests", None), getattr(backend, "max_bytes", None)),
            prices=prices if prices is not None else cfg.prices,
            max_attempts=max_attempts,
            on_event=on_event,
            notes=notes,
        )

    @property
    def job_file(self) -> str | None:
        """The job file, or ``None``."""
        path = self._core.store.path
        return str(path) if path is not None else None

    def _handler_for(self, item: BatchItem) -> Any:
        h = self._handler
        if callable(h) and not hasattr(h, "retrieve") and not hasattr(h, "aretrieve"):
            return h(item)
        return h

    # -- executors -------------------------------------------------------------------------------
    def _execute(self, op: Op) -> Any:
        b = self.backend
        if isinstance(op, RunStep):
            handler, step = self._handler_for(op.item), op.step
            call = handler.retrieve if isinstance(step, Retrieve) else handler.load_long_context
            return bounded(functools.partial(call, step), step.timeout_s, step_subject(step))
        if isinstance(op, Submit):
            return b.submit(op.requests, op.token)
        if isinstance(op, Find):
            return b.find(op.token)
        if isinstance(op, Poll):
            return b.poll(op.batch_id)
        if isinstance(op, Fetch):
            return b.fetch(op.batch_id)
        if isinstance(op, Cancel):
            return b.cancel(op.batch_id)
        raise SelfRouteError(f"unknown operation {op!r}")  # pragma: no cover

    async def _aexecute(self, op: Op) -> Any:
        b = self.backend
        if isinstance(op, RunStep):
            handler, step = self._handler_for(op.item), op.step
            acall = handler.aretrieve if isinstance(step, Retrieve) else handler.aload_long_context
            return await abounded(acall(step), step.timeout_s, step_subject(step))
        if not hasattr(b, "asubmit"):
            raise ConfigurationError(f"the {b.name} batch backend has no async methods")
        if isinstance(op, Submit):
            return await b.asubmit(op.requests, op.token)
        if isinstance(op, Find):
            return await b.afind(op.token)
        if isinstance(op, Poll):
            return await b.apoll(op.batch_id)
        if isinstance(op, Fetch):
            return await b.afetch(op.batch_id)
        if isinstance(op, Cancel):
            return await b.acancel(op.batch_id)
        raise SelfRouteError(f"unknown operation {op!r}")  # pragma: no cover

    def _run(self, gen: Generator[Op, Any, Any]) -> Any:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            send, error = None, None
            try:
                send = self._execute(op)
            except Exception as exc:
                error = exc

    async def _arun(self, gen: Generator[Op, Any, Any]) -> Any:
        send: Any = None
        error: BaseException | None = None
        while True:
            try:
                op = gen.throw(error) if error is not None else gen.send(send)
            except StopIteration as stop:
                return stop.value
            send, error = None, None
            try:
                send = await self._aexecute(op)
            except Exception as exc:
                error = exc

    # -- the handle ------------------------------------------------------------------------------
    def status(self) -> JobStatus:
        """Advance the job once (poll, collect, run flows on, submit the next phase) and say
        where it stands. Never sleeps."""
        self._core.store.acquire()
        status: JobStatus = self._run(self._core.advance())
        return status

    async def astatus(self) -> JobStatus:
        """Async :meth:`status`."""
        self._core.store.acquire()
        status: JobStatus = await self._arun(self._core.advance())
        return status

    def _pauses(self) -> Iterable[float]:
        pause = self.poll_interval_s
        while True:
            yield pause
            pause = min(pause * 1.5, self.max_poll_interval_s)

    def wait(self, timeout_s: float | None = None) -> JobStatus:
        """Advance the job until every question has ended (or ``timeout_s`` passes), pausing
        between polls. Returns the last status."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        pauses = iter(self._pauses())
        while True:
            status = self.status()
            if status.finished:
                return status
            pause = next(pauses)
            if deadline is not None:
                if time.monotonic() >= deadline:
                    return status
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(pause)

    async def wait_async(self, timeout_s: float | None = None) -> JobStatus:
        """Async :meth:`wait` (sleeps with ``asyncio.sleep``)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        pauses = iter(self._pauses())
        while True:
            status = await self.astatus()
            if status.finished:
                return status
            pause = next(pauses)
            if deadline is not None:
                if time.monotonic() >= deadline:
                    return status
                pause = min(pause, max(0.0, deadline - time.monotonic()))
            await asyncio.sleep(pause)

    def results(self) -> list[BatchOutcome]:
        """Wait for the job and return one :class:`BatchOutcome` per input, in input order."""
        self.wait()
        self.close()
        return self._core.outcomes()

    async def aresults(self) -> list[BatchOutcome]:
        """Async :meth:`results`."""
        await self.wait_async()
        self.close()
        return self._core.outcomes()

    def cancel(self) -> None:
        """Cancel the open batches; unfinished questions end with an error."""
        self._core.store.acquire()
        if not self._core.recovered:
            self._run(self._core.recover())
        self._run(self._core.cancel())
        self.close()

    async def acancel(self) -> None:
        """Async :meth:`cancel`."""
        self._core.store.acquire()
        if not self._core.recovered:
            await self._arun(self._core.recover())
        await self._arun(self._core.cancel())
        self.close()

    def close(self) -> None:
        """Release the job file's lock (another run may then take the job); the next
        :meth:`status` takes it again."""
        self._core.store.release()

    def __enter__(self) -> BatchJob:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def notes(self) -> Sequence[str]:
        """What the job changed about the flows."""
        return self._core.notes
