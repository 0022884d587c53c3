"""Scripted Gemini Developer API server with batch mode, on 127.0.0.1.

Serves everything :class:`~tests.support.gemini_server.ScriptedGeminiServer` serves plus what
``google.genai.Client().batches`` calls in Gemini Developer API mode (wire format read from
``google/genai/batches.py``):

- ``POST /v1beta/models/{model}:batchGenerateContent`` with
  ``{"batch": {"displayName", "inputConfig": {"requests": {"requests": [{"request", "metadata"}]}}}}``
- ``GET /v1beta/batches/{id}``, ``GET /v1beta/batches`` (``{"operations": [...]}``, newest first),
  ``POST /v1beta/batches/{id}:cancel``

Each answers with a long-running operation whose ``metadata`` holds the batch (``state``
``BATCH_STATE_PENDING -> RUNNING -> SUCCEEDED``, one state per ``polls_per_state`` gets) and,
once done, ``output.inlinedResponses.inlinedResponses`` (a response or an ``error`` per
request, with the request's ``metadata``). ``expire_next``/``fail_next`` make the next jobs
expire (the first ``expire_keep`` requests answered) or fail; ``on_create(job)`` runs before the
client hears of a new job.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support._batch_common import BatchCall, BatchServer
from tests.support._loopback import _Handler, serve_main
from tests.support.gemini_server import ScriptedGeminiServer

__all__ = ["GeminiBatchServer"]

_CREATE_RE = re.compile(r"^/(v1|v1beta|v1alpha)/models/(?P<model>[^:/]+):batchGenerateContent$")
_BATCH_RE = re.compile(r"^/(v1|v1beta|v1alpha)/batches(/(?P<id>[^:/]+))?(?P<cancel>:cancel)?$")
_TERMINAL = (
    "BATCH_STATE_SUCCEEDED",
    "BATCH_STATE_FAILED",
    "BATCH_STATE_CANCELLED",
    "BATCH_STATE_EXPIRED",
)


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class GeminiBatchServer(BatchServer, ScriptedGeminiServer):
    """Gemini batch-mode double (see the module docstring; the bookkeeping shared with the
    OpenAI double is :class:`~tests.support._batch_common.BatchServer`'s).

    Attributes:
        jobs: ``{job id: operation}``.
        job_requests: ``{job id: its inlined requests, each with the job's ``model``}``.
    """

    def __init__(self, *args: Any, polls_per_state: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, polls_per_state=polls_per_state, **kwargs)
        self.jobs: dict[str, dict[str, Any]] = {}

    def batch_call(self, handler: _Handler, method: str, path: str) -> BatchCall | None:
        create, other = _CREATE_RE.match(path), _BATCH_RE.match(path)
        if not (create or other):
            return None

        def call(raw: bytes) -> tuple[int, Any]:
            if create and method == "POST":
                return 200, self._create(create["model"], json.loads(raw or b"{}"))
            if other and other["id"] and other["cancel"] and method == "POST":
                return 200, self._cancel(other["id"])
            if other and other["id"] and method == "GET":
                return 200, self._get(other["id"])
            if other and not other["id"] and method == "GET":
                return 200, self._list(parse_qs(urlsplit(handler.path).query))
            return 404, self.error_body(404, f"no route {method} {path}")

        return call

    def _create(self, model: str, body: dict[str, Any]) -> dict[str, Any]:
        batch = body.get("batch") or {}
        requests = ((batch.get("inputConfig") or {}).get("requests") or {}).get("requests") or []
        job_id = uuid.uuid4().hex[:16]
        op = {
            "name": f"batches/{job_id}",
            "metadata": {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                "model": f"models/{model}",
                "displayName": batch.get("displayName"),
                "state": "BATCH_STATE_PENDING",
                "createTime": _stamp(),
                "updateTime": _stamp(),
                "batchStats": {"requestCount": str(len(requests))},
                "name": f"batches/{job_id}",
            },
        }
        self.jobs[job_id] = op
        self.record_job(job_id, [dict(r, model=model) for r in requests], op)
        return op

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        ordered = [self.jobs[i] for i in reversed(self.created)]
        size = int((query.get("pageSize") or ["50"])[0])
        start = int((query.get("pageToken") or ["0"])[0])
        page = ordered[start : start + size]
        out: dict[str, Any] = {"operations": page}
        if start + size < len(ordered):
            out["nextPageToken"] = str(start + size)
        return out

    def _cancel(self, job_id: str) -> dict[str, Any]:
        meta = self.jobs[job_id]["metadata"]
        if meta["state"] not in _TERMINAL:
            self._finish(job_id, "BATCH_STATE_CANCELLED", keep=0)
        return {}

    def _get(self, job_id: str) -> dict[str, Any]:
        op = self.jobs[job_id]
        meta = op["metadata"]
        if meta["state"] in _TERMINAL:
            return op
        if not self.poll_due(job_id):
            return op
        fate = self.fate(job_id)
        if meta["state"] == "BATCH_STATE_PENDING":
            if fate == "fail":
                self._finish(job_id, "BATCH_STATE_FAILED", keep=0)
                op["error"] = {"code": 13, "message": "scripted failure"}
            else:
                meta["state"] = "BATCH_STATE_RUNNING"
        elif meta["state"] == "BATCH_STATE_RUNNING":
            if fate == "expire":
                self._finish(job_id, "BATCH_STATE_EXPIRED", keep=self.expire_keep)
            else:
                self._finish(job_id, "BATCH_STATE_SUCCEEDED", keep=None)
        meta["updateTime"] = _stamp()
        return op

    def _response(self, entry: dict[str, Any]) -> dict[str, Any]:
        body = dict(entry.get("request") or {})
        done, status = self.answer(body, entry["model"])
        out: dict[str, Any] = {"metadata": entry.get("metadata") or {}}
        if status is not None:
            message = done.reply.text or f"scripted error {status}"
            out["error"] = {"code": status, "message": message}
        else:
            out["response"] = self.completion_body(done)
        return out

    def _finish(self, job_id: str, state: str, *, keep: int | None) -> None:
        op = self.jobs[job_id]
        entries = self.job_requests[job_id]
        ran, _ = self.split_run(job_id, keep)
        responses = [self._response(e) for e in ran]
        meta = op["metadata"]
        meta["state"] = state
        meta["endTime"] = _stamp()
        if responses:
            meta["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        ok = sum(1 for r in responses if "response" in r)
        meta["batchStats"] = {
            "requestCount": str(len(entries)),
            "successfulRequestCount": str(ok),
            "failedRequestCount": str(len(responses) - ok),
            "pendingRequestCount": str(len(entries) - len(responses)),
        }
        op["done"] = True


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.gemini_batch_server --port P --script FILE.json``."""
    return serve_main(GeminiBatchServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
