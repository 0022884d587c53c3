"""One exclusive advisory lock per file, held by an open handle (``flock``; POSIX only).

``selfroute index`` holds one per collection (one writer at a time) and a batch job one per job
file (one run at a time). The lock goes with the process: a killed holder leaves nothing to
clean up. On Windows there is no advisory lock and :func:`try_lock` always succeeds.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

__all__ = ["held_by", "release", "try_lock"]


def try_lock(path: Path) -> IO[str] | None:
    """Take the exclusive lock of ``path`` (created if missing) without waiting.

    Returns:
        The open handle that holds it (keep it; :func:`release` or closing it lets go), or
        ``None`` when another handle holds it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - the handle is the lock
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory lock
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    with contextlib.suppress(OSError):  # who holds it, for the other process's message
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
    return handle


def held_by(path: Path) -> str | None:
    """The process id the holder of ``path``'s lock wrote, if any."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, ValueError):
        return None
    return text if text.isdigit() else None


def release(handle: IO[str] | None) -> None:
    """Let go of a lock :func:`try_lock` took (closing the handle releases it)."""
    if handle is None:
        return
    with contextlib.suppress(OSError):
        import fcntl

        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        handle.close()
