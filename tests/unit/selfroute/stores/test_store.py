"""The document store on an embedded Chroma: idempotent, crash-safe indexing and what it records."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import selfroute as sr
from selfroute.stores import (
    CollectionNotFoundError,
    DocumentStore,
    EmbeddingMismatchError,
    HybridRetriever,
    StoreError,
    read_document,
)
from selfroute.stores import _store as store_module
from selfroute.stores._records import RECORD_KEY, unpack_record
from selfroute.stores._rows import CHUNK_KEY, chunk_row

MakeStore = Callable[..., DocumentStore]


def expected_chunk_ids(folder: Path, chunk_words: int = 300) -> set[str]:
    """Chunk ids computed independently of the store: content hash + chunk index."""
    ids: set[str] = set()
    for path in folder.iterdir():
        doc = read_document(path)
        ids |= {
            c.chunk_id for c in sr.chunk_text(doc.text, doc_id=doc.doc_id, chunk_words=chunk_words)
        }
    return ids


def chunk_ids(store: DocumentStore) -> set[str]:
    chunks, _ = store._open()
    return set(chunks.get(include=[])["ids"])


def test_index_stores_chunks_and_full_documents(docs: Path, make_store: MakeStore) -> None:
    store = make_store()
    report = store.index([docs])
    assert sorted(Path(p).name for p in report.added) == sorted(p.name for p in docs.iterdir())
    assert report.unchanged == 0 and not report.skipped and report.bm25_rebuilt
    assert chunk_ids(store) == expected_chunk_ids(docs)
    assert report.chunks == len(expected_chunk_ids(docs))

    chunks, documents = store._open()
    html = read_document(docs / "1973_oil_crisis.html")
    got = chunks.get(where={"doc_id": html.doc_id}, include=["metadatas", "documents"])
    # schema 3: no Chroma document; doc_id, source and one JSON field holding text and fields
    assert got["documents"] == [None] * len(got["ids"])
    assert all(sorted(m) == ["doc_id", CHUNK_KEY, "source"] for m in got["metadatas"])
    rows = [chunk_row(t, m) for t, m in zip(got["documents"], got["metadatas"], strict=True)]
    metas = sorted(((m, t) for t, m in rows), key=lambda m: m[0]["chunk_index"])
    assert [m["chunk_index"] for m, _ in metas] == list(range(len(metas)))
    for meta, text in metas:
        assert meta["doc_id"] == html.doc_id
        assert meta["source"] == str(docs / "1973_oil_crisis.html")
        assert html.text[meta["start"] : meta["end"]] == text
        assert meta["words"] == len(text.split())
    # the chunks rebuild the document exactly; the record holds the full text
    assert "".join(t for _, t in metas) == html.text
    record = documents.get(ids=[html.doc_id], include=["metadatas", "documents"])
    assert record["documents"] == [html.text]
    assert list(record["metadatas"][0]) == [RECORD_KEY]  # schema 2: one metadata field
    meta = unpack_record(record["metadatas"][0])
    assert meta["path"] == str(docs / "1973_oil_crisis.html")
    assert meta["sha256"] == html.sha256 and meta["size"] == html.size
    assert meta["chunks"] == len(metas) and meta["format"] == "html"
    assert (chunks.metadata or {})["selfroute:embedding"] == "offline:selfroute-hashing-384"


def test_rerunning_adds_nothing(docs: Path, make_store: MakeStore) -> None:
    store = make_store()
    store.index([docs])
    before = chunk_ids(store)
    again = make_store().index([docs])
    assert again.unchanged == 4 and not again.added and not again.replaced and again.chunks == 0
    assert not again.bm25_rebuilt
    assert chunk_ids(make_store()) == before
    # touching a file without changing it re-reads it but writes nothing
    (docs / "packet_switching.pdf").touch()
    touched = make_store().index([docs])
    assert touched.unchanged == 4 and touched.chunks == 0
    assert make_store().stats().chunks == len(before)


def test_a_changed_file_replaces_its_old_chunks(docs: Path, make_store: MakeStore) -> None:
    store = make_store()
    store.index([docs])
    target = docs / "christmas_carol_stave_one.txt"
    old_id = read_document(target).doc_id
    target.write_text(
        target.read_text(encoding="utf-8")[:3000] + "\nA new ending.\n", encoding="utf-8"
    )
    report = make_store().index([docs])
    assert report.replaced == [str(target)] and report.unchanged == 3
    ids = chunk_ids(make_store())
    assert ids == expected_chunk_ids(docs)
    assert not any(i.startswith(old_id) for i in ids)
    assert old_id not in make_store().committed_ids()


def test_same_content_under_two_names_is_stored_once(docs: Path, make_store: MakeStore) -> None:
    shutil.copy(docs / "packet_switching.pdf", docs / "copy_of_packets.pdf")
    store = make_store()
    report = store.index([docs])
    assert len(report.added) == 4 and report.unchanged == 1
    stats = make_store().stats(documents=True)
    assert stats.documents == 4
    pdf = next(d for d in stats.document_list if d["format"] == "pdf")
    assert [Path(p).name for p in pdf["paths"]] == ["copy_of_packets.pdf", "packet_switching.pdf"]
    # deleting one name keeps the document; deleting both and pruning removes it
    (docs / "copy_of_packets.pdf").unlink()
    make_store().index([docs], prune=True)
    assert make_store().stats().documents == 4
    (docs / "packet_switching.pdf").unlink()
    pruned = make_store().index([docs], prune=True)
    assert [Path(p).name for p in pruned.removed] == ["packet_switching.pdf"]
    assert make_store().stats().documents == 3
    assert chunk_ids(make_store()) == expected_chunk_ids(docs)


def test_prune_only_touches_the_paths_given(
    tmp_path: Path, docs: Path, make_store: MakeStore
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "note.md").write_text("# Note\n\nThe vault code is 7401-ZQ.\n", encoding="utf-8")
    make_store().index([docs, other])
    (docs / "packet_switching.pdf").unlink()
    (other / "note.md").unlink()
    without = make_store().index([docs])  # no --prune: nothing removed
    assert not without.removed and make_store().stats().documents == 5
    report = make_store().index([docs], prune=True)
    assert [Path(p).name for p in report.removed] == ["packet_switching.pdf"]
    assert make_store().stats().documents == 4  # note.md is outside docs/: left alone


def test_bad_files_are_skipped_and_reported(docs: Path, make_store: MakeStore) -> None:
    (docs / "empty.txt").write_text("", encoding="utf-8")
    (docs / "blob.txt").write_bytes(b"\x00\x01" * 100)
    (docs / "table.csv").write_text("a,b\n", encoding="utf-8")
    report = make_store().index([docs, docs / "missing.md"])
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons["empty.txt"] == "empty file"
    assert reasons["blob.txt"].startswith("binary file")
    assert reasons["table.csv"].startswith("unsupported file type .csv")
    assert reasons["missing.md"] == "no such file or directory"
    assert report.indexed == 4


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, event: str, occurrence: int) -> list[str]:
    seen: list[str] = []

    def hook(name: str, path: object) -> None:
        seen.append(f"{name} {Path(str(path)).name}")
        if name == event and sum(s.startswith(event) for s in seen) == occurrence:
            raise KeyboardInterrupt

    monkeypatch.setattr(store_module, "_slow_hook", hook)
    return seen


def test_an_interrupted_index_stays_consistent_and_a_rerun_completes(
    docs: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _interrupt_at(monkeypatch, "chunks-written", 2)
    with pytest.raises(KeyboardInterrupt):
        make_store().index([docs])
    assert seen[-1].startswith("chunks-written")  # killed between chunks and commit marker
    store = make_store()
    committed = store.committed_ids()
    assert len(committed) == 1
    stats = store.stats()
    assert stats.documents == 1 and stats.orphan_chunks > 0
    # uncommitted chunks are never served, whatever the query
    interrupted = read_document(docs / Path(seen[-1].split(" ", 1)[1]))
    for mode in ("hybrid", "dense", "bm25"):
        passages = HybridRetriever(store, mode=mode, k=10).retrieve(interrupted.text[:400])
        assert passages and {p.doc_id for p in passages} <= set(committed)

    monkeypatch.setattr(store_module, "_slow_hook", lambda *a: None)
    report = make_store().index([docs])
    assert report.unchanged == 1 and len(report.added) == 3
    assert report.orphan_chunks_removed == 0  # the partial document was rewritten in place
    assert chunk_ids(make_store()) == expected_chunk_ids(docs)
    final = make_store().stats()
    assert final.documents == 4 and final.orphan_chunks == 0 and final.bm25 == "current"


def test_orphans_of_a_deleted_file_are_swept(
    docs: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _interrupt_at(monkeypatch, "chunks-written", 1)
    with pytest.raises(KeyboardInterrupt):
        make_store().index([docs])
    (docs / Path(seen[-1].split(" ", 1)[1])).unlink()  # the half-written file is gone now
    monkeypatch.setattr(store_module, "_slow_hook", lambda *a: None)
    report = make_store().index([docs])
    assert report.orphan_chunks_removed > 0
    assert chunk_ids(make_store()) == expected_chunk_ids(docs)


def test_a_replacement_interrupted_before_the_old_copy_is_removed_completes(
    docs: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_store().index([docs])
    target = docs / "1973_oil_crisis.html"
    old_id = read_document(target).doc_id
    target.write_text(
        target.read_text(encoding="utf-8").replace("1973", "MCMLXXIII"), encoding="utf-8"
    )
    _interrupt_at(monkeypatch, "committed", 1)
    with pytest.raises(KeyboardInterrupt):
        make_store().index([docs])
    assert old_id in make_store().committed_ids()  # new content committed, old not yet removed
    monkeypatch.setattr(store_module, "_slow_hook", lambda *a: None)
    make_store().index([docs])
    assert old_id not in make_store().committed_ids()
    assert chunk_ids(make_store()) == expected_chunk_ids(docs)


def test_the_embedding_is_recorded_and_a_different_one_refused(
    docs: Path, make_store: MakeStore
) -> None:
    make_store().index([docs])
    assert make_store(embedding=None).embedding.spec == "offline:selfroute-hashing-384"
    with pytest.raises(EmbeddingMismatchError) as info:
        make_store(embedding="default").stats()
    message = str(info.value)
    assert "offline:selfroute-hashing-384" in message and "default:all-MiniLM-L6-v2" in message
    assert "--embedding" in message
    with pytest.raises(EmbeddingMismatchError):
        make_store(embedding="openai").index([docs])
    with pytest.raises(sr.ConfigurationError, match="chunked with 300 words"):
        make_store(chunk_words=200).index([docs])


def test_an_empty_collection_can_switch_embedding(
    tmp_path: Path, docs: Path, make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    make_store().index([empty])  # creates the collection, indexes nothing
    from selfroute._embeddings import chroma_embedding_function

    monkeypatch.setattr(
        store_module, "create_embedding_function", lambda choice: chroma_embedding_function()
    )
    make_store(embedding="default").index([docs])
    assert make_store(embedding=None).embedding.spec == "default:all-MiniLM-L6-v2"


def test_missing_store_and_collection(tmp_path: Path, docs: Path, make_store: MakeStore) -> None:
    absent = make_store(path=tmp_path / "nope")
    assert not absent.exists()
    assert not (tmp_path / "nope").exists()  # asking never creates a store
    with pytest.raises(CollectionNotFoundError, match="selfroute index"):
        absent.stats()
    make_store().index([docs])
    with pytest.raises(CollectionNotFoundError, match="other"):
        make_store(collection="other").stats()


def test_foreign_collections_and_bad_names_are_refused(
    tmp_path: Path, make_store: MakeStore
) -> None:
    with pytest.raises(sr.ConfigurationError, match="invalid collection name"):
        make_store(collection="x")
    with pytest.raises(sr.ConfigurationError, match="invalid collection name"):
        make_store(collection="has space")
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(
        path=str(tmp_path / "store"), settings=Settings(anonymized_telemetry=False)
    )
    client.create_collection("plain")
    with pytest.raises(StoreError, match="not created by selfroute"):
        make_store(collection="plain", client=client).stats()


def test_a_second_index_run_is_refused_while_one_holds_the_lock(
    docs: Path, make_store: MakeStore
) -> None:
    holder = make_store()
    with holder._lock(), pytest.raises(StoreError, match="another `selfroute index`"):
        make_store().index([docs])
    assert make_store().index([docs]).added  # released afterwards


def test_bm25_index_is_rebuilt_when_stale(docs: Path, make_store: MakeStore) -> None:
    store = make_store()
    store.index([docs])
    assert store.bm25_state() == ("current", len(expected_chunk_ids(docs)))
    shutil.rmtree(store.bm25_dir)
    fresh = make_store()
    assert fresh.bm25_state()[0] == "missing"
    hits = HybridRetriever(fresh, mode="bm25").retrieve("Paul Baran RAND Corporation")
    assert hits and hits[0].metadata["source"].endswith("packet_switching.pdf")
    assert fresh.bm25_state()[0] == "current"  # rebuilt and saved by the query


def test_get_documents_keeps_the_order_asked(docs: Path, make_store: MakeStore) -> None:
    store = make_store()
    store.index([docs])
    ids = [read_document(docs / n).doc_id for n in ("packet_switching.pdf", "1973_oil_crisis.html")]
    got = store.get_documents([*ids, "unknown", ids[0]])
    assert [d.doc_id for d in got] == ids
    assert got[0].metadata is not None
    assert str(got[0].metadata["source"]).endswith("packet_switching.pdf")
    assert got[1].text == read_document(docs / "1973_oil_crisis.html").text


def test_report_and_stats_serialise(docs: Path, make_store: MakeStore) -> None:
    import json

    report = make_store().index([docs])
    data: dict[str, Any] = json.loads(json.dumps(report.to_dict()))
    assert len(data["added"]) == 4 and data["chunks"] == report.chunks
    stats = json.loads(json.dumps(make_store().stats(documents=True).to_dict()))
    assert stats["documents"] == 4 and stats["formats"] == {
        "html": 1,
        "markdown": 1,
        "pdf": 1,
        "text": 1,
    }
    assert sum(d["chunks"] for d in stats["document_list"]) == stats["chunks"]
