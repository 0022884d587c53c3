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
from typing import IO, Any

from selfroute._batch._protocol import BatchPoll, BatchReply
from selfroute._batch._settings import changed_settings
from selfroute._errors import ConfigurationError
from selfroute._flow import Generate, Generation
from selfroute._locks import held_by, release, try_lock
from selfroute._usage import Usage

__all__ = ["JobStore", "generation_from_dict", "generation_to_dict", "step_signature"]

FORMAT = "selfroute-batch-job"
VERSION = 1


_ORPHANS = (
    " (batches it submitted and did not collect are not cancelled: see the provider's console)"
)
_STATES = frozenset({"submitting", "submitted", "collected"})


def _wrong(name: str, value: Any, kind: str) -> str:
    return f"{name} is {type(value).__name__} {str(value)[:40]!r}, not {kind}"


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def damage(data: Mapping[str, Any]) -> str | None:
    """What is wrong with a job file's contents (keys, types), or ``None``: a file edited by hand
    or cut short is refused before anything is sent, never a bare ``KeyError``."""
    top: dict[str, tuple[type, str]] = {
        "backend": (str, "a string"),
        "items": (list, "a list"),
        "phase": (int, "an integer"),
        "answers": (dict, "an object"),
        "attempts": (dict, "an object"),
        "batches": (list, "a list"),
        "results": (dict, "an object"),
        "cancelled": (bool, "true or false"),
    }
    for key, (kind, words) in top.items():
        if key not in data:
            return f"no {key!r}"
        value = data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return _wrong(repr(key), value, words)
    settings = data.get("settings")
    if settings is not None and not (
        isinstance(settings, dict) and all(isinstance(v, str) for v in settings.values())
    ):
        return "'settings' is not an object of strings"
    for n, item in enumerate(data["items"]):
        if not (
            isinstance(item, dict)
            and isinstance(item.get("id"), str)
            and isinstance(item.get("question"), str)
        ):
            return f"items[{n}] is not {{'id': str, 'question': str}}"
    for key, answer in data["answers"].items():
        if not isinstance(answer, dict) or not isinstance(answer.get("sig"), str):
            return f"answers[{key!r}] has no 'sig' string"
        gen = answer.get("generation")
        if "error" not in answer and not isinstance(gen, dict):
            return f"answers[{key!r}] has neither a 'generation' object nor an 'error'"
    for key, count in data["attempts"].items():
        if not _int(count):
            return _wrong(f"attempts[{key!r}]", count, "an integer")
    for n, batch in enumerate(data["batches"]):
        where = f"batches[{n}]"
        if not isinstance(batch, dict):
            return _wrong(where, batch, "an object")
        if not isinstance(batch.get("token"), str):
            return f"{where} has no 'token' string"
        if batch.get("state") not in _STATES:
            return f"{where} 'state' is {batch.get('state')!r}, not one of {sorted(_STATES)}"
        if batch["state"] != "submitting" and not isinstance(batch.get("id"), str):
            return f"{where} has no batch 'id' string"
        if not _int(batch.get("phase")):
            return f"{where} has no integer 'phase'"
        keys, sigs = batch.get("keys"), batch.get("sigs")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            return f"{where} 'keys' is not a list of strings"
        if not isinstance(sigs, dict) or any(not isinstance(sigs.get(k), str) for k in keys):
            return f"{where} 'sigs' does not give a signature string for every key"
    for key, result in data["results"].items():
        if not isinstance(result, dict):
            return _wrong(f"results[{key!r}]", result, "an object")
    return None


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
        self,
        path: str | os.PathLike[str] | None,
        backend: str,
        items: Sequence[tuple[str, str]],
        settings: Mapping[str, str] | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.resumed = False
        self.notes: list[str] = []
        self._lock: IO[str] | None = None
        self.acquire()
        try:
            self.data: dict[str, Any] = self._open(backend, items, dict(settings or {}))
        except BaseException:
            self.release()
            raise

    def _open(
        self, backend: str, items: Sequence[tuple[str, str]], settings: dict[str, str]
    ) -> dict[str, Any]:
        wanted = [{"id": i, "question": q} for i, q in items]
        data = self._load()
        if data is None:
            return {
                "format": FORMAT,
                "version": VERSION,
                "backend": backend,
                "settings": settings,
                "items": wanted,
                "phase": 0,
                "answers": {},
                "attempts": {},
                "batches": [],
                "results": {},
                "cancelled": False,
            }
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
        recorded = data.get("settings")
        if recorded is None:  # written before job files recorded their settings
            data["settings"] = settings
            self.notes.append(
                f"{where} does not record the settings its answers were made with; this "
                "run's settings are recorded now (delete the file to ask everything again)"
            )
        else:
            changed = changed_settings(recorded, settings)
            if changed:
                raise ConfigurationError(
                    f"{where} was made with other settings, and its answers are those "
                    f"settings' answers: {'; '.join(changed)}. Nothing was sent. Rerun with "
                    "the job's settings, use another job file, or delete it to ask "
                    "everything again"
                )
        return data

    # -- the lock --------------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path | None:
        """The lock file beside the job file (``None`` in memory)."""
        return None if self.path is None else self.path.with_name(self.path.name + ".lock")

    def acquire(self) -> None:
        """Hold the job file's lock (one run of a job at a time); a no-op when held already.

        Raises:
            ConfigurationError: Another run (process or handle) holds it.
        """
        lock = self.lock_path
        if lock is None or self._lock is not None:
            return
        handle = try_lock(lock)
        if handle is None:
            pid = held_by(lock)
            who = f"process {pid}" if pid else "another process"
            raise ConfigurationError(
                f"job file {self.path} is in use by another run of this job ({who}); nothing "
                "was sent. Wait for it to finish (its answers are then in the job file), or "
                "stop it and run again"
            )
        self._lock = handle

    def release(self) -> None:
        """Let another run take the job file."""
        handle, self._lock = self._lock, None
        release(handle)

    def __del__(self) -> None:
        self.release()

    def _load(self) -> dict[str, Any] | None:
        if self.path is None or not self.path.exists():
            return None
        where = f"job file {self.path}"
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(f"{where} cannot be read: {exc}") from None
        except ValueError as exc:  # truncated, not JSON, not UTF-8
            raise ConfigurationError(
                f"{where} is damaged (not a complete JSON document: {exc}); nothing was sent. "
                f"Delete it to start over{_ORPHANS}"
            ) from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ConfigurationError(f"{self.path} is not a selfroute batch job file")
        if data.get("version") != VERSION:
            raise ConfigurationError(
                f"{where} has version {data.get('version')!r}; this selfroute "
                f"reads version {VERSION}"
            )
        problem = damage(data)
        if problem is not None:
            raise ConfigurationError(
                f"{where} is damaged ({problem}); nothing was sent. Delete it to start "
                f"over{_ORPHANS}"
            )
        return data

    def save(self) -> None:
        """Write the state atomically (a temporary file, fsynced, renamed over the old one)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in a refused question: \\uXXXX escapes
            text = json.dumps(self.data, ensure_ascii=True, separators=(",", ":"))
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
