"""The small-file indexing path: the background writer, the one-field record layout (and stores
written before it), and the first run's BM25 index built without reading the chunks back.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore, HybridRetriever, StoreError, read_document
from selfroute.stores import _indexing as indexing_module
from selfroute.stores import _store as store_module
from selfroute.stores._records import RECORD_KEY, StoreReader, pack_record, unpack_record
from tests.unit.selfroute.stores.notes import write_notes

MakeStore = Callable[..., DocumentStore]
WORDS = ["lighthouse", "keeper", "lamp", "storm", "boat", "harbour", "passkey", "vault", "ledger"]


def _notes(folder: Path, n: int, seed: int = 0) -> list[Path]:
    return write_notes(folder, n, WORDS, seed)


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str, int, str]]]:
    """Every ``upsert``/``delete`` on a collection: (call, collection, records, thread name)."""
    from chromadb.api.models.Collection import Collection

    calls: list[tuple[str, str, int, str]] = []
    real_upsert, real_delete = Collection.upsert, Collection.delete

    def upsert(self: Any, ids: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(("upsert", self.name, len(ids), threading.current_thread().name))
        return real_upsert(self, ids, *args, **kwargs)

    def delete(self: Any, *args: Any, **kwargs: Any) -> Any:
        ids = kwargs.get("ids") or (args[0] if args else None) or []
        calls.append(("delete", self.name, len(ids), threading.current_thread().name))
        return real_delete(self, *args, **kwargs)

    monkeypatch.setattr(Collection, "upsert", upsert)
    monkeypatch.setattr(Collection, "delete", delete)
    yield calls


# -- the background writer ---------------------------------------------------------------------
def test_batches_are_written_off_the_main_thread_one_at_a_time_in_protocol_order(
    tmp_path: Path, make_store: MakeStore, store_calls: list[tuple[str, str, int, str]]
) -> None:
    _notes(tmp_path / "notes", 100)
    report = make_store().index([tmp_path / "notes"])
    assert len(report.added) == 100
    writes = [(call, name, n) for call, name, n, _ in store_calls if call == "upsert"]
    # each batch's chunks, then its records (the commit), before the next batch starts
    assert writes == [
        ("upsert", "selfroute", 1),
        ("upsert", "selfroute__documents", 1),
        ("upsert", "selfroute", 8),
        ("upsert", "selfroute__documents", 8),
        ("upsert", "selfroute", 64),
        ("upsert", "selfroute__documents", 64),
        ("upsert", "selfroute", 27),
        ("upsert", "selfroute__documents", 27),
    ]
    assert {thread for *_, thread in store_calls} == {"selfroute-index-writer_0"}
    assert not [t for t in threading.enumerate() if t.name.startswith("selfroute-index-writer")]


def test_a_failure_while_a_batch_is_in_flight_waits_for_it_and_the_rerun_completes(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    notes = _notes(tmp_path / "notes", 40)
    planned: list[str] = []
    real = indexing_module.read_document
    in_flight = threading.Event()
    committed_second = threading.Event()

    def hook(event: str, path: object) -> None:
        if event == "chunks-written" and Path(str(path)).name == notes[1].name:
            in_flight.set()
            # hold batch 2 (files 1-8) until the main thread has failed, then commit it
            assert committed_second.wait(30)

    def reading(path: Path, **kwargs: Any) -> Any:
        planned.append(path.name)
        if path == notes[20]:
            assert in_flight.wait(30)
            committed_second.set()
            raise RuntimeError("disk gone")
        return real(path, **kwargs)

    monkeypatch.setattr(store_module, "_slow_hook", hook)
    monkeypatch.setattr(indexing_module, "read_document", reading)
    with pytest.raises(StoreError, match="disk gone"):
        make_store().index([tmp_path / "notes"])
    # the run returned only after the batch in flight was committed
    assert len(make_store().committed_ids()) == 9
    assert not [t for t in threading.enumerate() if t.name.startswith("selfroute-index-writer")]
    monkeypatch.undo()
    report = make_store().index([tmp_path / "notes"])
    assert report.unchanged == 9 and len(report.added) == 31
    final = make_store().stats()
    assert final.documents == 40 and final.orphan_chunks == 0 and final.bm25 == "current"


def test_an_error_in_the_writer_surfaces_and_leaves_a_consistent_store(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _notes(tmp_path / "notes", 30)
    seen: list[str] = []

    def hook(event: str, path: object) -> None:
        seen.append(event)
        if event == "chunks-written" and seen.count("chunks-written") == 5:
            raise OSError("store full")

    monkeypatch.setattr(store_module, "_slow_hook", hook)
    with pytest.raises(StoreError, match="store full"):
        make_store().index([tmp_path / "notes"])
    assert len(make_store().committed_ids()) == 1  # batch 2 never committed
    monkeypatch.undo()
    report = make_store().index([tmp_path / "notes"])
    assert report.unchanged == 1 and len(report.added) == 29
    final = make_store().stats()
    assert final.documents == 30 and final.orphan_chunks == 0


# -- the record layout -------------------------------------------------------------------------
def test_a_record_is_one_metadata_field_and_reads_back_whole(
    docs: Path, make_store: MakeStore
) -> None:
    store = make_store()
    store.index([docs])
    _, documents = store._open()
    got = documents.get(include=["metadatas"])
    assert got["metadatas"] and all(list(m) == [RECORD_KEY] for m in got["metadatas"])
    records = store._document_records()
    html = read_document(docs / "1973_oil_crisis.html")
    record = records[html.doc_id]
    assert record["path"] == str(docs / "1973_oil_crisis.html") and record["format"] == "html"
    assert json.loads(record["files"])[record["path"]]["sha256"] == html.sha256
    assert unpack_record(pack_record(record)) == record


def test_unpacking_reads_both_layouts_and_the_json_wins() -> None:
    flat = {"path": "/a.txt", "size": 3, "text_in_chunk": True}
    assert unpack_record(flat) == flat
    assert unpack_record(None) == {}
    # a record of the old layout updated in the new one keeps its stale fields beside the JSON
    mixed = {"path": "/old.txt", "size": 3, **pack_record({"path": "/new.txt", "size": 4})}
    assert unpack_record(mixed) == {"path": "/new.txt", "size": 4}
    assert unpack_record({RECORD_KEY: "not json", "path": "/a"}) == {"path": "/a"}


def _to_old_layout(store: DocumentStore) -> None:
    """Rewrite every record as selfroute wrote it before schema 2: one metadata field each."""
    _, documents = store._open()
    got = documents.get(include=["metadatas", "documents"])
    flat = [unpack_record(m) for m in got["metadatas"]]
    assert all(RECORD_KEY not in m and "path" in m for m in flat)
    documents.delete(ids=got["ids"])
    documents.add(
        ids=got["ids"],
        metadatas=flat,
        documents=got["documents"],
        embeddings=[[1.0]] * len(got["ids"]),
    )


def test_a_store_written_with_the_old_record_layout_opens_and_is_kept_up_to_date(
    docs: Path, tmp_path: Path, make_store: MakeStore
) -> None:
    notes = _notes(docs, 3)
    make_store().index([docs])
    _to_old_layout(make_store())
    store = make_store()
    _, documents = store._open()
    assert all(RECORD_KEY not in m for m in documents.get(include=["metadatas"])["metadatas"])
    # read as it is: nothing to re-index, documents and their metadata come back whole
    again = make_store().index([docs])
    assert again.unchanged == 7 and not again.added and not again.changed
    stats = make_store().stats(documents=True)
    assert stats.documents == 7 and stats.bm25 == "current"
    assert {Path(p).name for d in stats.document_list for p in d["paths"]} >= {"note-0000.txt"}
    note = read_document(notes[0])
    [parent] = make_store().get_documents([note.doc_id])
    assert parent.text == note.text and parent.metadata["path"] == str(notes[0])
    passages = HybridRetriever(make_store(), k=3).retrieve("1973 oil crisis embargo")
    assert passages and HybridRetriever(make_store(), k=3).long_context(passages)
    # a copy of a file updates its old-layout record (same content: no new document); a changed
    # file replaces its document
    (docs / "copy.txt").write_text(notes[1].read_text(encoding="utf-8"), encoding="utf-8")
    notes[2].write_text("a new text about the lighthouse keeper\n", encoding="utf-8")
    report = make_store().index([docs], prune=True)
    assert not report.added and len(report.replaced) == 1 and report.unchanged == 7
    records = make_store()._document_records()
    copied = records[read_document(notes[1]).doc_id]
    names = sorted(Path(p).name for p in json.loads(copied["files"]))
    assert names == ["copy.txt", "note-0001.txt"]
    assert make_store().stats().orphan_chunks == 0
    assert make_store().index([docs]).unchanged == 8


# -- BM25 after a first run ----------------------------------------------------------------------
def test_a_first_run_builds_bm25_from_its_own_chunks_without_a_scan(
    tmp_path: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _notes(tmp_path / "notes", 50)

    def no_scan(self: StoreReader, include_text: bool) -> Any:
        raise AssertionError("a first run must not read its chunks back")

    monkeypatch.setattr(StoreReader, "iter_chunks", no_scan)
    store = make_store()
    report = store.index([tmp_path / "notes"])
    assert report.bm25_rebuilt and store.bm25_state() == ("current", 50)
    built = store.bm25()
    monkeypatch.undo()
    rebuilt, orphans = make_store().rebuild_bm25()
    assert not orphans
    for query in ("token3 lighthouse", "passkey vault token41", "ledger"):
        got, want = built.search(query, 10), rebuilt.search(query, 10)
        assert got and [c for c, _ in got] == [c for c, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)


def test_a_first_run_over_stray_chunks_scans_and_removes_them(
    tmp_path: Path, make_store: MakeStore
) -> None:
    _notes(tmp_path / "notes", 5)
    store = make_store()
    chunks, _ = store._open(create=True)
    chunks.upsert(  # a chunk whose document was never committed, and no journal names it
        ids=["feedfacefeedface:0"],
        documents=["stray lighthouse text"],
        metadatas=[{"doc_id": "feedfacefeedface"}],
    )
    report = make_store().index([tmp_path / "notes"])
    assert report.orphan_chunks_removed == 1 and len(report.added) == 5
    assert make_store().stats().orphan_chunks == 0
    assert make_store().bm25_state() == ("current", 5)


def test_an_update_indexes_words_the_saved_vocabulary_lacks(
    tmp_path: Path, make_store: MakeStore
) -> None:
    notes = tmp_path / "notes"
    _notes(notes, 20)
    make_store().index([notes])
    (notes / "new.txt").write_text("the zeppelin quasar code XK-481 lighthouse\n", "utf-8")
    store = make_store()
    report = store.index([notes])
    assert len(report.added) == 1 and report.bm25_rebuilt
    new_id = read_document(notes / "new.txt").doc_id
    updated = store.bm25()
    rebuilt, _ = make_store().rebuild_bm25()
    for query in ("zeppelin", "quasar xk-481", "lighthouse keeper"):
        got, want = updated.search(query, 5), rebuilt.search(query, 5)
        assert got and [c for c, _ in got] == [c for c, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)
    assert updated.search("zeppelin", 5)[0][0] == f"{new_id}:0"


def test_rows_tokenized_in_batches_index_like_one_build() -> None:
    from selfroute.stores._bm25 import BM25Index, TokenRows

    rng = random.Random(3)
    texts = [
        " ".join(rng.choice([*WORDS, "the", "a"]) for _ in range(rng.randint(0, 30)))
        for _ in range(90)
    ]
    texts[10] = "zeppelin only here"  # a word first seen in a later batch
    texts[50] = "the a"  # stop words only: an empty row
    ids = [f"d{i}:0" for i in range(90)]
    rows = TokenRows()
    for start in (0, 7, 40):
        end = {0: 7, 7: 40, 40: 90}[start]
        rows.add(ids[start:end], texts[start:end])
    keep = [i for i in range(90) if i % 9]
    got = rows.index(lambda cid: int(cid[1:].split(":")[0]) % 9 != 0, "fp")
    want = BM25Index.build([ids[i] for i in keep], [texts[i] for i in keep], "fp")
    assert got.ids == want.ids and len(got) == len(keep)
    for query in ("zeppelin", "lighthouse keeper", "vault ledger storm"):
        a, b = got.search(query, 10), want.search(query, 10)
        assert a and [c for c, _ in a] == [c for c, _ in b]
        assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-5)
