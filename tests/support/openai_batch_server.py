"""Scripted OpenAI server with the Files and Batches endpoints, on 127.0.0.1.

Serves everything :class:`~tests.support.openai_server.ScriptedOpenAIServer` serves (online chat
completions, answered by the same responder) plus what ``openai.OpenAI().files`` and
``.batches`` call:

- ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}``, ``GET /v1/files/{id}/content``
- ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list, newest first),
  ``POST /v1/batches/{id}/cancel``

A batch moves ``validating -> in_progress -> finalizing -> completed``, one state per
``polls_per_state`` retrieves. Its requests are answered when it finalizes: a reply of kind
``error`` becomes a line of the error file (``response.status_code`` 500), everything else a
``chat.completion`` line of the output file. ``expire_next`` / ``fail_next`` make the next batches
expire (the first ``expire_keep`` requests answered, the rest ``batch_expired`` in the error
file) or fail (no files). ``on_create(batch)`` runs after a batch is recorded and before the
client hears of it (a test can kill the client there).

Run standalone: ``python -m tests.support.openai_batch_server --script rules.json``.
"""

from __future__ import annotations

import json
import time
import uuid
from email import policy
from email.parser import BytesParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support._batch_common import BatchCall, BatchServer
from tests.support._loopback import _Handler, serve_main
from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["OpenAIBatchServer"]

_FLOW = ("validating", "in_progress", "finalizing", "completed")


def _multipart(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """``{field: (filename, bytes)}`` of a multipart/form-data body."""
    message = BytesParser(policy=policy.default).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\nMIME-Version: 1.0\r\n\r\n" + raw
    )
    out: dict[str, tuple[str | None, bytes]] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        out[str(name)] = (part.get_filename(), payload if isinstance(payload, bytes) else b"")
    return out


