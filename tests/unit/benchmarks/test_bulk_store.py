"""The benchmarks' bulk builder writes the rows ``selfroute index`` writes for the same notes.

bench 8's 10^6-chunk server rows are measured on a store written by
``benchmarks/_bulk_store.py`` rather than by ``selfroute index``; these numbers stand for the
indexer's store only while the layouts agree, so this compares the two row by row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks._bulk_store import bulk_build
from benchmarks._common import FIXTURES
from benchmarks.bench_scale import _words, small_files
from selfroute.stores import DocumentStore

N = 12
#: Fields that name the file itself (the bulk loader writes no files) or when it was written.
_PLACE = {"source", "path", "files", "mtime_ns", "indexed_at"}


def _rows(store: Path) -> dict[str, Any]:
    ds = DocumentStore(str(store))
    chunks, documents = ds._open()

    def keep(meta: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in meta.items() if k not in _PLACE}

    got = chunks.get(include=["documents", "metadatas", "embeddings"])
    chunk_rows = {}
    for i, doc, meta, vector in zip(
        got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
    ):
        meta = dict(meta)
        meta["selfroute:chunk"] = json.loads(meta["selfroute:chunk"])
        chunk_rows[i] = (doc, keep(meta), [round(float(x), 6) for x in vector])
    got = documents.get(include=["documents", "metadatas", "embeddings"])
    record_rows = {}
    for i, doc, meta, vector in zip(
        got["ids"], got["documents"], got["metadatas"], got["embeddings"], strict=True
    ):
        record = json.loads(meta["selfroute:record"])
        files = {
            Path(p).name: {**e, "mtime_ns": None} for p, e in json.loads(record["files"]).items()
        }
        record_rows[i] = (doc, keep(record), files, [float(x) for x in vector])
    schema = {k: v for k, v in (chunks.metadata or {}).items() if k != "selfroute:created"}
    bm25 = sorted(p.name for p in Path(ds.bm25_dir).iterdir())
    return {"chunks": chunk_rows, "records": record_rows, "schema": schema, "bm25": bm25}


def test_bulk_rows_match_the_indexers_rows(tmp_path: Path) -> None:
    folder = small_files(tmp_path / "notes", N, FIXTURES)
    DocumentStore(str(tmp_path / "indexed"), embedding="offline").index([str(folder)])
    bulk_build(str(tmp_path / "bulk"), None, N, _words(FIXTURES))

    indexed, bulk = _rows(tmp_path / "indexed"), _rows(tmp_path / "bulk")
    assert len(indexed["chunks"]) == N
    assert indexed["records"] == bulk["records"]
    assert indexed["chunks"] == bulk["chunks"]
    assert indexed["schema"] == bulk["schema"]
    # the BM25 folder is named by the committed documents' fingerprint: the same index
    assert indexed["bm25"] == bulk["bm25"]
