"""8. Scale: a folder of small files, cost per chunk, retrieval at 10^4-10^6 chunks.

What runs, each (implementation, size) in a fresh subprocess (time, peak RSS of that process):

* **small-file folder** -- ``N`` text files of 20-60 words (one chunk each; random windows of the
  real corpus text) indexed by ``selfroute`` (:meth:`DocumentStore.index` over the folder, the
  offline hashing embedding, embedded ``PersistentClient``) versus LangChain's usual recipe on
  the same files: read them, ``langchain_chroma.Chroma.from_documents`` with
  ``langchain_selfroute.HashingEmbeddings`` (the same embedder). Words/s, ours / baseline.
* **rerun** -- 10 of the ``N`` files changed, ``index`` run again (stat check, 10 documents
  rewritten, BM25 updated incrementally).
* **linear cost** -- ``selfroute`` time per chunk at the large size versus the small size, for a
  small-file corpus (one chunk per file) and a large-file corpus (3,000-word files, 10 chunks).
* **retrieval** -- on the largest small-file store: p50/p95 latency of ``HybridRetriever`` in
  ``dense``, ``bm25`` and ``hybrid`` modes (k = 5) against the raw Chroma query of the same
  collection (query embedding + ``collection.query``, documents, metadatas and distances), and
  the retrieval process's peak RSS.

Tiers: ``--quick`` is tiny; the default is a small tier (minutes); ``SELFROUTE_BENCH_SCALE=full``
runs the issue's sizes (50,000 files; 10^4 versus 10^5 chunks). The corpus is real text (LaRA
novellas and papers, SQuAD articles; the vendored fixtures when ``../shared/data`` is absent).
``SELFROUTE_BENCH_SCALE_PARTS`` (comma-separated ``folder``, ``small``, ``retrieval``, ``server``,
``large``; default all) runs some of the parts, e.g. ``folder,small`` for the indexing rows; the
small-file linear rows also time LangChain at both sizes (its own growth, for comparison).
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import (
    BenchContext,
    BenchResult,
    Row,
    fmt_ms,
    markdown_table,
    percentile,
    ratio_row,
    source_texts,
    spawn_worker,
)

__all__ = [
    "TIERS",
    "index_langchain",
    "index_ours",
    "large_files",
    "on_server",
    "retrieval",
    "run",
    "small_files",
    "tier",
]

KEY, TITLE = "8", "Scale: small-file folders, cost per chunk, retrieval at 10^4-10^6 chunks"
ENV = "SELFROUTE_BENCH_SCALE"
PARTS_ENV = "SELFROUTE_BENCH_SCALE_PARTS"
PARTS = ("folder", "small", "retrieval", "server", "large")
#: tier -> (small-file folder, (linear small, linear large) chunks, retrieval queries)
TIERS: dict[str, tuple[int, tuple[int, int], int]] = {
    "quick": (200, (100, 400), 10),
    "small": (5_000, (2_000, 20_000), 50),
    "full": (50_000, (10_000, 100_000), 200),
}
#: Chunks of a store written straight to a ``chroma run`` server (:mod:`benchmarks._bulk_store`)
#: for the retrieval rows at 10^6 (``$SELFROUTE_BENCH_SCALE_SERVER_CHUNKS`` overrides; 0: none).
SERVER_CHUNKS = {"quick": 0, "small": 0, "full": 1_000_000}
SERVER_ENV = "SELFROUTE_BENCH_SCALE_SERVER_CHUNKS"
LARGE_FILE_WORDS = 3_000
FOLDER_TARGET_S = 180.0


def tier(ctx: BenchContext) -> str:
    """The tier: ``$SELFROUTE_BENCH_SCALE`` if set, else ``quick`` or ``small``."""
    name = os.environ.get(ENV) or ("quick" if ctx.quick else "small")
    if name not in TIERS:
        raise ValueError(f"{ENV}={name!r}: choose one of {', '.join(TIERS)}")
    return name


def parts() -> set[str]:
    """The parts to run: ``$SELFROUTE_BENCH_SCALE_PARTS`` if set, else all of them."""
    chosen = {p.strip() for p in (os.environ.get(PARTS_ENV) or ",".join(PARTS)).split(",")}
    unknown = sorted(chosen - set(PARTS) - {""})
    if unknown:
        raise ValueError(f"{PARTS_ENV}: unknown part(s) {unknown}; choose from {', '.join(PARTS)}")
    if chosen & {"retrieval", "server"}:
        chosen.add("small")  # retrieval runs on the largest small-file store
    return chosen - {""}


def _words(data: Path) -> list[str]:
    return [w for text in source_texts(data) for w in text.split()]


def small_files(root: Path, n: int, data: Path, seed: int = 0) -> Path:
    """``n`` files of 20-60 words of real text under ``root`` (1,000 per sub-folder)."""
    words = _words(data)
    rng = random.Random(seed)
    for i in range(n):
        k = rng.randint(20, 60)
        start = rng.randrange(0, max(1, len(words) - k))
        folder = root / f"{i // 1000:03d}"
        if i % 1000 == 0:
            folder.mkdir(parents=True, exist_ok=True)
        text = " ".join(words[start : start + k])
        (folder / f"note-{i:06d}.txt").write_text(f"{text} (note {i})\n", encoding="utf-8")
    return root


def large_files(root: Path, chunks: int, data: Path, seed: int = 0) -> Path:
    """Files of ``LARGE_FILE_WORDS`` words (10 chunks each) totalling about ``chunks`` chunks."""
    words = _words(data)
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    per = LARGE_FILE_WORDS // 300
    for i in range(max(1, chunks // per)):
        start = rng.randrange(0, max(1, len(words) - LARGE_FILE_WORDS))
        body = words[start : start + LARGE_FILE_WORDS]
        while len(body) < LARGE_FILE_WORDS:  # a small corpus: wrap around
            body += words[: LARGE_FILE_WORDS - len(body)]
        (root / f"doc-{i:05d}.txt").write_text(f"doc {i} " + " ".join(body) + "\n", "utf-8")
    return root


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def index_ours(folder: str, store: str, rerun: int = 0) -> dict[str, Any]:
    """Index ``folder`` into a new store with ``selfroute``; then change ``rerun`` files and
    index again."""
    from selfroute.stores import DocumentStore

    DocumentStore(store, embedding="offline")._open(create=True)  # start-up is not indexing
    t0 = time.perf_counter()
    report = DocumentStore(store, embedding="offline").index([folder])
    out: dict[str, Any] = {
        "impl": "selfroute",
        "seconds": time.perf_counter() - t0,
        "chunks": report.chunks,
        "words": report.words,
        "files": len(report.added),
    }
    if rerun:
        files = sorted(Path(folder).rglob("*.txt"))
        step = max(1, len(files) // rerun)
        for path in files[::step][:rerun]:
            path.write_text(path.read_text(encoding="utf-8") + " changed\n", encoding="utf-8")
        t0 = time.perf_counter()
        again = DocumentStore(store).index([folder])
        out["rerun_seconds"] = time.perf_counter() - t0
        out["rerun_replaced"] = len(again.replaced)
    out["peak_mb"] = _peak_mb()
    return out


def index_langchain(folder: str, store: str) -> dict[str, Any]:
    """LangChain's recipe over the same files: read them, ``Chroma.from_documents``."""
    from chromadb.config import Settings
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    from langchain_selfroute import HashingEmbeddings

    t0 = time.perf_counter()
    docs = [
        Document(page_content=p.read_text(encoding="utf-8"), metadata={"source": str(p)})
        for p in sorted(Path(folder).rglob("*.txt"))
    ]
    Chroma.from_documents(
        docs,
        HashingEmbeddings(),
        collection_name="bench",
        persist_directory=store,
        client_settings=Settings(anonymized_telemetry=False, is_persistent=True),
        collection_metadata={"hnsw:space": "cosine"},
    )
    return {
        "impl": "langchain",
        "seconds": time.perf_counter() - t0,
        "chunks": len(docs),
        "words": sum(len(d.page_content.split()) for d in docs),
        "files": len(docs),
        "peak_mb": _peak_mb(),
    }


