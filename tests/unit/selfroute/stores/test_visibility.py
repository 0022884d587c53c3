"""The writer marks and the reader's lease (selfroute.stores._visibility), on a fake clock.

The integration side (two clients, one real ``chroma run`` server, a killed writer) is
tests/integration/cli/test_server_retrieval.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from selfroute.stores._errors import StoreError
from selfroute.stores._visibility import MARK_PREFIX, WriterMarks, marks_in, writer_key


class FakeCollection:
    """A collection's metadata on a fake clock: reads, writes and the time they happen."""

    def __init__(self) -> None:
        self.now = 100.0
        self.metadata: dict[str, Any] = {"selfroute:embedding": "offline"}
        self.writes: list[float] = []
        self.drop_next_mark = 0

    def read(self) -> dict[str, Any]:
        return dict(self.metadata)

    def write(self, metadata: dict[str, Any]) -> None:
        self.writes.append(self.now)
        self.metadata = dict(metadata)

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        if self.drop_next_mark:  # another writer replaced the metadata meanwhile
            self.drop_next_mark -= 1
            self.metadata = {
                k: v for k, v in self.metadata.items() if k not in marks_in(self.metadata)
            }

    def marks(self, **kwargs: Any) -> WriterMarks:
        return WriterMarks(
            self.read, self.write, clock=lambda: self.now, sleep=self.sleep, **kwargs
        )


def test_an_unmarked_collection_is_read_once_per_lease() -> None:
    col = FakeCollection()
    marks = col.marks(lease_s=1.0)
    assert marks.unmarked() and marks.reads == 1
    for _ in range(50):
        col.now += 0.01
        assert marks.unmarked()
    assert marks.reads == 1  # half a lease of questions: no more reads
    col.now += 0.6
    assert marks.unmarked() and marks.reads == 2


def test_a_marked_collection_is_checked_and_read_again_one_lease_later() -> None:
    col = FakeCollection()
    col.metadata[MARK_PREFIX + "abc"] = "host pid 1"
    marks = col.marks(lease_s=1.0)
    assert not marks.unmarked() and marks.reads == 1
    col.now += 0.5
    assert not marks.unmarked() and marks.reads == 1  # no read: still treated as marked
    del col.metadata[MARK_PREFIX + "abc"]  # the writer finished
    col.now += 0.6
    assert marks.unmarked() and marks.reads == 2


def test_a_writer_waits_out_every_reader_lease_before_writing() -> None:
    col = FakeCollection()
    reader = col.marks(lease_s=1.0)
    writer = col.marks(lease_s=1.0)
    assert reader.unmarked()  # the reader trusts the collection from now
    trusted_from = col.now
    writer.mark(MARK_PREFIX + "w", "writer")
    first_write_allowed = col.now
    assert col.writes == [trusted_from] and MARK_PREFIX + "w" in col.metadata
    # the reader's lease ran out before the writer may write anything
    assert first_write_allowed > trusted_from + reader.lease_s
    assert not reader.unmarked()
    writer.unmark(MARK_PREFIX + "w")
    assert marks_in(col.metadata) == {} and col.metadata["selfroute:embedding"] == "offline"
    col.now += 1.1
    assert reader.unmarked()


def test_a_mark_lost_to_a_concurrent_replace_is_written_again() -> None:
    col = FakeCollection()
    col.drop_next_mark = 1
    col.marks(lease_s=1.0).mark(MARK_PREFIX + "w", "writer")
    assert len(col.writes) == 2 and MARK_PREFIX + "w" in col.metadata
    col.drop_next_mark = 99
    with pytest.raises(StoreError, match="writer mark"):
        col.marks(lease_s=1.0).mark(MARK_PREFIX + "x", "writer")


def test_unmarking_keeps_other_writers_marks() -> None:
    col = FakeCollection()
    col.metadata[MARK_PREFIX + "other"] = "another machine"
    marks = col.marks(lease_s=1.0)
    marks.mark(MARK_PREFIX + "mine", "this one")
    marks.unmark(MARK_PREFIX + "mine")
    assert marks_in(col.metadata) == {MARK_PREFIX + "other": "another machine"}
    assert not marks.unmarked()


def test_the_writer_key_is_stable_per_host_and_journal(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / ".c.journal", tmp_path / "b" / ".c.journal"
    assert writer_key(a) == writer_key(a) != writer_key(b)
    assert writer_key(a).startswith(MARK_PREFIX)
