"""The durable job file of a batch run: one JSON document, rewritten atomically.

It holds what a rerun needs to resume without paying twice: the items, every model answer
collected so far (by request key, with a signature of the prompt it answered), the submitted
batches (with the token each was submitted under, written *before* submitting, so a crash between
the provider accepting a batch and the id reaching the file is recovered by looking the token
up), retry counts and the finished results.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from selfroute._batch._protocol import BatchPoll, BatchReply
from selfroute._errors import ConfigurationError
from selfroute._flow import Generate, Generation
from selfroute._usage import Usage

__all__ = ["JobStore", "generation_from_dict", "generation_to_dict", "step_signature"]

FORMAT = "selfroute-batch-job"
VERSION = 1


def step_signature(step: Generate) -> str:
    """A short hash of what a Generate step asks (stage, prompt, structured form)."""
    h = hashlib.sha256()
    h.update(step.stage.value.encode())
    h.update(b"\0" + step.prompt.encode())
    if step.structured is not None:
        h.update(b"\0" + step.structured.prompt.encode())
        h.update(b"\0" + json.dumps(step.structured.schema, sort_keys=True).encode())
    return h.hexdigest()[:20]


def generation_to_dict(gen: Generation) -> dict[str, Any]:
    """Plain-dict form of a :class:`~selfroute.Generation` (latency dropped)."""
    return {
        "text": gen.text,
        "usage": gen.usage.to_dict() if gen.usage is not None else None,
        "model": gen.model,
        "structured": dict(gen.structured) if gen.structured is not None else None,
        "structured_error": gen.structured_error,
        "finish_reason": gen.finish_reason,
    }


def generation_from_dict(data: Mapping[str, Any]) -> Generation:
    """Inverse of :func:`generation_to_dict`."""
    raw = data.get("usage")
    usage = Usage.from_dict(raw) if isinstance(raw, Mapping) else None
    structured = data.get("structured")
    return Generation(
        text=str(data.get("text") or ""),
        usage=usage,
        model=data.get("model"),
        structured=structured if isinstance(structured, Mapping) else None,
        structured_error=data.get("structured_error"),
        finish_reason=data.get("finish_reason"),
    )


class JobStore:
    """The state of one batch job, kept in memory and (with a path) in a JSON file.

    Args:
        path: The job file; ``None`` keeps the state in memory only (not resumable).
        backend: The provider's name (a job file is tied to one provider).
        items: ``(id, question)`` of every item, in order.

    Raises:
        ConfigurationError: The file exists but belongs to another provider or other items, or
            is not a job file.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, backend: str, items: Sequence[tuple[str, str]]
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.resumed = False
        wanted = [{"id": i, "question": q} for i, q in items]
        data = self._load()
        if data is None:
            data = {
                "format": FORMAT,
                "version": VERSION,
                "backend": backend,
                "items": wanted,
                "phase": 0,
                "answers": {},
                "attempts": {},
                "batches": [],
                "results": {},
                "cancelled": False,
            }
        else:
            self.resumed = True
            where = f"job file {self.path}"
            if data.get("backend") != backend:
                raise ConfigurationError(
                    f"{where} belongs to the {data.get('backend')!r} batch provider, not "
                    f"{backend!r}; use another job file"
                )
            if data.get("items") != wanted:
                raise ConfigurationError(
                    f"{where} was made for other questions; use another job file (or delete it "
                    "to start over)"
                )
        self.data: dict[str, Any] = data

    def _load(self) -> dict[str, Any] | None:
        if self.path is None or not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"job file {self.path} cannot be read: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigurationError(f"{self.path} is not a selfroute batch job file")
        if data.get("version") != VERSION:
            raise ConfigurationError(
                f"job file {self.path} has version {data.get('version')!r}; this selfroute "
                f"reads version {VERSION}"
            )
        return data

    def save(self) -> None:
        """Write the state atomically (a temporary file, fsynced, renamed over the old one)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    # -- views -----------------------------------------------------------------------------------
    @property
    def answers(self) -> dict[str, dict[str, Any]]:
        """``{key: {"sig", "generation" | "error"}}``."""
        answers: dict[str, dict[str, Any]] = self.data["answers"]
        return answers

    @property
    def attempts(self) -> dict[str, int]:
        """``{key: batches the request was lost in}``."""
        attempts: dict[str, int] = self.data["attempts"]
        return attempts

    @property
    def batches(self) -> list[dict[str, Any]]:
        """Submitted (or being submitted) batches, in order."""
        batches: list[dict[str, Any]] = self.data["batches"]
        return batches

    @property
    def results(self) -> dict[str, dict[str, Any]]:
        """``{item id: {"result": dict | None, "error": str | None}}`` of finished items."""
        results: dict[str, dict[str, Any]] = self.data["results"]
        return results

    def open_batches(self) -> list[dict[str, Any]]:
        """Batches not collected yet."""
        return [b for b in self.batches if b["state"] in ("submitting", "submitted")]

    def record_replies(
        self,
        batch: dict[str, Any],
        poll: BatchPoll,
        replies: Sequence[BatchReply],
        max_attempts: int,
    ) -> tuple[int, int, int, int]:
        """Record a terminal batch's replies and close it (saved).

        A request the batch did not run is counted as lost; after ``max_attempts`` lost batches
        it is recorded as a failed call, else it waits for the next batch.

        Returns:
            ``(answered, request errors, lost, to retry)`` counts.
        """
        sigs: dict[str, str] = batch["sigs"]
        answered: set[str] = set()
        errors = 0
        for reply in replies:
            if reply.key not in sigs or reply.retryable:
                continue
            answered.add(reply.key)
            if reply.generation is not None:
                self.answers[reply.key] = {
                    "sig": sigs[reply.key],
                    "generation": generation_to_dict(reply.generation),
                }
            else:
                errors += 1
                self.answers[reply.key] = {"sig": sigs[reply.key], "error": reply.error}
        lost = [key for key in batch["keys"] if key not in answered]
        retry = 0
        for key in lost:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            if self.attempts[key] >= max_attempts:
                self.answers[key] = {
                    "sig": sigs[key],
                    "error": f"not run: lost in {self.attempts[key]} batches (last "
                    f"{batch['id']}: {poll.provider_state or poll.state.value})",
                }
            else:
                retry += 1
        batch["state"] = "collected"
        batch["final_state"] = poll.state.value
        self.save()
        return len(answered), errors, len(lost), retry

    def open_keys(self) -> set[str]:
        """Request keys in batches not collected yet."""
        return {key for b in self.open_batches() for key in b["keys"]}
