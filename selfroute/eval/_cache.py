"""An on-disk cache of model answers, so an interrupted eval resumes without paying twice."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._flow import Generation
from selfroute._usage import Usage

__all__ = ["CachedAnswer", "ResponseCache", "default_cache_path"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    identity_sha TEXT NOT NULL,
    prompt_sha TEXT NOT NULL,
    text TEXT NOT NULL,
    usage TEXT,
    model TEXT,
    latency_s REAL NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    """``$SELFROUTE_CACHE_DIR/eval-cache.sqlite``, else under ``$XDG_CACHE_HOME`` or ``~/.cache``."""
    base = os.environ.get("SELFROUTE_CACHE_DIR")
    if base:
        return Path(base) / "eval-cache.sqlite"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "selfroute" / "eval-cache.sqlite"


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CachedAnswer:
    """A stored answer.

    Attributes:
        generation: What the model wrote, with its provider usage and model name.
        latency_s: Latency of the original call (reports show what the answer cost to get).
    """

    generation: Generation
    latency_s: float


class ResponseCache:
    """Model answers stored in SQLite, keyed by SHA-256 of (reader identity, prompt).

    The reader identity holds the model name, endpoint and sampling parameters, so a different
    model, prompt or temperature never reads another's entry; the entry also stores both hashes and
    a read checks them. Each answer is written in its own transaction, so an interrupted run leaves
    complete entries only. Only successful calls are stored: failures are retried on the next run.

    Args:
        path: The SQLite file (created with its folder).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        if self.path.exists() and self.path.is_dir():
            raise ConfigurationError(f"cache path {self.path} is a folder; give a file name")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
        except sqlite3.DatabaseError as exc:
            raise ConfigurationError(f"cannot use {self.path} as a response cache: {exc}") from exc
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(identity: str, prompt: str) -> str:
        """The entry key for ``prompt`` sent to the reader with ``identity``."""
        payload = json.dumps({"identity": identity, "prompt": prompt}, sort_keys=True)
        return _sha(payload)

    def get(self, identity: str, prompt: str) -> CachedAnswer | None:
        """The stored answer, or ``None``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT identity_sha, prompt_sha, text, usage, model, latency_s FROM answers "
                "WHERE key = ?",
                (self.key(identity, prompt),),
            ).fetchone()
        if row is None or row[0] != _sha(identity) or row[1] != _sha(prompt):
            self.misses += 1
            return None
        self.hits += 1
        usage = _usage_from_json(row[3])
        return CachedAnswer(Generation(text=row[2], usage=usage, model=row[4]), float(row[5]))

    def contains(self, identity: str, prompt: str) -> bool:
        """Whether an answer is stored (does not count as a hit)."""
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM answers WHERE key = ?", (self.key(identity, prompt),)
            ).fetchone()
        return row is not None

    def put(self, identity: str, prompt: str, generation: Generation, latency_s: float) -> None:
        """Store an answer (atomically; replaces an entry with the same key)."""
        usage = None if generation.usage is None else json.dumps(generation.usage.to_dict())
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.key(identity, prompt),
                    _sha(identity),
                    _sha(prompt),
                    generation.text,
                    usage,
                    generation.model,
                    float(latency_s),
                    time.time(),
                ),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _usage_from_json(raw: str | None) -> Usage | None:
    if not raw:
        return None
    data: dict[str, Any] = json.loads(raw)
    return Usage.of(
        data["input_tokens"],
        data["output_tokens"],
        total_tokens=data.get("total_tokens"),
        cached_input_tokens=data.get("cached_input_tokens"),
        source=data.get("source", "provider"),
    )
