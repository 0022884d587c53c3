"""The batch driver: many Self-Route flows advanced in phases, one provider batch per phase.

The third driver over :func:`~selfroute.flow.self_route_flow` (after
:func:`~selfroute.flow.drive` and :func:`~selfroute.flow.adrive`). Like them it sends each step to a handler and feeds the answer back;
unlike them it runs ``Retrieve`` and ``LoadLongContext`` at once but parks every ``Generate``
step, and once every flow is parked or finished submits all the parked steps as one batch. When
the batch is done the answers go back into their flows, which run on to their next ``Generate``
(the long-context step of a question the RAG step declined, a k-ladder rung) or finish. So every
policy of the flow works unchanged.

The driver itself is written once as a generator of operations (:class:`RunStep`,
:class:`Submit`, :class:`Find`, :class:`Poll`, :class:`Fetch`, :class:`Cancel`); the job handle
runs it with a sync or an async executor.

Resuming: flows are generators and cannot be saved, so a rerun *replays* them: each flow starts
again, retrieval runs again locally, and every ``Generate`` step already answered in the job file
(same key, same prompt signature) is answered from it instead of the provider.

Tracing (``RouteConfig.tracing``): the driver reports each flow's steps to the same trace as the
online drivers (started with ``batch=True``), so a question gets one ``SelfRoute`` span tree,
emitted when its result is known -- by the process that finishes it, which replays it from the
start; a question the job file records as finished emits nothing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfroute._batch._ledger import mark_batch
from selfroute._batch._protocol import BatchPoll, BatchReply, BatchRequest
from selfroute._batch._store import (
    JobStore,
    generation_from_dict,
    step_signature,
)
from selfroute._errors import (
    ConfigurationError,
    LongContextError,
    ModelOutputError,
    SelfRouteError,
)
from selfroute._flow import Generate, LoadLongContext, Retrieve, Settle, Speculate, Step
from selfroute._flow._tracing import OFF, start_trace
from selfroute._pricing import PriceTable
from selfroute._redact import redact
from selfroute._result import Reason, Route, RouteResult

__all__ = [
    "BatchEvent",
    "BatchItem",
    "BatchOutcome",
    "JobStatus",
]

FlowFactory = Callable[["BatchItem"], Generator[Step, Any, RouteResult]]

#: Bytes a request line adds to its prompt (JSON envelope, model, options), for the size limit.
_REQUEST_OVERHEAD = 512

DEADLINE_NOTE = (
    "the per-question deadline (deadline_s) is off in batch runs: a phase waits minutes to hours "
    "for its batch; the provider's completion window bounds the job instead"
)

SPECULATION_NOTE = (
    "speculative long context (speculate_below) is off in batch runs: every phase waits for "
    "its batch anyway, so starting the long-context call early saves no time and only pays "
    "for calls that are thrown away"
)


@dataclass(frozen=True)
class BatchItem:
    """One question of a batch job.

    Attributes:
        id: Unique within the job (the line number when not given).
        question: The question.
        payload: Anything the handler factory needs for it (a per-question document...); not
            saved in the job file.
    """

    id: str
    question: str
    payload: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class BatchOutcome:
    """What one item of a batch job came to.

    Attributes:
        id: The item's id.
        question: The question.
        result: The route result (every step marked ``batch``), or ``None`` if it failed.
        error: ``"ErrorType: message"`` when it failed.
        partial: The partial result of a failed long-context step (what it spent).
        exception: The exception (this process only; not restored from the job file).
    """

    id: str
    question: str
    result: RouteResult | None = None
    error: str | None = None
    partial: RouteResult | None = None
    exception: BaseException | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the item got a result."""
        return self.result is not None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (one ``--json`` line)."""
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.result is not None:
            out.update(self.result.to_dict())
        else:
            out["error"] = self.error
            out["partial"] = self.partial.to_dict() if self.partial is not None else None
        out["id"] = self.id
        return out


@dataclass(frozen=True)
class BatchEvent:
    """Progress of a batch job, for a display (and for tests that crash at a given point).

    Attributes:
        kind: ``resumed``, ``recovered``, ``submitting``, ``submitted``, ``polled``,
            ``collected``, ``retrying``, ``note``, ``finished`` or ``cancelled``.
        phase: The phase (1: the RAG prompts; 2: the long-context prompts of the questions that
            declined, or the next k-ladder rung; ...).
        batch_id: The provider's batch id, when there is one.
        requests: Requests concerned.
        poll: The provider's answer, for ``polled``.
        message: A line for humans.
    """

    kind: str
    phase: int = 0
    batch_id: str | None = None
    requests: int = 0
    poll: BatchPoll | None = None
    message: str = ""


@dataclass(frozen=True)
class JobStatus:
    """Where a batch job stands.

    Attributes:
        total: Items in the job.
        done: Items with a result.
        failed: Items that ended in an error.
        waiting: Items waiting on a batch.
        phase: The last phase submitted.
        batches: ``(batch id, phase, state, requests)`` of the batches still open.
        cancelled: The job was cancelled.
        notes: Things the job changed about the flows (speculation off...).
    """

    total: int
    done: int
    failed: int
    waiting: int
    phase: int
    batches: tuple[tuple[str, int, str, int], ...] = ()
    cancelled: bool = False
    notes: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        """Whether every item has ended (or the job was cancelled)."""
        return self.cancelled or self.done + self.failed == self.total

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "total": self.total,
            "done": self.done,
            "failed": self.failed,
            "waiting": self.waiting,
            "phase": self.phase,
            "batches": [list(b) for b in self.batches],
            "cancelled": self.cancelled,
            "finished": self.finished,
            "notes": list(self.notes),
        }


# -- the operations the driver asks its executor to run ------------------------------------------
@dataclass(frozen=True)
class RunStep:
    """Run a ``Retrieve`` or ``LoadLongContext`` step with the item's handler."""

    step: Retrieve | LoadLongContext
    item: BatchItem


