"""The base of the batch doubles: what the OpenAI and Gemini batch servers share.

:class:`BatchServer` keeps the jobs' requests and fates, counts polls, answers a job's requests as
the online endpoint would and serves the batch API's HTTP exchange (JSON, or raw bytes for file
contents; a missing object is a 404, a bug in the double a 500, never a hang). A provider's server
adds only its wire format: which paths are batch calls (:meth:`BatchServer.batch_call`) and the
shape of its jobs, lists and results. It is mixed in before the provider's online double, e.g.
``class OpenAIBatchServer(BatchServer, ScriptedOpenAIServer)``, so everything else is served
online by the same responder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tests.support._loopback import (
    Completion,
    LoopbackServer,
    Reply,
    _Handler,
    prompt_text,
    word_count,
)

__all__ = ["BatchCall", "BatchServer"]

#: One batch-API call: ``call(request body) -> (HTTP status, JSON payload or file bytes)``.
BatchCall = Callable[[bytes], tuple[int, Any]]

#: Reply kinds that make a request of a batch fail (written as an error, not an answer).
FAILED_KINDS = ("error", "malformed", "hang")


class BatchServer(LoopbackServer):
    """Batch-job bookkeeping over a provider's online double (see the module docstring).

    Args:
        *args: The online double's arguments.
        polls_per_state: Polls of a job before it moves on to its next state.
        **kwargs: The online double's keyword arguments.

    Attributes:
        created: Job ids in creation order (duplicate submissions show here).
        job_requests: ``{job id: its requests}``, as the provider's server stored them.
        batch_bodies: Every request body answered inside a job.
        expire_next: Make this many of the next jobs expire (the first ``expire_keep`` requests
            answered, the rest not run).
        expire_keep: See ``expire_next``.
        fail_next: Make this many of the next jobs fail (no request answered).
        on_create: ``on_create(job)`` runs after a job is recorded and before the client hears
            of it (a test can kill the client there).
    """

    def __init__(self, *args: Any, polls_per_state: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.polls_per_state = polls_per_state
        self.created: list[str] = []
        self.job_requests: dict[str, list[dict[str, Any]]] = {}
        self.batch_bodies: list[dict[str, Any]] = []
        self.expire_next = 0
        self.expire_keep = 0
        self.fail_next = 0
        self.on_create: Callable[[dict[str, Any]], None] | None = None
        self._fates: dict[str, str] = {}
        self._polls: dict[str, int] = {}
        self._batch_lock = threading.RLock()

    # -- the provider's wire format ----------------------------------------------------------------
    def batch_call(self, handler: _Handler, method: str, path: str) -> BatchCall | None:
        """The batch-API call ``method path`` makes, or ``None`` when ``path`` is not the batch
        API's (it is then served online)."""
        raise NotImplementedError

    # -- HTTP --------------------------------------------------------------------------------------
    def _dispatch(self, handler: _Handler, method: str) -> None:
        call = self.batch_call(handler, method, urlsplit(handler.path).path.rstrip("/"))
        if call is None:
            super()._dispatch(handler, method)
            return
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            with self._batch_lock:
                status, payload = call(raw)
        except KeyError as exc:
            status, payload = 404, self.error_body(404, f"no such object: {exc}")
        except Exception as exc:
            self.errors.append(exc)
            status, payload = 500, self.error_body(500, f"{type(exc).__name__}: {exc}")
        if isinstance(payload, bytes) and status == 200:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/octet-stream")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
            return
        handler.send_json(status, payload)

    # -- jobs --------------------------------------------------------------------------------------
    def record_job(self, job_id: str, requests: list[dict[str, Any]], job: dict[str, Any]) -> None:
        """Keep a new job's requests, give it its fate (``fail_next``, then ``expire_next``, else
        it completes) and run ``on_create``."""
        fate = "complete"
        if self.fail_next > 0:
            self.fail_next, fate = self.fail_next - 1, "fail"
        elif self.expire_next > 0:
            self.expire_next, fate = self.expire_next - 1, "expire"
        self.job_requests[job_id] = requests
        self._fates[job_id] = fate
        self.created.append(job_id)
        if self.on_create is not None:
            self.on_create(job)

    def fate(self, job_id: str) -> str:
        """``complete``, ``expire`` or ``fail``: how the job ends."""
        return self._fates[job_id]

    def poll_due(self, job_id: str) -> bool:
        """Count a poll of an unfinished job; true when it moves on to its next state (once
        every ``polls_per_state`` polls)."""
        seen = self._polls.get(job_id, 0) + 1
        self._polls[job_id] = seen
        if seen < self.polls_per_state:
            return False
        self._polls[job_id] = 0
        return True

    def split_run(
        self, job_id: str, keep: int | None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``(requests run, requests not run)`` of a job that ends now: the first ``keep`` run
        (all of them when ``None``)."""
        requests = self.job_requests[job_id]
        ran = requests if keep is None else requests[:keep]
        return ran, requests[len(ran) :]

    def answer(self, body: dict[str, Any], model: str) -> tuple[Completion, int | None]:
        """Answer one request of a job as the online endpoint would: its completion (token counts
        as online) and, for a failed request (a reply of kind ``error``/``malformed``/``hang``),
        its HTTP status (``None`` when it succeeded)."""
        self.batch_bodies.append(body)
        reply = self._resolve(body)
        text = "" if reply.kind == "empty" else reply.text
        prompt_tokens = (
            reply.prompt_tokens
            if reply.prompt_tokens is not None
            else word_count(prompt_text(body))
        )
        completion_tokens = (
            reply.completion_tokens if reply.completion_tokens is not None else word_count(text)
        )
        name = reply.model if reply.model is not None else model
        done = Completion(body, reply, name, text, prompt_tokens, completion_tokens)
        return done, failed_status(reply)


def failed_status(reply: Reply) -> int | None:
    """The HTTP status of a request that ``reply`` makes fail, ``None`` when it answers."""
    if reply.kind not in FAILED_KINDS:
        return None
    return reply.status if reply.kind == "error" else 500
