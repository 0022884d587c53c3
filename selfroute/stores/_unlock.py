"""Clearing what a dead writer left: its writer mark on a server collection, its orphan chunks,
its journal (``selfroute unlock``).

A killed ``index`` or ``migrate`` leaves its journal and, on a Chroma server, its writer mark
(:mod:`._visibility`): readers then keep checking the commit markers of every candidate until a
complete run *from the same store folder on the same host* removes them. When that run will never
come (the writer's machine is gone, its folder was deleted), :func:`release_dead_writers` does
the clean-up such a run would do, in its order: delete the chunks that have no document record
(they are never served, but they are why readers check), clear the local journal, then remove
the marks -- and only once no writer can still be running (a run that starts during the clean-up
marks the collection before it writes, and is seen: see :func:`_delete_orphans`):

* a writer of this store folder on this host holds the collection's writer lock while it runs:
  a held lock is always refused (and that writer's own mark is dead once the lock is free);
* a mark made on this host names its writer's process id: a process that still exists is
  refused unless ``force`` (a process id reused since, e.g. after a reboot);
* a mark made on another host cannot be checked from here: refused unless ``force``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field
from typing import Any

from selfroute.stores._connection import StoreConnection, quiet_chroma
from selfroute.stores._errors import StoreError
from selfroute.stores._journal import Journal, writer_lock
from selfroute.stores._records import PAGE
from selfroute.stores._store import DocumentStore
from selfroute.stores._visibility import marks_in, writer_key

__all__ = ["UnlockReport", "WriterMark", "parse_mark", "release_dead_writers"]


@dataclass(frozen=True)
class WriterMark:
    """A writer mark on a collection, as its note describes the writer.

    Attributes:
        key: The metadata key (``selfroute:writer:<id>``).
        note: The note: ``HOST pid PID SINCE``.
        host: The writer's host name (``None`` if the note cannot be read).
        pid: Its process id (``None`` if the note cannot be read).
        since: When it marked the collection (ISO 8601, UTC).
    """

    key: str
    note: str
    host: str | None
    pid: int | None
    since: str

    def describe(self) -> str:
        """``host HOST pid PID since SINCE`` (or the raw note)."""
        if self.host is None:
            return repr(self.note)
        return f"host {self.host} pid {self.pid} since {self.since}"


def parse_mark(key: str, note: object) -> WriterMark:
    """The :class:`WriterMark` of a metadata entry (:meth:`CollectionMarks.mark_writer` notes)."""
    text = str(note)
    parts = text.split(" ")
    if len(parts) == 4 and parts[1] == "pid" and parts[2].isdigit():
        return WriterMark(key, text, parts[0], int(parts[2]), parts[3])
    return WriterMark(key, text, None, None, "")


@dataclass
class UnlockReport:
    """What :func:`release_dead_writers` removed.

    Attributes:
        location: The collection's location and name.
        marks_removed: The writer marks removed.
        orphan_chunks_removed: Chunks without a document record, deleted.
        journal_cleared: Whether a journal left by a killed run was cleared.
    """

    location: str
    marks_removed: list[WriterMark] = field(default_factory=list)
    orphan_chunks_removed: int = 0
    journal_cleared: bool = False

    @property
    def changed(self) -> bool:
        """Whether anything was left to clear."""
        return bool(self.marks_removed or self.orphan_chunks_removed or self.journal_cleared)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "location": self.location,
            "marks_removed": [
                {"key": m.key, "host": m.host, "pid": m.pid, "since": m.since, "note": m.note}
                for m in self.marks_removed
            ],
            "orphan_chunks_removed": self.orphan_chunks_removed,
            "journal_cleared": self.journal_cleared,
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    except OSError:
        return False
    return True


def _refusal(mark: WriterMark, host: str, own_key: str) -> str | None:
    """Why ``mark`` may belong to a running writer (``None``: its writer is dead)."""
    if mark.key == own_key:  # this folder's writer: its lock, held by the caller, was free
        return None
    if mark.host is None:
        return f"writer mark {mark.key} ({mark.describe()}) does not say which process made it"
    if mark.host != host:
        return (
            f"writer mark {mark.key} was made on host {mark.host} (pid {mark.pid}, since "
            f"{mark.since}); this machine cannot tell whether that run is still going"
        )
    if mark.pid is not None and mark.pid != os.getpid() and _alive(mark.pid):
        return (
            f"writer mark {mark.key} was made by process {mark.pid} on this host (since "
            f"{mark.since}), which is still running"
        )
    return None


def _current_metadata(conn: StoreConnection) -> dict[str, Any]:
    """The chunk collection's metadata as Chroma has it now (not as it was opened)."""
    with quiet_chroma():
        collection = conn.client(create=False).get_collection(conn.collection_name)
    return dict(collection.metadata or {})


def _delete_orphans(store: DocumentStore, seen_marks: set[str]) -> int:
    """Delete every chunk whose document has no record; returns how many.

    A writer elsewhere may start meanwhile: it marks the collection a lease before its first
    chunk, so a mark that appeared during the scan means a chunk seen may be its own (refused);
    and a run that finished meanwhile committed its chunks, so the candidates' records are read
    again just before the delete.
    """
    committed = set(store.committed_ids())
    candidates = [
        (cid, str(meta.get("doc_id")))
        for cid, meta, _ in store._iter_chunks(False)
        if meta.get("doc_id") not in committed
    ]
    appeared = sorted(set(marks_in(_current_metadata(store._conn))) - seen_marks)
    if appeared:
        raise StoreError(
            f"not unlocking: writer mark {appeared[0]} appeared while the store was scanned: "
            "another run has started; let it finish"
        )
    now = store._reader.committed_among([doc for _, doc in candidates])
    orphans = [cid for cid, doc in candidates if doc not in now]
    chunks, _ = store._open()
    for start in range(0, len(orphans), PAGE):
        chunks.delete(ids=orphans[start : start + PAGE])
    return len(orphans)


def release_dead_writers(store: DocumentStore, *, force: bool = False) -> UnlockReport:
    """Remove what dead writers left on ``store``'s collection (see the module docstring).

    Args:
        store: The collection (embedded or on a server).
        force: Also clear marks whose writer cannot be checked from here (another host) or
            whose process id exists (reused since): the caller knows those runs are over.

    Returns:
        What was removed.

    Raises:
        StoreError: A writer of this store folder holds the lock, or (without ``force``) a
            mark's writer may still be running; nothing is changed then.
    """
    conn = store._conn
    report = UnlockReport(f"{conn.location} (collection {conn.collection_name!r})")
    store._open()  # no store or collection: an error before the lock creates any folder
    with writer_lock(conn.path, conn.collection_name):  # a live local writer: refused here
        host, own = socket.gethostname(), writer_key(conn.journal_path)
        marks = [parse_mark(k, v) for k, v in marks_in(_current_metadata(conn)).items()]
        refusals = [r for r in (_refusal(m, host, own) for m in marks) if r is not None]
        if refusals and not force:
            raise StoreError(
                "not unlocking: "
                + "; ".join(refusals)
                + ". Once that run is over (stopped, or its machine gone), run `selfroute "
                "unlock --force`"
            )
        journal = Journal(conn.journal_path)
        if marks or journal.path.exists():
            # readers check commit markers while a mark or journal is left: the orphans go first
            report.orphan_chunks_removed = _delete_orphans(store, {m.key for m in marks})
        if journal.path.exists():
            journal.clear()
            report.journal_cleared = True
        if marks:
            writer = conn.writer_marks()
            for mark in marks:
                writer.unmark(mark.key)
            report.marks_removed = marks
    return report