@dataclass(frozen=True)
class Submit:
    """``backend.submit(requests, token)``."""

    requests: tuple[BatchRequest, ...]
    token: str


@dataclass(frozen=True)
class Find:
    """``backend.find(token)``."""

    token: str


@dataclass(frozen=True)
class Poll:
    """``backend.poll(batch_id)``."""

    batch_id: str


@dataclass(frozen=True)
class Fetch:
    """``backend.fetch(batch_id)``."""

    batch_id: str


@dataclass(frozen=True)
class Cancel:
    """``backend.cancel(batch_id)``."""

    batch_id: str


Op = RunStep | Submit | Find | Poll | Fetch | Cancel


class _Live:
    """One item's flow in this process."""

    def __init__(self, item: BatchItem, flow: Generator[Step, Any, RouteResult]) -> None:
        self.item = item
        self.flow = flow
        self.pending: Generate | None = None  # the Generate step it waits on
        self.sig = ""  # the pending step's signature
        self.count = 0  # Generate steps answered so far
        self.outcome: BatchOutcome | None = None
        self.finished: dict[str, Any] | None = None  # its summary when the job file has one
        self.drifted = False  # a replayed prompt differs from the one its answer was for
        self.trace: Any = OFF  # the question's spans (OFF: tracing off, or finished before)
        self.span: Any = None  # the pending step's span

    @property
    def key(self) -> str:
        return f"{self.item.id}#{self.count}"


def split(
    group: list[BatchRequest], limits: tuple[int | None, int | None]
) -> list[list[BatchRequest]]:
    """``group`` in parts within a provider's ``(max_requests, max_bytes)`` per batch."""
    max_requests, max_bytes = limits
    parts: list[list[BatchRequest]] = [[]]
    size = 0
    for req in group:
        cost = len(req.step.prompt.encode()) + _REQUEST_OVERHEAD
        if req.step.structured is not None:
            cost += len(req.step.structured.prompt.encode())
        full = max_requests is not None and len(parts[-1]) >= max_requests
        if parts[-1] and (full or (max_bytes is not None and size + cost > max_bytes)):
            parts.append([])
            size = 0
        parts[-1].append(req)
        size += cost
    return parts


def outcome_of(
    item: BatchItem,
    prices: PriceTable | None,
    *,
    result: RouteResult | None = None,
    exc: BaseException | None = None,
) -> BatchOutcome:
    """The outcome of a finished flow: its result, or its error (and partial result), with every
    step marked as batched and priced at the batch rate."""
    if result is not None:
        return BatchOutcome(item.id, item.question, result=mark_batch(result, prices))
    assert exc is not None
    partial = exc.partial if isinstance(exc, LongContextError) else None
    if partial is not None:
        partial = mark_batch(partial, prices)
    text = _error_text(exc)
    return BatchOutcome(item.id, item.question, error=text, partial=partial, exception=exc)


def _summary(outcome: BatchOutcome) -> dict[str, Any]:
    """What the job file keeps of a finished item (the full result is rebuilt by replaying its
    flow from the recorded answers)."""
    out: dict[str, Any] = {"error": outcome.error}
    result = outcome.result or outcome.partial
    if result is not None:
        out.update(
            answer=result.answer,
            route=result.route.value,
            reason=result.reason.value,
            cost=result.cost,
            input_tokens=result.usage.input_tokens,
        )
    return out