def retrieval(
    store: str, queries: int, data: str, k: int = 5, chroma_url: str | None = None
) -> dict[str, Any]:
    """p50/p95 seconds per question: raw Chroma query versus the store's retriever modes."""
    from selfroute.stores import DocumentStore, HybridRetriever
    from selfroute.stores._embedding import embed_query

    words = _words(Path(data))
    rng = random.Random(1)
    questions = []
    for _ in range(queries):
        start = rng.randrange(0, len(words) - 8)
        questions.append(" ".join(words[start : start + 8]))
    ds = DocumentStore(store, chroma_url=chroma_url)
    chunks, _ = ds._open()
    function = ds._conn.embedding_function()
    retrievers = {m: HybridRetriever(ds, mode=m, k=k) for m in ("dense", "bm25", "hybrid")}
    for r in retrievers.values():  # load the BM25 index and warm every path once
        r.retrieve(questions[0])
    times: dict[str, list[float]] = {"raw_chroma": [], **{m: [] for m in retrievers}}
    for q in questions:
        t0 = time.perf_counter()
        chunks.query(
            query_embeddings=[embed_query(function, ds.embedding, q)],
            n_results=k,
            include=["documents", "metadatas", "distances"],
        )
        times["raw_chroma"].append(time.perf_counter() - t0)
        for mode, r in retrievers.items():
            t0 = time.perf_counter()
            r.retrieve(q)
            times[mode].append(time.perf_counter() - t0)
    return {
        "chunks": int(chunks.count()),
        "p50": {m: percentile(v, 50) for m, v in times.items()},
        "p95": {m: percentile(v, 95) for m, v in times.items()},
        "peak_mb": _peak_mb(),
    }


