"""What a provider batch backend implements: submit, poll, fetch, find and cancel.

A backend knows one provider's batch API (OpenAI Batch, Gemini batch mode, ...): it turns
:class:`BatchRequest` objects (a flow's :class:`~selfroute.flow.Generate` step under a key) into the
provider's request lines, submits them as one batch, reports the batch's state and hands back one
:class:`BatchReply` per request. Everything else -- phases, the job file, retries, the flow -- is
the driver's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from selfroute._flow import Generate, Generation
from selfroute._result import Stage

__all__ = [
    "AsyncBatchBackend",
    "BatchBackend",
    "BatchPoll",
    "BatchReply",
    "BatchRequest",
    "BatchState",
]


class BatchState(str, Enum):
    """The provider-neutral state of a submitted batch."""

    PENDING = "pending"
    """Accepted, validating or queued."""
    RUNNING = "running"
    """Being processed (or finalizing)."""
    COMPLETED = "completed"
    """Finished: every request has a reply or an error line."""
    FAILED = "failed"
    """The whole batch failed (validation, provider fault): its requests are retried."""
    EXPIRED = "expired"
    """Not finished within the completion window: finished requests keep their replies, the rest
    are retried."""
    CANCELLED = "cancelled"
    """Cancelled: finished requests keep their replies."""

    @property
    def terminal(self) -> bool:
        """Whether the batch will not change any more."""
        return self in (
            BatchState.COMPLETED,
            BatchState.FAILED,
            BatchState.EXPIRED,
            BatchState.CANCELLED,
        )


@dataclass(frozen=True)
class BatchRequest:
    """One model call to put in a batch.

    Attributes:
        key: Unique within the job (``"<item id>#<step number>"``); the provider's custom id.
        step: The flow's :class:`~selfroute.flow.Generate` step (stage, prompt, structured form).
        model: The model to run it on (the backend's model for the step's stage).
    """

    key: str
    step: Generate
    model: str

    @property
    def stage(self) -> Stage:
        """``rag`` or ``long_context``."""
        return self.step.stage


@dataclass(frozen=True)
class BatchPoll:
    """What the provider says about a batch.

    Attributes:
        state: Provider-neutral state.
        provider_state: The provider's own word (``in_progress``, ``JOB_STATE_RUNNING``...).
        completed: Requests finished so far (when the provider reports it).
        failed: Requests failed so far (when the provider reports it).
        total: Requests in the batch (when the provider reports it).
    """

    state: BatchState
    provider_state: str = ""
    completed: int | None = None
    failed: int | None = None
    total: int | None = None


@dataclass(frozen=True)
class BatchReply:
    """The outcome of one request of a finished batch.

    Exactly one of ``generation`` and ``error`` is set.

    Attributes:
        key: The request's key.
        generation: The model's answer.
        error: What the provider said went wrong with this request.
        retryable: The request did not run (batch expired, cancelled or failed before it): the
            driver submits it again instead of treating it as a model error.
    """

    key: str
    generation: Generation | None = None
    error: str | None = None
    retryable: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)


@runtime_checkable
class BatchBackend(Protocol):
    """A provider batch API, sync.

    Attributes:
        name: The provider, for messages (``openai``, ``gemini``).
        one_model_per_batch: The provider runs one model per batch (Gemini): the driver splits
            a phase by model.

    A backend may also set ``max_requests`` and ``max_bytes`` (requests and prompt bytes per
    batch): the driver splits a larger phase into several batches.
    """

    name: str
    one_model_per_batch: bool

    def model_for(self, step: Generate) -> str:
        """The model that runs ``step`` (by its stage)."""
        ...

    def submit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Submit ``requests`` as one batch labelled with ``token``; return the batch id."""
        ...

    def find(self, token: str) -> str | None:
        """The id of a batch submitted with ``token`` (``None`` if there is none): the driver
        asks after a crash between submitting and recording the id, so it never pays twice."""
        ...

    def poll(self, batch_id: str) -> BatchPoll:
        """The batch's state now."""
        ...

    def fetch(self, batch_id: str) -> Sequence[BatchReply]:
        """The replies of a terminal batch (requests it never ran may be missing)."""
        ...

    def cancel(self, batch_id: str) -> None:
        """Ask the provider to cancel the batch."""
        ...


@runtime_checkable
class AsyncBatchBackend(Protocol):
    """A provider batch API, async (the same methods, awaitable, ``a``-prefixed)."""

    name: str
    one_model_per_batch: bool

    def model_for(self, step: Generate) -> str:
        """The model that runs ``step``."""
        ...

    def asubmit(self, requests: Sequence[BatchRequest], token: str) -> Awaitable[str]:
        """Async :meth:`BatchBackend.submit`."""
        ...

    def afind(self, token: str) -> Awaitable[str | None]:
        """Async :meth:`BatchBackend.find`."""
        ...

    def apoll(self, batch_id: str) -> Awaitable[BatchPoll]:
        """Async :meth:`BatchBackend.poll`."""
        ...

    def afetch(self, batch_id: str) -> Awaitable[Sequence[BatchReply]]:
        """Async :meth:`BatchBackend.fetch`."""
        ...

    def acancel(self, batch_id: str) -> Awaitable[None]:
        """Async :meth:`BatchBackend.cancel`."""
        ...