def outcome_from_summary(item: BatchItem, summary: dict[str, Any]) -> BatchOutcome:
    """A finished item's outcome from its job-file summary alone (when its replay cannot be
    answered from the file): the answer, route, reason and cost as recorded, no sources."""
    error = summary.get("error")
    try:
        route, reason = Route(summary.get("route")), Reason(summary.get("reason"))
    except ValueError:
        return BatchOutcome(item.id, item.question, error=str(error or "no result recorded"))
    cost = summary.get("cost")
    result = RouteResult(
        question=item.question,
        answer=summary.get("answer") if isinstance(summary.get("answer"), str) else None,
        route=route,
        reason=reason,
        cost=float(cost) if isinstance(cost, (int, float)) else None,
        context={"from_job_file": True},
    )
    if error:
        return BatchOutcome(item.id, item.question, error=str(error), partial=result)
    return BatchOutcome(item.id, item.question, result=result)


def _error_text(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")


def _answered(
    lv: _Live, answer: dict[str, Any], backend_name: str
) -> tuple[Any, BaseException | None]:
    """What to send into ``lv``'s flow for its pending step's recorded ``answer`` (a generation,
    or the error to throw), reported to its trace; the step is no longer pending."""
    send: Any = None
    error: BaseException | None = None
    if "error" in answer:
        error = ModelOutputError(f"{backend_name} batch request failed: {answer['error']}")
        lv.trace.failed(lv.span, error)
    else:
        send = generation_from_dict(answer["generation"])
        lv.trace.done(lv.span, lv.pending, send)
    lv.pending, lv.span = None, None
    lv.count += 1
    return send, error


def end_unfinished(live: Iterable[_Live]) -> None:
    """End every unfinished item of a cancelled job with an error."""
    for lv in live:
        if lv.outcome is None:
            lv.outcome = BatchOutcome(
                lv.item.id, lv.item.question, error="BatchCancelled: the job was cancelled"
            )


def job_status(
    store: JobStore, live: Iterable[_Live], total: int, notes: tuple[str, ...]
) -> JobStatus:
    """The :class:`JobStatus` of a job: its ended items counted, its open batches listed."""
    done = failed = 0
    for lv in live:
        if lv.outcome is not None:
            done += lv.outcome.ok
            failed += not lv.outcome.ok
    open_ = tuple(
        (str(b.get("id") or b["token"]), int(b["phase"]), str(b["state"]), len(b["keys"]))
        for b in store.open_batches()
    )
    return JobStatus(
        total=total,
        done=done,
        failed=failed,
        waiting=len(store.open_keys()),
        phase=int(store.data["phase"]),
        batches=open_,
        cancelled=bool(store.data.get("cancelled")),
        notes=notes,
    )


class JobCore:
    """The batch driver's state and its one operation, :meth:`advance`.

    Args:
        store: The job state.
        items: The items.
        flow: Builds an item's flow (called again on resume).
        backend_name: The provider, for messages.
        model_for: The model of a ``Generate`` step.
        one_model_per_batch: Split a phase by model.
        prices: Price table for batch costs (``None``: no money).
        max_attempts: Batches a request may be lost in (expired, failed, cancelled) before it
            counts as a failed call.
        on_event: Progress callback.
        notes: Notes for the status.
        limits: The provider's ``(max_requests, max_bytes)`` per batch (``None``: no limit): a
            phase larger than that goes out as several batches.
    """

    def __init__(
        self,
        store: JobStore,
        items: Sequence[BatchItem],
        flow: FlowFactory,
        *,
        backend_name: str,
        model_for: Callable[[Generate], str],
        one_model_per_batch: bool = False,
        prices: PriceTable | None = None,
        max_attempts: int = 3,
        on_event: Callable[[BatchEvent], None] | None = None,
        notes: Sequence[str] = (),
        limits: tuple[int | None, int | None] = (None, None),
    ) -> None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ConfigurationError(f"max_attempts must be >= 1, got {max_attempts!r}")
        self.store = store
        self.items = list(items)
        self.flow = flow
        self.backend_name = backend_name
        self.model_for = model_for
        self.one_model_per_batch = one_model_per_batch
        self.prices = prices
        self.max_attempts = max_attempts
        self.on_event = on_event
        self.notes = tuple(notes)
        self.limits = limits
        self.live: dict[str, _Live] = {}
        self.recovered = False

    # -- events ------------------------------------------------------------------------------
    def emit(self, kind: str, **kw: Any) -> None:
        if self.on_event is not None:
            self.on_event(BatchEvent(kind, **kw))

    # -- status ------------------------------------------------------------------------------
    def outcomes(self) -> list[BatchOutcome]:
        """Outcomes of the items that ended, in item order."""
        return [lv.outcome for lv in self.live.values() if lv.outcome is not None]

    def status(self) -> JobStatus:
        """Where the job stands: counts of the items, the open batches, the phase."""
        return job_status(self.store, self.live.values(), len(self.items), self.notes)

    # -- the driver --------------------------------------------------------------------------
    def advance(self) -> Generator[Op, Any, JobStatus]:
        """Do what can be done now: recover, poll open batches (collect finished ones), run the
        flows on, submit the next phase. Never sleeps."""
        if not self.recovered:
            yield from self.recover()
        if self.store.data.get("cancelled"):
            end_unfinished(self.live.values())
            return self.status()
        for batch in list(self.store.open_batches()):
            poll: BatchPoll = yield Poll(batch["id"])
            batch["provider_state"] = poll.provider_state
            self.emit(
                "polled",
                phase=batch["phase"],
                batch_id=batch["id"],
                requests=len(batch["keys"]),
                poll=poll,
                message=f"batch {batch['id']}: {poll.provider_state or poll.state.value}",
            )
            if poll.state.terminal:
                replies: Sequence[BatchReply] = yield Fetch(batch["id"])
                self._collect(batch, poll, replies)
        open_keys = self.store.open_keys()
        for lv in self.live.values():
            if lv.outcome is None and (lv.pending is None or lv.key not in open_keys):
                yield from self._run_on(lv)
        waiting = [
            lv
            for lv in self.live.values()
            if lv.outcome is None and lv.pending is not None and lv.key not in open_keys
        ]
        if waiting:
            yield from self._submit(waiting)
        else:
            self.store.save()
        status = self.status()
        if status.finished:
            self.emit(
                "finished",
                phase=status.phase,
                message=f"{status.done} answered, {status.failed} failed",
            )
        return status

    def recover(self) -> Generator[Op, Any, None]:
        """Start (or replay) every flow; settle submissions a crash left unrecorded."""
        store = self.store
        if store.resumed:
            self.emit("resumed", phase=int(store.data["phase"]), message="resuming the job file")
        for batch in list(store.batches):
            if batch["state"] != "submitting":
                continue
            found = yield Find(batch["token"])
            if found:
                batch["id"], batch["state"] = found, "submitted"
                self.emit(
                    "recovered",
                    phase=batch["phase"],
                    batch_id=found,
                    requests=len(batch["keys"]),
                    message=f"found batch {found}, submitted before the interruption",
                )
            else:
                store.batches.remove(batch)
        store.save()
        for item in self.items:
            lv = self.live[item.id] = _Live(item, self.flow(item))
            summary = store.results.get(item.id)
            lv.finished = summary if isinstance(summary, dict) else None
            if lv.finished is None:
                lv.trace = start_trace(lv.flow, batch=True)
        self.recovered = True
        for lv in self.live.values():  # finished questions end now, from the job file alone
            if lv.finished is not None:
                yield from self._run_on(lv)
        drifted = sum(lv.drifted for lv in self.live.values())
        if drifted:
            self.emit(
                "note",
                phase=int(store.data["phase"]),
                message=f"note: {drifted} finished question(s) retrieved other passages than "
                "when they were answered (the documents changed?); their recorded answers are "
                "shown, without sources -- delete the job file to ask them again",
            )

    def _run_on(self, lv: _Live) -> Generator[Op, Any, None]:
        """Run one flow until it waits on an unanswered ``Generate`` step or ends.

        A question the job file records as finished never waits: each of its model calls is
        answered from the file; a replay whose prompt differs from the recorded one (the
        documents changed since) or that asks for a call the file does not hold ends with the
        recorded summary (answer, route, reason, cost; no sources).
        """
        send: Any = None
        error: BaseException | None = None
        while True:
            if lv.pending is not None:
                answer = self.store.answers.get(lv.key)
                if lv.finished is not None and (answer is None or answer.get("sig") != lv.sig):
                    lv.drifted = True
                    lv.outcome = outcome_from_summary(lv.item, lv.finished)
                    lv.flow.close()
                    return
                if answer is None or answer.get("sig") != lv.sig:
                    return  # not answered yet (or answered for another prompt): submit it
                send, error = _answered(lv, answer, self.backend_name)
            try:
                step = lv.flow.throw(error) if error is not None else lv.flow.send(send)
            except StopIteration as stop:
                lv.outcome = outcome_of(lv.item, self.prices, result=stop.value)
                if lv.outcome.result is not None:
                    lv.trace.finish(lv.outcome.result)
                self._record(lv)
                return
            except Exception as exc:
                if lv.finished is not None and not lv.finished.get("error"):
                    lv.drifted = True  # it answered before: a replay that fails keeps that
                    lv.outcome = outcome_from_summary(lv.item, lv.finished)
                    return
                lv.outcome = outcome_of(lv.item, self.prices, exc=exc)
                lv.trace.fail(exc)
                self._record(lv)
                return
            send, error = None, None
            if isinstance(step, Generate):
                lv.pending, lv.sig = step, step_signature(step)
                lv.span = lv.trace.start(step)
            elif isinstance(step, (Speculate, Settle)):
                error = ConfigurationError(
                    "a flow in a batch job asked for speculative long context; "
                    + SPECULATION_NOTE
                    + " (build the flow with speculate_below=None)"
                )
            elif isinstance(step, (Retrieve, LoadLongContext)):
                span = lv.trace.start(step)
                try:
                    send = yield RunStep(step, lv.item)
                except Exception as exc:
                    error = exc
                    lv.trace.failed(span, exc)
                else:
                    lv.trace.done(span, step, send)
            else:  # pragma: no cover - defensive
                error = SelfRouteError(f"unknown step {step!r}")

    def _record(self, lv: _Live) -> None:
        """Keep a finished item's summary (the first one recorded stays: a replay that drifted
        does not rewrite what was answered)."""
        assert lv.outcome is not None
        if lv.finished is None:
            self.store.results[lv.item.id] = _summary(lv.outcome)

    def _submit(self, waiting: Sequence[_Live]) -> Generator[Op, Any, None]:
        """Submit the waiting steps as this phase's batch (one per model when the provider
        runs one model per batch); the token goes into the job file first."""
        store = self.store
        store.data["phase"] += 1
        phase = int(store.data["phase"])
        sigs = {lv.key: lv.sig for lv in waiting}
        requests = [
            BatchRequest(lv.key, lv.pending, self.model_for(lv.pending))
            for lv in waiting
            if lv.pending is not None
        ]
        by_model: dict[str, list[BatchRequest]] = {}
        for req in requests:
            by_model.setdefault(req.model if self.one_model_per_batch else "", []).append(req)
        groups = [part for group in by_model.values() for part in split(group, self.limits)]
        for group in groups:
            token = f"selfroute-{uuid.uuid4().hex}"
            batch: dict[str, Any] = {
                "token": token,
                "id": None,
                "phase": phase,
                "state": "submitting",
                "keys": [r.key for r in group],
                "sigs": {r.key: sigs[r.key] for r in group},
                "submitted_at": time.time(),
            }
            store.batches.append(batch)
            store.save()
            self.emit(
                "submitting",
                phase=phase,
                requests=len(group),
                message=f"phase {phase}: submitting {len(group)} requests",
            )
            batch_id = yield Submit(tuple(group), token)
            batch["id"], batch["state"] = batch_id, "submitted"
            store.save()
            self.emit(
                "submitted",
                phase=phase,
                batch_id=batch_id,
                requests=len(group),
                message=f"phase {phase}: batch {batch_id} ({len(group)} requests)",
            )

    def _collect(
        self, batch: dict[str, Any], poll: BatchPoll, replies: Sequence[BatchReply]
    ) -> None:
        """Record a terminal batch's replies; requests it never ran are retried (or, after
        ``max_attempts`` lost batches, recorded as failed calls)."""
        answered, errors, lost, retry = self.store.record_replies(
            batch, poll, replies, self.max_attempts
        )
        self.emit(
            "collected",
            phase=batch["phase"],
            batch_id=batch["id"],
            requests=answered,
            poll=poll,
            message=f"batch {batch['id']} {poll.state.value}: {answered - errors} answers, "
            f"{errors} request errors, {lost} not run",
        )
        if retry:
            self.emit(
                "retrying",
                phase=batch["phase"],
                batch_id=batch["id"],
                requests=retry,
                message=f"{retry} requests of batch {batch['id']} go into the next batch",
            )

    def cancel(self) -> Generator[Op, Any, None]:
        """Cancel the open batches and stop the job."""
        for batch in self.store.open_batches():
            if batch.get("id"):
                yield Cancel(batch["id"])
        self.store.data["cancelled"] = True
        end_unfinished(self.live.values())
        self.store.save()
        self.emit("cancelled", phase=int(self.store.data["phase"]), message="job cancelled")
