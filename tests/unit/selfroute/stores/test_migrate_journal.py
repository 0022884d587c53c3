"""``copy_collection`` follows the indexer's protocol: journaled while chunks lack their records,
so an interrupted copy keeps readers checking commit markers and its rerun (or the next
``index`` run) completes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore, HybridRetriever
from selfroute.stores._migrate import copy_collection


def test_an_interrupted_copy_is_journaled_and_its_rerun_completes(
    tmp_path: Path, docs: Path, make_store: Callable[..., DocumentStore], monkeypatch: Any
) -> None:
    source = make_store()
    source.index([docs])
    target = DocumentStore(tmp_path / "copy", "copied")
    from selfroute.stores import _migrate

    real_pages = _migrate.pages

    def failing_pages(collection: Any, include: list[str]) -> Any:
        if collection.name.endswith("__documents"):  # chunks copied, records not yet
            raise KeyboardInterrupt
        return real_pages(collection, include)

    monkeypatch.setattr(_migrate, "pages", failing_pages)
    with pytest.raises(KeyboardInterrupt):
        copy_collection(source, target)
    journal = target._conn.journal_path
    assert journal.exists()  # the copied chunks are uncommitted: readers must check
    reader = DocumentStore(tmp_path / "copy", "copied")
    assert not reader.is_clean()
    assert reader.stats().orphan_chunks > 0
    assert HybridRetriever(reader, mode="dense", k=3).retrieve("oil crisis") == []

    monkeypatch.setattr(_migrate, "pages", real_pages)
    report = copy_collection(source, DocumentStore(tmp_path / "copy", "copied"))
    assert report.documents == source.document_count()
    assert not journal.exists()
    done = DocumentStore(tmp_path / "copy", "copied")
    assert done.is_clean() and done.stats().orphan_chunks == 0
    assert HybridRetriever(done, mode="dense", k=3).retrieve("oil crisis")
