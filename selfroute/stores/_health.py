"""Clear errors for a store that is full, corrupt, locked or read-only, and querying a read-only one.

Chroma reports these conditions in its own words ("Error in compaction" for a full disk, a Rust
panic for a damaged page, nothing at all while another process holds the database locked).
:func:`explain_failure` turns any such failure into a :class:`~selfroute.stores.StoreError` that
names the store and the condition; :func:`guarded` applies it to the store's public methods;
:func:`check_not_locked` waits a bounded time for a lock instead of blocking forever; and
:func:`snapshot` gives a read-only store (a shipped, mounted read-only folder) a private
writable copy, because Chroma's embedded client cannot open a database it cannot write.
"""

from __future__ import annotations

import asyncio
import atexit
import errno
import functools
import logging
import os
import shutil
import signal
import sqlite3
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from selfroute._errors import SelfRouteError
from selfroute._redact import describe_exception
from selfroute.stores._errors import StoreError

__all__ = [
    "DATABASE_FILE",
    "catchable",
    "check_not_locked",
    "explain_failure",
    "guarded",
    "is_read_only",
    "snapshot",
]

logger = logging.getLogger("selfroute")

#: Chroma's database file inside an embedded store's folder.
DATABASE_FILE = "chroma.sqlite3"
_LOW_SPACE_BYTES = 8 * 1024 * 1024
_FULL = ("no space left", "database or disk is full", "disk full", "disk quota")
#: Chroma 1.x applies its write-ahead log on a read and, when that write fails (a full disk),
#: raises a bare ``Exception`` with one of these and no word of the cause.
_WRITE_ON_READ = ("backfill request to compactor", "failed to apply logs", "compactor")
_READ_ONLY = ("readonly database", "read-only file system", "permission denied")
_LOCKED = ("database is locked", "database table is locked")
_CORRUPT = ("malformed", "not a database", "corrupt", "file is encrypted")
_NEVER_CAUGHT = (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)

F = TypeVar("F", bound=Callable[..., Any])


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in out and len(out) < 10:
        out.append(current)
        current = current.__cause__ or current.__context__
    return out


def _free_bytes(path: Path) -> int | None:
    for candidate in (path, *path.parents):
        try:
            return shutil.disk_usage(candidate).free
        except OSError:
            continue
    return None


def _size(n: int) -> str:
    if n < 1024:
        return f"{n:,} bytes"
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            break
    return f"{value:,.1f} {unit}"


def explain_failure(exc: BaseException, location: str, action: str) -> StoreError:
    """A :class:`StoreError` naming the store and what went wrong with it.

    Args:
        exc: What Chroma, sqlite or the file system raised.
        location: The store's folder (or server URL).
        action: What was being done ("reading", "indexing into", "opening").
    """
    chain = _chain(exc)
    text = " | ".join(str(e) for e in chain).lower()
    codes = {getattr(e, "errno", None) for e in chain}
    detail = describe_exception(exc)
    path = Path(location)
    free = None if "://" in location else _free_bytes(path)
    low = free is not None and free < _LOW_SPACE_BYTES
    other = any(k in text for k in (*_READ_ONLY, *_LOCKED, *_CORRUPT))
    write_on_read = any(k in text for k in _WRITE_ON_READ)
    if (
        errno.ENOSPC in codes
        or any(k in text for k in _FULL)
        or (low and (action != "reading" or not other))
    ):
        room = f" ({_size(free)} free)" if free is not None else ""
        return StoreError(
            f"no space left on the device holding the store at {location}{room}: free some "
            "space and run the same command again (completed documents stay indexed)",
            location=location,
            condition="full",
            cause=detail,
        )
    if write_on_read and not other:
        room = f", {_size(free)} free" if free is not None else ""
        return StoreError(
            f"{action} the store at {location} failed because Chroma could not write to its "
            f"database ({detail}{room}): the disk holding it is probably full (or the folder is "
            "not writable); free some space and run the same command again",
            location=location,
            condition="full" if free is None else "error",
            cause=detail,
        )
    if errno.EROFS in codes or errno.EACCES in codes or any(k in text for k in _READ_ONLY):
        return StoreError(
            f"the store at {location} is not writable ({detail}); it can be queried, but "
            "indexing needs write access (or index into another --store)",
            location=location,
            condition="read_only",
            cause=detail,
        )
    if any(k in text for k in _LOCKED):
        return StoreError(
            f"the store at {location} is locked by another process ({detail}); wait for it "
            "(another `selfroute index`, or a program holding the database) and try again",
            location=location,
            condition="locked",
            cause=detail,
        )
    if any(k in text for k in _CORRUPT) or type(exc).__name__ == "PanicException":
        return StoreError(
            f"the store at {location} is damaged ({detail}): its database cannot be read; "
            "restore it from a backup or index the documents again into a new --store",
            location=location,
            condition="corrupt",
            cause=detail,
        )
    return StoreError(
        f"{action} the store at {location} failed: {detail}",
        location=location,
        condition="error",
        cause=detail,
    )