def on_server(store: str, queries: int, data: str) -> dict[str, Any]:
    """Start ``chroma run``, ``selfroute migrate`` the store to it, then measure retrieval there."""
    from selfroute.stores import DocumentStore
    from selfroute.stores._migrate import copy_collection
    from tests.support.chroma_server import ChromaServer

    with (
        tempfile.TemporaryDirectory(prefix="selfroute-scale-server-") as tmp,
        ChromaServer(tmp) as server,
    ):
        t0 = time.perf_counter()
        report = copy_collection(DocumentStore(store), DocumentStore(store, chroma_url=server.url))
        seconds = time.perf_counter() - t0
        out = retrieval(store, queries, data, chroma_url=server.url)
        out["server_peak_mb"] = server.peak_rss_mb()
    out.update(migrate_seconds=seconds, migrated_chunks=report.chunks, bm25=report.bm25)
    return out


def server_chunks(name: str) -> int:
    """Chunks of the bulk-built server store for tier ``name`` (0: not run)."""
    return int(os.environ.get(SERVER_ENV) or SERVER_CHUNKS[name])


def bulk_on_server(n: int, queries: int, data: str) -> dict[str, Any]:
    """Start ``chroma run``, write ``n`` one-chunk documents to it directly (a worker process),
    then measure retrieval there in another worker (so each peak RSS is its own)."""
    from tests.support.chroma_server import ChromaServer

    with (
        tempfile.TemporaryDirectory(prefix="selfroute-scale-bulk-") as tmp,
        ChromaServer(Path(tmp) / "server") as server,
    ):
        store = Path(tmp) / "store"
        built = _spawn("bulk", store, server.url, n, data, timeout=4 * 3600.0)
        out = _spawn("retrieval", store, queries, data, server.url)
        out["server_peak_mb"] = server.peak_rss_mb()
    out["built"] = built
    return out


def _spawn(kind: str, *args: object, timeout: float = 3600.0) -> dict[str, Any]:
    return spawn_worker("benchmarks.bench_scale", [kind, *args], timeout)


def _rate(m: dict[str, Any]) -> float:
    return float(m["words"]) / max(float(m["seconds"]), 1e-9)