class OpenAIBatchServer(BatchServer, ScriptedOpenAIServer):
    """OpenAI Files + Batches API double (see the module docstring; the bookkeeping shared with
    the Gemini double is :class:`~tests.support._batch_common.BatchServer`'s).

    Attributes:
        files: ``{file_id: {"object": ..., "data": bytes}}``.
        batches: ``{batch_id: batch object}``.
        job_requests: ``{batch_id: the input file's lines}``.
    """

    def __init__(self, *args: Any, polls_per_state: int = 1, **kwargs: Any) -> None:
        super().__init__(*args, polls_per_state=polls_per_state, **kwargs)
        self.files: dict[str, dict[str, Any]] = {}
        self.batches: dict[str, dict[str, Any]] = {}

    # -- routing ---------------------------------------------------------------------------------
    def batch_call(self, handler: _Handler, method: str, path: str) -> BatchCall | None:
        if not (path.startswith("/v1/files") or path.startswith("/v1/batches")):
            return None
        parts = path.split("/")[2:]  # ["files", id, "content"] / ["batches", id, "cancel"]
        return lambda raw: self._api(handler, method, parts, raw)

    def _api(self, handler: _Handler, method: str, parts: list[str], raw: bytes) -> tuple[int, Any]:
        kind, rest = parts[0], parts[1:]
        if kind == "files":
            if method == "POST" and not rest:
                return 200, self._upload(handler.headers.get("Content-Type") or "", raw)
            if method == "GET" and len(rest) == 1:
                return 200, self.files[rest[0]]["object"]
            if method == "GET" and len(rest) == 2 and rest[1] == "content":
                return 200, self.files[rest[0]]["data"]
        if kind == "batches":
            if method == "POST" and not rest:
                return self._create(json.loads(raw or b"{}"))
            if method == "GET" and not rest:
                return 200, self._list(parse_qs(urlsplit(handler.path).query))
            if method == "GET" and len(rest) == 1:
                return 200, self._retrieve(rest[0])
            if method == "POST" and len(rest) == 2 and rest[1] == "cancel":
                return 200, self._cancel(rest[0])
        return 404, self.error_body(404, f"no route for {method} /v1/{'/'.join(parts)}")

    # -- files -----------------------------------------------------------------------------------
    def _new_file(self, data: bytes, filename: str, purpose: str) -> dict[str, Any]:
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        obj = {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": filename,
            "purpose": purpose,
            "status": "processed",
        }
        self.files[file_id] = {"object": obj, "data": data}
        return obj

    def _upload(self, content_type: str, raw: bytes) -> dict[str, Any]:
        form = _multipart(content_type, raw)
        filename, data = form["file"]
        purpose = form.get("purpose", (None, b"batch"))[1].decode()
        return self._new_file(data, filename or "upload.jsonl", purpose)

    # -- batches ---------------------------------------------------------------------------------
    def _create(self, body: dict[str, Any]) -> tuple[int, Any]:
        file_id = body.get("input_file_id")
        if file_id not in self.files:
            return 400, self.error_body(400, f"input file {file_id!r} not found")
        lines = [
            json.loads(line) for line in self.files[file_id]["data"].decode().splitlines() if line
        ]
        batch_id = f"batch_{uuid.uuid4().hex[:24]}"
        now = int(time.time())
        batch = {
            "id": batch_id,
            "object": "batch",
            "endpoint": body.get("endpoint"),
            "errors": None,
            "input_file_id": file_id,
            "completion_window": body.get("completion_window", "24h"),
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": now,
            "expires_at": now + 86400,
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": body.get("metadata") or {},
        }
        self.batches[batch_id] = batch
        self.record_job(batch_id, lines, batch)
        return 200, batch

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        ordered = [self.batches[i] for i in reversed(self.created)]
        after = (query.get("after") or [None])[0]
        if after is not None:
            ids = [b["id"] for b in ordered]
            ordered = ordered[ids.index(after) + 1 :] if after in ids else []
        limit = int((query.get("limit") or ["20"])[0])
        page = ordered[:limit]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(ordered) > limit,
        }

    def _retrieve(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        status = batch["status"]
        if status in ("completed", "failed", "expired", "cancelled"):
            return batch
        if not self.poll_due(batch_id):
            return batch
        now = int(time.time())
        if status == "cancelling":
            self._finish(batch, "cancelled", keep=0, code="batch_cancelled")
        elif status == "validating" and self.fate(batch_id) == "fail":
            batch["status"], batch["failed_at"] = "failed", now
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "server_error", "message": "scripted failure", "line": None}],
            }
        elif status == "in_progress" and self.fate(batch_id) == "expire":
            self._finish(batch, "expired", keep=self.expire_keep, code="batch_expired")
        elif status == "in_progress":
            batch["status"], batch["finalizing_at"] = "finalizing", now
        elif status == "finalizing":
            self._finish(batch, "completed", keep=None, code="")
        else:
            batch["status"] = _FLOW[_FLOW.index(status) + 1]
            batch[f"{batch['status']}_at"] = now
        return batch

    def _cancel(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] not in ("completed", "failed", "expired", "cancelled"):
            batch["status"], batch["cancelling_at"] = "cancelling", int(time.time())
        return batch

    def _answer(self, line: dict[str, Any]) -> dict[str, Any]:
        """The output-or-error line of one request (same replies as online)."""
        body = line["body"]
        done, status = self.answer(body, str(body.get("model")))
        rid = f"req_{uuid.uuid4().hex[:16]}"
        if status is not None:
            response = {
                "status_code": status,
                "request_id": rid,
                "body": self.error_body(status, done.reply.text),
            }
        else:
            response = {"status_code": 200, "request_id": rid, "body": self.completion_body(done)}
        return {
            "id": f"batch_req_{uuid.uuid4().hex[:16]}",
            "custom_id": line["custom_id"],
            "response": response,
            "error": None,
        }

    def _finish(self, batch: dict[str, Any], status: str, *, keep: int | None, code: str) -> None:
        lines = self.job_requests[batch["id"]]
        ran, not_run = self.split_run(batch["id"], keep)
        outputs, errors = [], []
        for line in ran:
            answer = self._answer(line)
            (outputs if answer["response"]["status_code"] == 200 else errors).append(answer)
        for line in not_run:
            errors.append(
                {
                    "id": f"batch_req_{uuid.uuid4().hex[:16]}",
                    "custom_id": line["custom_id"],
                    "response": None,
                    "error": {"code": code, "message": f"request not run: batch {status}"},
                }
            )
        name = batch["id"]
        if outputs:
            data = "".join(json.dumps(o) + "\n" for o in outputs).encode()
            batch["output_file_id"] = self._new_file(data, f"{name}_output.jsonl", "batch_output")[
                "id"
            ]
        if errors:
            data = "".join(json.dumps(e) + "\n" for e in errors).encode()
            batch["error_file_id"] = self._new_file(data, f"{name}_error.jsonl", "batch_output")[
                "id"
            ]
        batch["request_counts"] = {
            "total": len(lines),
            "completed": len(outputs),
            "failed": len(errors),
        }
        batch["status"] = status
        batch[f"{status}_at"] = int(time.time())


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.openai_batch_server --port P --script FILE.json``."""
    return serve_main(OpenAIBatchServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