def catchable(exc: BaseException) -> bool:
    """Exceptions to explain: ordinary ones and Chroma's Rust panics (a ``BaseException``)."""
    if isinstance(exc, _NEVER_CAUGHT):
        return False
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def guarded(action: str, *, check_lock: bool = False) -> Callable[[F], F]:
    """Decorate a store method: failures become :func:`explain_failure` errors.

    Errors selfroute raised on purpose (``SelfRouteError``) pass through unchanged. The store is
    ``self.location``; with ``check_lock`` the method first calls ``self._check_lock()`` (a
    bounded wait for another process's lock on the database).
    """

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                if check_lock:
                    self._check_lock()
                return method(self, *args, **kwargs)
            except SelfRouteError:
                raise
            except BaseException as exc:
                if not catchable(exc):
                    raise
                raise explain_failure(exc, str(self.location), action) from exc

        return cast("F", wrapper)

    return decorate


#: Whether connections are held between checks (not on Windows, where an open file cannot be
#: deleted: a store folder must stay removable).
_HOLD = os.name != "nt"
#: Per thread: the read-only connection of each database checked (see :func:`check_not_locked`).
_checkers = threading.local()


def _checker(database: Path, timeout_s: float) -> sqlite3.Connection | None:
    """This thread's held read-only connection to ``database`` (opened on first use, again
    when the file was replaced or the timeout changed), or ``None`` (no such file, or it does
    not open this way)."""
    try:
        st = os.stat(database)
    except OSError:
        return None
    held: dict[str, tuple[tuple[int, int, float], sqlite3.Connection]] | None
    held = getattr(_checkers, "held", None)
    if held is None:
        held = _checkers.held = {}
    key, ident = str(database), (st.st_dev, st.st_ino, timeout_s)
    found = held.get(key)
    if found is not None and found[0] == ident:
        return found[1]
    if found is not None:
        found[1].close()
        del held[key]
    try:
        conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=timeout_s)
    except sqlite3.Error:
        return None
    if _HOLD:
        held[key] = (ident, conn)
    return conn


def check_not_locked(database: Path, timeout_s: float, location: str) -> None:
    """Wait at most ``timeout_s`` for a read of ``database``; a lock held longer is an error.

    Chroma's own client waits without end (and without a word) while another process holds the
    sqlite database locked; this check turns that into a :class:`StoreError` after a bound. The
    read goes through a connection each thread holds (a fresh connection per check costs more
    than the store read it guards); it holds no lock between checks (the statement is run to
    its end, and no transaction is left open), so writers are never kept waiting by it.
    """
    conn = _checker(database, timeout_s)
    if conn is None:
        return  # no file, or it cannot even be opened this way: let Chroma report what is wrong
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc).lower():
            raise StoreError(
                f"the store at {location} is locked by another process: its database stayed "
                f"locked for {timeout_s:g} s ({exc}); wait for the other program (another "
                "`selfroute index`?) and try again",
                location=location,
                condition="locked",
            ) from None
    except sqlite3.DatabaseError:
        pass  # damaged: Chroma's own error is explained by the caller
    finally:
        if not _HOLD:
            conn.close()


def is_read_only(folder: Path) -> bool:
    """Whether the store folder (or its database) exists but cannot be written."""
    database = folder / DATABASE_FILE
    if not database.is_file():
        return False
    return not (os.access(folder, os.W_OK) and os.access(database, os.W_OK))


_snapshots: list[str] = []

#: Signals that end a process without running ``atexit``: a private copy (document text
#: included) must not outlive them in ``$TMPDIR``.
_FATAL_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


def _remove_snapshots() -> None:
    while _snapshots:
        shutil.rmtree(_snapshots.pop(), ignore_errors=True)


atexit.register(_remove_snapshots)


def _remove_then_die(signum: int, frame: Any) -> None:
    """Remove the private copies, then end as the signal would have (its default action)."""
    _remove_snapshots()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _guard_signals() -> None:
    """Remove the private copies on SIGTERM/SIGHUP too, for signals whose disposition is still
    the default (a handler the program set is left alone: it decides how to end, and ``atexit``
    removes the copies when it exits). Only the main thread can set handlers: elsewhere the
    copies are removed at exit only."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in _FATAL_SIGNALS:
        try:
            if signal.getsignal(signum) is signal.SIG_DFL:
                signal.signal(signum, _remove_then_die)
        except (ValueError, OSError):  # pragma: no cover - not settable here
            continue


def snapshot(folder: Path) -> Path:
    """A private writable copy of a read-only store's Chroma files (removed at exit, and on
    SIGTERM/SIGHUP when the program has no handler of its own for them).

    The BM25 index is not copied: it is read from the original folder.
    """
    _guard_signals()
    target = Path(tempfile.mkdtemp(prefix="selfroute-readonly-"))
    _snapshots.append(str(target))
    copy = target / "store"
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("bm25", ".index-*.lock"))
    logger.warning(
        "the store at %s is read-only: querying a private copy in %s (removed at exit)",
        folder,
        copy,
    )
    return copy
