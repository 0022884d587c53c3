"""What a reader of a Chroma server collection may serve without checking commit markers.

A chunk is served only if its document is committed (its record exists). On an embedded store
the local journal says when that needs checking (:meth:`StoreReader.is_clean`). A writer on
another machine leaves no local journal, so on a server every writer *marks* the chunk
collection's metadata (``selfroute:writer:<id>``) before its first write and removes its mark
once its run is complete (its journal cleared). A reader reads the marks at most once per
:data:`LEASE_S` and, while it saw none, serves query results as they come (one Chroma round trip
per dense question, like the raw query); while a mark is present it checks the commit markers of
its candidates in one more read, as before.

Why a killed run never leaks: a writer waits :data:`LEASE_S` (plus a margin) after its mark is
visible before it writes anything, so a reader that saw no mark stops trusting that before the
writer's first chunk exists; a killed run leaves its mark (and its journal), so readers keep
checking until a run from the same journal completes and removes it. Visibility: a concurrent
writer's committed documents are served by the next question that retrieves them (dense results
come from the server; a BM25 index is a local folder, current for writers that share it).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from selfroute.stores._errors import StoreError

__all__ = ["LEASE_S", "MARK_PREFIX", "CollectionMarks", "WriterMarks", "marks_in", "writer_key"]

#: Metadata key prefix of a writer's mark on the chunk collection.
MARK_PREFIX = "selfroute:writer:"
#: Seconds a reader trusts an unmarked collection after reading its marks.
LEASE_S = 1.0
#: A writer waits ``LEASE_S * _WAIT_FACTOR + _WAIT_MARGIN_S`` after marking (clock rates differ).
_WAIT_FACTOR = 1.2
_WAIT_MARGIN_S = 0.05
_MARK_ATTEMPTS = 5


def writer_key(journal: Path) -> str:
    """The mark key of the writer whose journal is ``journal`` on this host (a rerun from the
    same store folder removes the mark a killed run left)."""
    ident = f"{socket.gethostname()}\n{journal.resolve()}"
    return MARK_PREFIX + hashlib.sha256(ident.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def marks_in(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The writer marks in a collection's metadata."""
    return {k: v for k, v in (metadata or {}).items() if str(k).startswith(MARK_PREFIX)}


class WriterMarks:
    """The reader's lease on "no writer is active" and the writer's mark, for one collection.

    Args:
        read_metadata: Reads the chunk collection's current metadata from the server.
        write_metadata: Replaces it.
        lease_s: Seconds of the lease (``None``: :data:`LEASE_S` at construction).
        clock: Monotonic seconds.
        sleep: Waits seconds.
    """

    def __init__(
        self,
        read_metadata: Callable[[], Mapping[str, Any] | None],
        write_metadata: Callable[[dict[str, Any]], None],
        *,
        lease_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._read = read_metadata
        self._write = write_metadata
        self.lease_s = LEASE_S if lease_s is None else lease_s
        self._clock = clock
        self._sleep = sleep
        self._trusted_until = float("-inf")
        self._next_read = float("-inf")
        #: Metadata reads made (tests count round trips).
        self.reads = 0

    def unmarked(self) -> bool:
        """Whether no writer was marked within the lease (reads the marks at most once per
        lease; a marked collection is read again one lease later)."""
        now = self._clock()
        if now < self._trusted_until:
            return True
        if now < self._next_read:
            return False
        self.reads += 1
        marked = bool(marks_in(self._read()))
        # the lease counts from before the read: the writer's wait started after its mark
        self._next_read = now + self.lease_s
        self._trusted_until = float("-inf") if marked else now + self.lease_s
        return not marked

    def forget(self) -> None:
        """Read the marks again at the next question."""
        self._trusted_until = self._next_read = float("-inf")

    def mark(self, key: str, note: str) -> None:
        """Add this writer's mark and wait until no reader can still trust an unmarked read.

        The metadata is replaced as a whole, so the mark is read back after the wait (another
        writer's concurrent update may have dropped it) and written again if it is gone.
        """
        wait = self.lease_s * _WAIT_FACTOR + _WAIT_MARGIN_S
        for _ in range(_MARK_ATTEMPTS):
            meta = dict(self._read() or {})
            if key not in meta:
                meta[key] = note
                self._write(meta)
                self._sleep(wait)
                if key not in (self._read() or {}):
                    continue
            self.forget()  # this process writes: its own questions must check from now on
            return
        raise StoreError(
            f"could not keep the writer mark {key} on the collection: other writers keep "
            "replacing its metadata"
        )

    def unmark(self, key: str) -> None:
        """Remove this writer's mark (its run is complete)."""
        meta = dict(self._read() or {})
        if key in meta:
            del meta[key]
            self._write(meta)
        self.forget()


class CollectionMarks(WriterMarks):
    """The :class:`WriterMarks` of one server collection, read and written through its client.

    Args:
        collection: Returns the chunk collection as the server has it now (a fresh read).
        journal: The writer's journal (its mark's key, :func:`writer_key`).
    """

    def __init__(self, collection: Callable[[], Any], journal: Path) -> None:
        super().__init__(self._read_metadata, self._write_metadata)
        self._collection = collection
        self._journal = journal
        self.marked = False

    def _read_metadata(self) -> dict[str, Any]:
        return dict(self._collection().metadata or {})

    def _write_metadata(self, metadata: dict[str, Any]) -> None:
        self._collection().modify(metadata=metadata)

    def mark_writer(self) -> None:
        """Mark this process's run (once), waiting out the readers' lease."""
        if self.marked:
            return
        since = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        self.mark(writer_key(self._journal), f"{socket.gethostname()} pid {os.getpid()} {since}")
        self.marked = True

    def unmark_writer(self) -> None:
        """Remove this process's mark, if it made one (its run left nothing in flight)."""
        if self.marked:
            self.marked = False
            self.unmark(writer_key(self._journal))