def _folder_rows(result: BenchResult, n: int, ours: dict[str, Any], base: dict[str, Any]) -> None:
    result.rows.append(
        Row(
            f"{n:,} one-chunk files: words/s (LangChain Chroma.from_documents = baseline)",
            f"{_rate(base):,.0f}",
            f"{_rate(ours):,.0f}",
            f"{_rate(ours) / _rate(base):.2f}",
            ">= 1.0",
            _rate(ours) >= _rate(base),
        )
    )
    result.rows.append(
        Row(
            f"{n:,} one-chunk files: whole folder, seconds",
            f"{base['seconds']:.1f}",
            f"{ours['seconds']:.1f}",
            "",
            f"< {FOLDER_TARGET_S:.0f}" if n >= 50_000 else "",
            ours["seconds"] < FOLDER_TARGET_S if n >= 50_000 else None,
        )
    )
    result.rows.append(
        Row(
            f"rerun after changing 10 of {n:,} files, seconds",
            f"{ours['seconds']:.1f} (first run)",
            f"{ours['rerun_seconds']:.2f}",
            f"{ours['rerun_seconds'] / ours['seconds']:.3f}",
            "seconds, not minutes (< 30)",
            ours["rerun_seconds"] < 30 and ours["rerun_replaced"] == 10,
        )
    )


def _linear_rows(
    result: BenchResult,
    kind: str,
    small: dict[str, Any],
    big: dict[str, Any],
    impl: str = "selfroute",
) -> None:
    per_small = small["seconds"] / max(small["chunks"], 1)
    per_big = big["seconds"] / max(big["chunks"], 1)
    growth = per_big / per_small
    ours = impl == "selfroute"
    result.rows.append(
        Row(
            f"{kind}: time per chunk, {big['chunks']:,} vs {small['chunks']:,} chunks"
            + ("" if ours else f" ({impl}, for comparison)"),
            f"{per_small * 1000:.3f} ms",
            f"{per_big * 1000:.3f} ms",
            f"{growth:.2f}",
            "<= 1.5" if ours else "",
            growth <= 1.5 if ours else None,
        )
    )


def _retrieval_rows(result: BenchResult, r: dict[str, Any], where: str) -> None:
    raw50, raw95 = r["p50"]["raw_chroma"], r["p95"]["raw_chroma"]
    for mode in ("dense", "bm25", "hybrid"):
        target = 1.1 if mode == "dense" else None
        for q, raw in (("p50", raw50), ("p95", raw95)):
            result.rows.append(
                ratio_row(
                    f"{where}, {r['chunks']:,} chunks: {mode} retrieval {q} "
                    "(raw Chroma query = baseline)",
                    raw,
                    r[q][mode],
                    target=target,
                    fmt=fmt_ms,
                )
            )


def _bulk_note(r: dict[str, Any]) -> str:
    b = r["built"]
    return (
        f"The bulk-built server rows: {b['chunks']:,} one-chunk documents written straight to a "
        f"`chroma run` server by `benchmarks/_bulk_store.py` (the indexer's layout, batch `add` of "
        f"offline embeddings, chunks then records, BM25 index built from the texts) in "
        f"{b['write_seconds']:.0f} s + {b['bm25_seconds']:.0f} s BM25, not by `selfroute index`; "
        f"peak RSS: builder {b['peak_mb']:.0f} MB, retrieval client {r['peak_mb']:.0f} MB, "
        f"server {r['server_peak_mb']:.0f} MB."
    )


