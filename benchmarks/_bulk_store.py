"""Build a large selfroute collection directly, for retrieval benchmarks at 10^6 chunks.

``selfroute index`` over 10^6 files takes most of an hour on a shared 2-core machine, and the
point of the 10^6 rows is retrieval, so this writes the same layout the indexer writes for a
folder of one-chunk files -- chunk records (text, offline embedding, the indexer's metadata),
then their document records (the commit markers, ``text_in_chunk``), then the BM25 index of the
chunk texts saved under the store's fingerprint -- with Chroma batch ``add`` calls of
precomputed offline embeddings, as a bulk loader would. The texts are the benchmark's small
files (20-60 words of real text, ``(note i)`` appended) generated in memory, no files written.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from selfroute.stores._rows import TEXT_IN_CHUNK

__all__ = ["bulk_build", "note_texts"]

#: Records per ``add`` call (under Chroma's maximum batch size).
BATCH = 5000


def note_texts(words: list[str], n: int, seed: int = 0) -> Iterator[tuple[int, str]]:
    """``(i, text)`` of the ``n`` small-file texts :func:`bench_scale.small_files` writes."""
    rng = random.Random(seed)
    for i in range(n):
        k = rng.randint(20, 60)
        start = rng.randrange(0, max(1, len(words) - k))
        yield i, f"{' '.join(words[start : start + k])} (note {i})\n"


def _records(i: int, text: str, now: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """``(doc_id, chunk id, chunk fields, record)`` exactly as ``selfroute index`` makes them for
    a one-chunk file of ``text`` (the chunker's id and offsets, the file's SHA-256 and byte size);
    only the path (under ``/bulk``) and ``mtime_ns`` (``"0"``: no file) are the bulk loader's."""
    from selfroute import document_id
    from selfroute._chunking import chunk_text

    doc_id = document_id(text)
    (piece,) = chunk_text(text, doc_id=doc_id, chunk_words=300)
    path = f"/bulk/{i // 1000:03d}/note-{i:06d}.txt"
    words = len(text.split())
    chunk_meta = {
        "doc_id": doc_id,
        "source": path,
        "title": f"note-{i:06d}",
        "chunk_index": piece.index,
        "start": piece.start,
        "end": piece.end,
        "words": piece.word_count,
    }
    data = text.encode("utf-8")
    entry = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "mtime_ns": "0"}
    record = {
        "doc_id": doc_id,
        "title": f"note-{i:06d}",
        "format": "text",
        "words": words,
        "chunk_words": 300,
        "indexed_at": now,
        "files": json.dumps({path: entry}, sort_keys=True),
        "path": path,
        "sha256": entry["sha256"],
        "size": entry["size"],
        "mtime_ns": "0",
        "chunks": 1,
        TEXT_IN_CHUNK: True,
    }
    return doc_id, piece.chunk_id, chunk_meta, record


def bulk_build(
    store: str, chroma_url: str | None, n: int, words: list[str], log: Any = None
) -> dict[str, Any]:
    """Write ``n`` one-chunk documents into a new collection; returns timings (seconds).

    Chunks go first and records after them (the commit protocol), batch by batch.
    """
    from selfroute.stores import DocumentStore
    from selfroute.stores._bm25 import BM25Index
    from selfroute.stores._embedding import embed_documents
    from selfroute.stores._rows import pack_chunk, pack_record

    ds = DocumentStore(store, chroma_url=chroma_url, embedding="offline")
    chunks, documents = ds._open(create=True)
    function, choice = ds._conn.embedding_function(), ds.embedding
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    ids: list[str] = []
    texts: list[str] = []
    t0 = time.perf_counter()
    embed_s = chunk_s = 0.0
    batch: list[tuple[int, str]] = []
    for item in note_texts(words, n):
        batch.append(item)
        if len(batch) == BATCH or item[0] == n - 1:
            rows = [(_records(i, text, now), text) for i, text in batch]
            t1 = time.perf_counter()
            vectors = embed_documents(function, choice, [text for _, text in rows])
            embed_s += time.perf_counter() - t1
            chunk_ids = [r[1] for r, _ in rows]
            t1 = time.perf_counter()
            chunks.add(
                ids=chunk_ids,
                embeddings=vectors,
                metadatas=[pack_chunk(text, r[2]) for r, text in rows],
            )
            chunk_s += time.perf_counter() - t1
            documents.add(
                ids=[r[0] for r, _ in rows],
                metadatas=[pack_record(r[3]) for r, _ in rows],
                embeddings=[[1.0]] * len(rows),
            )
            ids.extend(chunk_ids)
            texts.extend(text for _, text in rows)
            batch = []
            if log is not None and len(ids) % 100_000 < BATCH:
                log(
                    f"  bulk: {len(ids):,} chunks, {time.perf_counter() - t0:.0f} s "
                    f"(embedding {embed_s:.0f} s, chunk adds {chunk_s:.0f} s)"
                )
    write_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    committed = sorted(cid.rsplit(":", 1)[0] for cid in ids)
    index = BM25Index.build(ids, texts, ds._lexical.fingerprint(committed))
    Path(ds.bm25_dir).mkdir(parents=True, exist_ok=True)
    index.save(ds.bm25_dir)
    return {
        "chunks": len(ids),
        "write_seconds": write_s,
        "embed_seconds": embed_s,
        "chunk_add_seconds": chunk_s,
        "bm25_seconds": time.perf_counter() - t1,
    }
