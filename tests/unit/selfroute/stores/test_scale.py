"""Indexing cost per chunk, not per file; incremental BM25; retrieval without listings.

These pin the mechanisms behind the scale benchmark (benchmarks/bench_scale.py): how many store
writes a run makes, that a run adding files updates the BM25 index without reading the unchanged
chunks, that the update equals a from-scratch ``bm25s`` index, and that questions read only what
they need from a connection held across questions.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import BM25Index, DocumentStore, HybridRetriever
from selfroute.stores import _indexing as indexing_module
from selfroute.stores._bm25 import _tokenizer
from selfroute.stores._records import StoreReader
from tests.unit.selfroute.stores.notes import write_notes

MakeStore = Callable[..., DocumentStore]
WORDS = [
    "lighthouse",
    "keeper",
    "lamp",
    "storm",
    "boat",
    "harbour",
    "passkey",
    "vault",
    "river",
    "bank",
    "ledger",
    "invoice",
    "ticket",
    "refund",
    "printer",
    "error",
    "code",
    "meeting",
    "budget",
    "report",
]


def _notes(folder: Path, n: int, seed: int = 0) -> list[Path]:
    return write_notes(folder, n, WORDS, seed)


def _same_hits(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert got and [cid for cid, _ in got] == [cid for cid, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)


@pytest.fixture
def count_upserts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    from chromadb.api.models.Collection import Collection

    calls: list[tuple[str, int]] = []
    real = Collection.upsert

    def upsert(self: Any, ids: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append((self.name, len(ids)))
        return real(self, ids, *args, **kwargs)

    monkeypatch.setattr(Collection, "upsert", upsert)
    yield calls


def test_many_small_files_are_written_in_a_few_batches(
    tmp_path: Path, make_store: MakeStore, count_upserts: list[tuple[str, int]]
) -> None:
    _notes(tmp_path / "notes", 150)
    report = make_store().index([tmp_path / "notes"])
    assert len(report.added) == 150 and report.chunks == 150
    chunk_writes = [n for name, n in count_upserts if name == "selfroute"]
    record_writes = [n for name, n in count_upserts if name == "selfroute__documents"]
    # batches of 1, 8, 64, then the rest: four writes each, not 150
    assert chunk_writes == [1, 8, 64, 77] and record_writes == [1, 8, 64, 77]


def test_the_batch_grows_but_stays_within_its_bounds() -> None:
    batch = indexing_module._Batch()
    assert not batch.full(2)
    batch.chunks = indexing_module._MAX_BATCH_CHUNKS
    assert batch.full(10**6)
    batch.chunks, batch.size = 0, indexing_module._MAX_BATCH_BYTES
    assert batch.full(10**6)


def test_adding_files_updates_bm25_without_reading_unchanged_chunks(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes"
    _notes(notes, 60)
    make_store().index([notes])
    extra = _notes(tmp_path / "more", 5, seed=1)
    for i, path in enumerate(extra):
        path.rename(notes / f"extra-{i}.txt")

    def no_scan(self: StoreReader, include_text: bool) -> Any:
        raise AssertionError("an incremental run must not scan every chunk")

    monkeypatch.setattr(StoreReader, "iter_chunks", no_scan)
    store = make_store()
    report = store.index([notes])
    assert len(report.added) == 5 and report.bm25_rebuilt
    monkeypatch.undo()
    updated = store.bm25()
    assert store.bm25_state() == ("current", 65)
    rebuilt, _ = make_store().rebuild_bm25()
    for query in ("token3 lighthouse", "passkey vault token61", "refund printer"):
        _same_hits(updated.search(query, 10), rebuilt.search(query, 10))


def test_a_removed_file_leaves_the_bm25_index_incrementally(
    tmp_path: Path, make_store: MakeStore
) -> None:
    notes = tmp_path / "notes"
    paths = _notes(notes, 20)
    make_store().index([notes])
    paths[3].unlink()
    report = make_store().index([notes], prune=True)
    assert report.removed == [str(paths[3])]
    index = make_store().bm25()
    assert len(index) == 19 and not index.search("token3", 5)
    assert make_store().stats().orphan_chunks == 0


def test_the_update_scores_like_a_from_scratch_bm25s_index() -> None:
    import bm25s

    rng = random.Random(7)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 40))) for _ in range(200)]
    ids = [f"d{i}:0" for i in range(200)]
    tokenizer = _tokenizer()
    reference = bm25s.BM25()
    reference.index(tokenizer.tokenize(texts[40:], return_as="tuple", show_progress=False))
    expected = BM25Index(ids[40:], reference, tokenizer, "ref")
    updated = BM25Index.build(ids[:150], texts[:150], "old").updated(
        lambda cid: int(cid[1:].split(":")[0]) >= 40, ids[150:], texts[150:], "new"
    )
    assert updated.fingerprint == "new" and len(updated) == 160
    for query in ("lighthouse keeper", "refund printer error", "vault", "budget meeting report"):
        _same_hits(updated.search(query, 15), expected.search(query, 15))


def test_an_index_saved_without_tokens_is_rebuilt_not_updated(tmp_path: Path) -> None:
    index = BM25Index.build(["a:0"], ["lighthouse lamp"], "fp")
    index._tokens = None  # as saved by selfroute before incremental updates
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path, "fp")
    assert loaded is not None and not loaded.can_update
    with pytest.raises(ValueError, match="rebuild"):
        loaded.updated(lambda cid: True, [], [], "fp2")


def test_questions_hold_the_connection_and_list_nothing(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import chromadb

    _notes(tmp_path / "notes", 30)
    make_store().index([tmp_path / "notes"])
    opened: list[str] = []
    real = chromadb.PersistentClient

    def counting(*args: Any, **kwargs: Any) -> Any:
        opened.append(str(kwargs.get("path")))
        return real(*args, **kwargs)

    monkeypatch.setattr(chromadb, "PersistentClient", counting)
    store = make_store()
    retrievers = [HybridRetriever(store, mode=m, k=3) for m in ("hybrid", "dense", "bm25")]
    retrievers[0].retrieve("warm up")  # opens the collection once

    def no_listing(self: StoreReader) -> Any:
        raise AssertionError("a question must not list every committed document")

    monkeypatch.setattr(StoreReader, "committed_ids", no_listing)
    for question in ("token7 lighthouse", "refund printer", "token12"):
        for retriever in retrievers:
            hits = retriever.retrieve(question)
            assert hits and all(p.doc_id for p in hits)
    assert len(opened) == 1


def test_commit_markers_are_checked_only_while_a_journal_is_open(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _notes(tmp_path / "notes", 12)
    store = make_store()
    store.index([tmp_path / "notes"])
    checked: list[int] = []
    real = StoreReader.committed_among

    def counting(self: StoreReader, doc_ids: Any) -> set[str]:
        checked.append(len(doc_ids))
        return real(self, doc_ids)

    monkeypatch.setattr(StoreReader, "committed_among", counting)
    assert store.is_clean()
    assert HybridRetriever(store, k=3).retrieve("token4 ledger") and not checked
    # a killed run's journal: its documents' chunks may be uncommitted, so every answer is checked
    from selfroute.stores._journal import Journal

    Journal(store._conn.journal_path).begin(["0123456789abcdef"])
    assert not store.is_clean()
    assert HybridRetriever(store, k=3).retrieve("token4 ledger") and checked


def test_a_copy_whose_size_is_a_multiple_of_the_page_completes(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from selfroute.stores import _records
    from selfroute.stores._migrate import copy_collection

    _notes(tmp_path / "notes", 4)
    source = make_store()
    source.index([tmp_path / "notes"])
    monkeypatch.setattr(_records, "PAGE", 2)  # 4 records: the last page read is empty
    target = DocumentStore(tmp_path / "copy", "copied")
    report = copy_collection(source, target)
    assert (report.documents, report.chunks, report.bm25) == (4, 4, "copied")
    assert target.stats().documents == 4 and target.embedding == source.embedding
    assert target.committed_ids() == source.committed_ids()


def test_stats_after_an_index_run_equal_a_scan_without_one(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = tmp_path / "notes"
    paths = _notes(notes, 30)
    (notes / "long.txt").write_text(" ".join(WORDS * 40) + "\n", encoding="utf-8")
    scans: list[int] = []
    real = StoreReader.document_records

    def counted(self: StoreReader, *args: Any, **kwargs: Any) -> Any:
        scans.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StoreReader, "document_records", counted)

    def check(**kwargs: Any) -> None:
        store = make_store()
        report = store.index([notes], **kwargs)
        before = len(scans)
        quick = store.stats(after=report).to_dict()
        assert len(scans) == before  # no second scan of the records
        assert quick == make_store().stats().to_dict()
        assert quick["bm25"] == "current"

    check()  # first run: one-chunk notes and a multi-chunk document
    paths[0].write_text("changed " + paths[0].read_text(encoding="utf-8"), encoding="utf-8")
    _notes(tmp_path / "more", 2, seed=3)[0].rename(notes / "new.txt")
    paths[1].rename(notes / "moved.txt")
    check()  # changed, new and moved files
    paths[2].unlink()
    check(prune=True)  # a removed file
    check()  # nothing changed
    report = make_store().index([notes])
    assert make_store().stats(after=report, documents=True).document_list  # listing: a scan


def test_scans_read_pages_by_id_not_by_offset(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chroma serves ``offset`` by skipping rows: paging by offset is quadratic in the size."""
    from chromadb.api.models.Collection import Collection

    from selfroute.stores import _records

    _notes(tmp_path / "notes", 9)
    make_store().index([tmp_path / "notes"])
    calls: list[dict[str, Any]] = []
    real = Collection.get

    def get(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "get", get)
    monkeypatch.setattr(_records, "PAGE", 2)
    store = make_store()
    assert len(store._reader.document_records()) == 9
    assert len(store.committed_ids()) == 9
    assert len(list(store._reader.iter_chunks(include_text=True))) == 9
    assert calls and not [c for c in calls if c.get("offset")]
    assert max(len(c.get("ids") or []) for c in calls) == 2  # pages of PAGE ids