def _linear(
    ctx: BenchContext,
    root: Path,
    kind: str,
    make: Callable[[Path, int, Path], Path],
    sizes: tuple[int, int],
    record: Callable[[str, dict[str, Any]], None],
    baseline: bool = False,
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``[(ours small, ours big)]``, then LangChain's pair if ``baseline`` (each size timed
    with its baseline right after it, so the pairs see the same load)."""
    runs: list[list[dict[str, Any]]] = [[], []]
    for size in sizes:
        corpus = make(root / f"{kind}-{size}", size, ctx.data)
        if baseline:
            m = _spawn("langchain", corpus, root / f"lc-{kind}-{size}")
            record(f"{kind}, {size:,} chunks", m)
            runs[1].append(m)
        m = _spawn("ours", corpus, root / f"store-{kind}-{size}")
        record(f"{kind}, {size:,} chunks", m)
        runs[0].append(m)
    return [(pair[0], pair[1]) for pair in runs if pair]


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark at the context's tier."""
    name = tier(ctx)
    folder_n, (lin_small, lin_big), queries = TIERS[name]
    result = BenchResult(KEY, TITLE)
    measured: list[list[str]] = []

    def record(label: str, m: dict[str, Any]) -> None:
        measured.append(
            [
                label,
                m["impl"],
                f"{m['files']:,}",
                f"{m['chunks']:,}",
                f"{m['seconds']:.2f}",
                f"{_rate(m):,.0f}",
                f"{m['peak_mb']:.0f}",
            ]
        )
        ctx.log(f"  [8] {label} {m['impl']}: {m['seconds']:.1f} s, {_rate(m):,.0f} words/s")

    chosen = parts()
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="selfroute-scale-") as tmp:
        root = Path(tmp)
        if "folder" in chosen:
            folder = small_files(root / "folder", folder_n, ctx.data)
            base = _spawn("langchain", folder, root / "lc-store")
            ours = _spawn("ours", folder, root / "store-folder", 10)
            record(f"{folder_n:,} small files", base)
            record(f"{folder_n:,} small files", ours)
            _folder_rows(result, folder_n, ours, base)
        if "small" in chosen:
            pairs = _linear(
                ctx, root, "small files", small_files, (lin_small, lin_big), record, True
            )
            _linear_rows(result, "small files", *pairs[0])
            _linear_rows(result, "small files", *pairs[1], impl="LangChain")
        biggest = root / f"store-small files-{lin_big}"
        if "retrieval" in chosen:
            r = _spawn("retrieval", biggest, queries, ctx.data)
            _retrieval_rows(result, r, "embedded store")
            ctx.log(f"  [8] retrieval at {r['chunks']:,} chunks: {r['p50']} {r['p95']}")
            notes.append(
                f"Retrieval: {queries} questions (8-word windows of the corpus), k = 5, after one "
                f"warm-up question per mode, peak RSS {r['peak_mb']:.0f} MB for the retrieval "
                "process with all three retrievers and the BM25 index loaded."
            )
        if "server" in chosen:
            srv = _spawn("server", biggest, queries, ctx.data)
            _retrieval_rows(result, srv, "chroma run server")
            ctx.log(
                f"  [8] server retrieval at {srv['chunks']:,} chunks: {srv['p50']} {srv['p95']}"
            )
            notes.append(
                f"The server rows: `chroma run` on this machine (loopback HTTP), the store copied "
                f"there with `selfroute migrate` ({srv['migrated_chunks']:,} chunks in "
                f"{srv['migrate_seconds']:.1f} s, BM25 index {srv['bm25']}); peak RSS of the "
                f"client process {srv['peak_mb']:.0f} MB, of the server "
                f"{srv['server_peak_mb']:.0f} MB."
            )
            bulk = server_chunks(name)
            if bulk:
                big = bulk_on_server(bulk, queries, str(ctx.data))
                _retrieval_rows(result, big, "chroma run server, bulk-built")
                notes.append(_bulk_note(big))
        if "large" in chosen:
            large = _linear(ctx, root, "large files", large_files, (lin_small, lin_big), record)
            _linear_rows(result, "large files", *large[0])
    result.details.append(
        markdown_table(
            ["corpus", "implementation", "files", "chunks", "seconds", "words/s", "peak RSS MB"],
            measured,
        )
    )
    result.notes.extend(notes)
    result.notes.append(
        f"Tier `{name}` ({ENV}=quick|small|full; parts {', '.join(p for p in PARTS if p in chosen)})."
        " Each measurement is a fresh subprocess. Timings are wall-clock on a shared machine: "
        "compare ratios within the run."
    )
    return result


if __name__ == "__main__":
    kind, *rest = sys.argv[1:]
    if kind == "ours":
        res = index_ours(rest[0], rest[1], int(rest[2]) if len(rest) > 2 else 0)
    elif kind == "langchain":
        res = index_langchain(rest[0], rest[1])
    elif kind == "server":
        res = on_server(rest[0], int(rest[1]), rest[2])
    elif kind == "bulk":
        from benchmarks._bulk_store import bulk_build

        res = bulk_build(rest[0], rest[1], int(rest[2]), _words(Path(rest[3])))
        res["peak_mb"] = _peak_mb()
    else:
        res = retrieval(rest[0], int(rest[1]), rest[2], chroma_url=rest[3] if rest[3:] else None)
    print(json.dumps(res))
