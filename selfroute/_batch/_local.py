"""A batch "provider" in this process: every request answered by a function when polled.

For dry runs of a batch job without a provider, for evaluation with scripted readers (the oracle
reader prices a batch run offline) and for measuring the driver itself. It follows the same
contract as the real backends: ids from ``submit``, ``find`` by token, states that move from
pending to completed over ``polls_to_finish`` polls, a reply or an error per request.
"""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from selfroute._batch._protocol import BatchPoll, BatchReply, BatchRequest, BatchState
from selfroute._flow import Generate, Generation
from selfroute._redact import redact
from selfroute._result import Stage

__all__ = ["LocalBatchBackend"]

Answer = Callable[[BatchRequest], Any]  # -> Generation | str (or an awaitable of one)


def _as_generation(value: Any, request: BatchRequest) -> Generation:
    if isinstance(value, Generation):
        return value
    if isinstance(value, str):
        return Generation(value, model=request.model)
    raise TypeError(
        f"the answer function returned {type(value).__name__}; expected str or Generation"
    )


class LocalBatchBackend:
    """Answers batch requests in-process with ``answer(request)``.

    Args:
        answer: ``answer(request) -> str | Generation`` (may be ``async``; the async methods
            await it, the sync ones need a sync function). Raising makes that request a
            per-request error, as a provider's error file would.
        model: The RAG-stage model name; ``long_context_model`` the other (default: ``model``).
        polls_to_finish: Polls a batch stays pending/running before it completes.
        name: The provider's name in messages and the job file.
        max_requests: Requests per batch (a larger phase is split); ``None``: no limit.
    """

    one_model_per_batch = False

    def __init__(
        self,
        answer: Answer,
        *,
        model: str = "local",
        long_context_model: str | None = None,
        polls_to_finish: int = 1,
        name: str = "local",
        max_requests: int | None = None,
    ) -> None:
        self.answer = answer
        self.models = {Stage.RAG: model, Stage.LONG_CONTEXT: long_context_model or model}
        self.polls_to_finish = polls_to_finish
        self.max_requests = max_requests
        self.max_bytes: int | None = None
        self.name = name
        self.batches: dict[str, dict[str, Any]] = {}
        self.submitted: list[str] = []

    def model_for(self, step: Generate) -> str:
        """The model of ``step``'s stage."""
        return self.models[step.stage]

    def submit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Record the batch; it is answered when it completes."""
        batch_id = f"local-{uuid.uuid4().hex[:12]}"
        self.batches[batch_id] = {"token": token, "requests": list(requests), "polls": 0}
        self.submitted.append(batch_id)
        return batch_id

    def find(self, token: str) -> str | None:
        """The batch submitted with ``token``."""
        for batch_id, batch in self.batches.items():
            if batch["token"] == token:
                return batch_id
        return None

    def poll(self, batch_id: str) -> BatchPoll:
        """Pending, then completed after ``polls_to_finish`` polls."""
        batch = self.batches.get(batch_id)
        if batch is None:  # submitted by another process: lost with it, so it is retried
            return BatchPoll(BatchState.FAILED, "unknown batch")
        if batch.get("cancelled"):
            return BatchPoll(BatchState.CANCELLED, "cancelled")
        batch["polls"] += 1
        total = len(batch["requests"])
        if batch["polls"] >= self.polls_to_finish:
            return BatchPoll(BatchState.COMPLETED, "completed", completed=total, total=total)
        return BatchPoll(BatchState.RUNNING, "running", completed=0, total=total)

    def _reply(self, request: BatchRequest, value: Any) -> BatchReply:
        return BatchReply(request.key, _as_generation(value, request))

    def fetch(self, batch_id: str) -> list[BatchReply]:
        """Every request answered by ``answer`` (nothing for a cancelled or unknown batch)."""
        batch = self.batches.get(batch_id)
        if batch is None or batch.get("cancelled"):
            return []
        out = []
        for request in batch["requests"]:
            try:
                out.append(self._reply(request, self.answer(request)))
            except Exception as exc:
                out.append(BatchReply(request.key, error=redact(f"{type(exc).__name__}: {exc}")))
        return out

    def cancel(self, batch_id: str) -> None:
        """Cancel the batch."""
        if batch_id in self.batches:
            self.batches[batch_id]["cancelled"] = True

    async def asubmit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Async :meth:`submit`."""
        return self.submit(requests, token)

    async def afind(self, token: str) -> str | None:
        """Async :meth:`find`."""
        return self.find(token)

    async def apoll(self, batch_id: str) -> BatchPoll:
        """Async :meth:`poll`."""
        return self.poll(batch_id)

    async def afetch(self, batch_id: str) -> list[BatchReply]:
        """Async :meth:`fetch` (awaits an async ``answer``)."""
        batch = self.batches.get(batch_id)
        if batch is None or batch.get("cancelled"):
            return []
        out = []
        for request in batch["requests"]:
            try:
                value = self.answer(request)
                if inspect.isawaitable(value):
                    value = await value
                out.append(self._reply(request, value))
            except Exception as exc:
                out.append(BatchReply(request.key, error=redact(f"{type(exc).__name__}: {exc}")))
        return out

    async def acancel(self, batch_id: str) -> None:
        """Async :meth:`cancel`."""
        self.cancel(batch_id)
