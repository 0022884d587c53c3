"""The row layout (``selfroute.stores._rows``): chunk texts in the metadata since schema 3, records
of one-chunk documents without a Chroma document, and stores written in the older layout.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from selfroute import Passage
from selfroute.stores import DocumentStore, HybridRetriever, read_document
from selfroute.stores._migrate import copy_collection
from selfroute.stores._rows import CHUNK_KEY, chunk_row, pack_chunk
from tests.unit.selfroute.stores.notes import write_notes

MakeStore = Callable[..., DocumentStore]
WORDS = ["lighthouse", "keeper", "lamp", "storm", "boat", "harbour", "passkey", "vault", "ledger"]
FIELDS = {
    "doc_id": "d1",
    "source": "/notes/a.txt",
    "title": "a",
    "chunk_index": 2,
    "start": 10,
    "end": 40,
    "words": 5,
}


def test_a_chunk_row_round_trips_and_the_old_layout_reads_as_it_is() -> None:
    text = 'Ünïcode "quoted" text\nwith a newline'
    meta = pack_chunk(text, FIELDS)
    assert sorted(meta) == ["doc_id", CHUNK_KEY, "source"]
    assert meta["doc_id"] == "d1" and meta["source"] == "/notes/a.txt"
    assert chunk_row(None, meta) == (text, FIELDS)
    # schema 2 and before: the text is the row's document, one metadata field per chunk field
    assert chunk_row("old text", FIELDS) == ("old text", FIELDS)
    assert chunk_row(None, FIELDS) == ("", FIELDS)  # documents not included in the read
    assert chunk_row(None, None) == ("", {})
    # a damaged JSON value leaves the filter fields and the document, if any
    assert chunk_row("kept", {"doc_id": "d1", CHUNK_KEY: "{not json"}) == ("kept", {"doc_id": "d1"})


def _to_schema_2_chunks(store: DocumentStore) -> int:
    """Rewrite every chunk row as selfroute wrote it before schema 3: the text as the Chroma
    document and one metadata field per chunk field. Returns the rows rewritten."""
    chunks, _ = store._open()
    got = chunks.get(include=["metadatas", "documents", "embeddings"])
    rows = [chunk_row(t, m) for t, m in zip(got["documents"], got["metadatas"], strict=True)]
    assert all(t for t, _ in rows) and all(d is None for d in got["documents"])
    chunks.delete(ids=got["ids"])
    chunks.add(
        ids=got["ids"],
        embeddings=got["embeddings"],
        documents=[t for t, _ in rows],
        metadatas=[m for _, m in rows],
    )
    return len(got["ids"])


def test_a_store_with_chunks_of_the_old_layout_is_served_and_kept_up_to_date(
    docs: Path, tmp_path: Path, make_store: MakeStore
) -> None:
    notes = write_notes(docs, 4, WORDS)
    make_store().index([docs])
    question = "1973 oil crisis embargo"
    before = HybridRetriever(make_store(), k=4).retrieve(question)
    assert _to_schema_2_chunks(make_store()) > 10
    store = make_store()
    # served as it is: the same passages, texts and metadata (scores up to float rounding)
    after = HybridRetriever(store, k=4).retrieve(question)
    assert [_seen(p) for p in after] == [_seen(p) for p in before]
    for mode in ("dense", "bm25"):
        assert HybridRetriever(store, mode=mode, k=2).retrieve(question)
    note = read_document(notes[0])
    [parent] = store.get_documents([note.doc_id])  # its text is in its (old-layout) chunk
    assert parent.text == note.text
    rebuilt, orphans = store.rebuild_bm25()
    assert (
        not orphans and rebuilt.search("token3", 1)[0][0] == f"{read_document(notes[3]).doc_id}:0"
    )
    # a new file is written in the new layout beside the old rows; both are served
    (docs / "new.txt").write_text("the harbour master keeps a brass ledger token99\n", "utf-8")
    report = make_store().index([docs])
    assert len(report.added) == 1 and report.unchanged == 8
    [hit] = HybridRetriever(make_store(), mode="bm25", k=1).retrieve("brass ledger token99")
    assert hit.text.startswith("the harbour master") and hit.metadata["source"].endswith("new.txt")
    stats = make_store().stats()
    assert stats.orphan_chunks == 0 and stats.bm25 == "current"
    # a copy is written in the current layout, whichever the source's
    target = DocumentStore(tmp_path / "copy", embedding="offline")
    copied = copy_collection(make_store(), target)
    assert copied.documents == 9
    chunks, _ = target._open()
    got = chunks.get(include=["metadatas", "documents"])
    assert all(d is None and CHUNK_KEY in m for d, m in zip(*_cols(got), strict=True))
    [same] = HybridRetriever(target, mode="bm25", k=1).retrieve("brass ledger token99")
    assert same.text == hit.text


def _seen(p: Passage) -> tuple[object, ...]:
    meta = {k: v for k, v in p.metadata.items() if not k.endswith("_score")}
    return p.source, p.text, p.doc_id, meta


def _cols(got: dict[str, list[object]]) -> tuple[list[object], list[dict[str, object]]]:
    return got["documents"], got["metadatas"]  # type: ignore[return-value]


def test_one_chunk_records_have_no_chroma_document_and_long_ones_keep_their_text(
    docs: Path, make_store: MakeStore
) -> None:
    notes = write_notes(docs, 3, WORDS)
    store = make_store()
    store.index([docs])
    _, documents = store._open()
    note, html = read_document(notes[0]), read_document(docs / "1973_oil_crisis.html")
    got = documents.get(ids=[note.doc_id, html.doc_id], include=["documents"])
    texts = dict(zip(got["ids"], got["documents"], strict=True))
    assert texts == {note.doc_id: None, html.doc_id: html.text}
    parents = {d.doc_id: d.text for d in store.get_documents([note.doc_id, html.doc_id])}
    assert parents == {note.doc_id: note.text, html.doc_id: html.text}
