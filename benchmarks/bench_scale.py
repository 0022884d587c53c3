"""8. Scale: a folder of small files, cost per chunk, retrieval at 10^4-10^6 chunks.

What runs, each (implementation, size) in a fresh subprocess (time, peak RSS of that process):

* **small-file folder** -- ``N`` text files of 20-60 words (one chunk each; random windows of the
  real corpus text) indexed by ``selfroute`` (:meth:`DocumentStore.index` over the folder, the
  offline hashing embedding, embedded ``PersistentClient``) versus LangChain's usual recipe on
  the same files: read them, ``langchain_chroma.Chroma.from_documents`` with
  ``langchain_selfroute.HashingEmbeddings`` (the same embedder). Words/s, ours / baseline.
* **rerun** -- 10 of the ``N`` files changed, ``index`` run again (stat check, 10 documents
  rewritten, BM25 updated incrementally); then 10 new files added and ``index`` run again. Each
  run's phases are timed from its progress events (discovery, record scan, files, BM25 update);
  a note reports the share of each run's seconds the phases account for (``phase_share``).
* **linear cost** -- ``selfroute`` time per chunk at the large size versus the small size, for a
  small-file corpus (one chunk per file) and a large-file corpus (3,000-word files, 10 chunks).
* **retrieval** -- on the largest small-file store: p50/p95 latency of ``HybridRetriever`` in
  ``dense``, ``bm25`` and ``hybrid`` modes (k = 5) against the raw Chroma query of the same
  collection (query embedding + ``collection.query``, documents, metadatas and distances), paired
  per question in alternating order (ABBA) after a discarded warm-up, with a bootstrap interval
  per run and several runs (fresh subprocesses) for the run-to-run spread; and the retrieval
  process's peak RSS. The ``server`` part does the same on a ``chroma run`` server (the store
  copied there by ``selfroute migrate``) and, in the full tier, on 10^6 one-chunk files indexed
  into a fresh server by ``selfroute`` (``$SELFROUTE_BENCH_SCALE_SERVER_BUILD=bulk``: written by
  :mod:`benchmarks._bulk_store` instead).

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
import statistics
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
    "quick": (200, (100, 400), 20),
    "small": (5_000, (2_000, 20_000), 300),
    "full": (50_000, (10_000, 100_000), 1_000),
}
#: tier -> retrieval runs per store (each a fresh subprocess: the run-to-run spread)
REPEATS = {"quick": 1, "small": 2, "full": 3}
#: Chunks of a store written to a ``chroma run`` server for the retrieval rows at 10^6
#: (``$SELFROUTE_BENCH_SCALE_SERVER_CHUNKS`` overrides; 0: none).
SERVER_CHUNKS = {"quick": 0, "small": 0, "full": 1_000_000}
SERVER_ENV = "SELFROUTE_BENCH_SCALE_SERVER_CHUNKS"
#: How that store is written: ``index`` (default: ``selfroute index`` of a folder of one-chunk
#: files, then 10 changed and 10 new files indexed again) or ``bulk`` (:mod:`._bulk_store`).
SERVER_BUILD_ENV = "SELFROUTE_BENCH_SCALE_SERVER_BUILD"
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


class PhaseClock:
    """A ``progress`` callback of :meth:`DocumentStore.index` that keeps when each event was
    first seen: ``discover`` (finding files), ``files`` (found; the record scan follows), the
    first ``file``, ``bm25`` (the BM25 update starts; it runs until ``index`` returns)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.first: dict[str, float] = {}

    def __call__(self, event: str, info: object) -> None:
        if event not in self.first:
            self.first[event] = time.perf_counter()

    def phases(self, end: float) -> dict[str, float]:
        """Seconds of discovery, the record scan (to the first file), the per-file loop and the
        BM25 update (``bm25_seconds`` is 0 when the run did not update BM25)."""
        t = self.first
        files = t.get("files", end)
        loop = t.get("file", files)
        bm25 = t.get("bm25", end)
        return {
            "discover_seconds": files - t.get("discover", self.start),
            "scan_seconds": loop - files,
            "files_seconds": bm25 - loop,
            "bm25_seconds": end - bm25,
        }


def _timed_index(store: Any, folder: str) -> tuple[Any, dict[str, float]]:
    clock = PhaseClock()
    report = store.index([folder], progress=clock)
    end = time.perf_counter()
    phases = clock.phases(end)
    seconds = end - clock.start
    share = sum(phases.values()) / seconds if seconds > 0 else 1.0
    return report, {"seconds": seconds, **phases, "phase_share": share}


def _phase_note(n: int, ours: dict[str, Any]) -> str:
    """The share of each indexing run of the ``n``-file folder its timed phases account for."""
    runs = (("first run", ours), ("10 changed", ours["rerun"]), ("10 new", ours["rerun_new"]))
    shares = ", ".join(f"{label} {run['phase_share']:.0%}" for label, run in runs)
    return (
        f"Indexing phases (discovery, record scan, files, BM25 update) of the {n:,}-file folder "
        f"account for this share of each run's seconds: {shares} (the rest is between phases; "
        f"it grows with the machine's load)."
    )


def index_ours(
    folder: str, store: str, rerun: int = 0, chroma_url: str | None = None
) -> dict[str, Any]:
    """Index ``folder`` into a new store with ``selfroute`` (on ``chroma_url`` if given); then
    change ``rerun`` files and index again, then add ``rerun`` new files and index again."""
    from selfroute.stores import DocumentStore

    def open_store() -> Any:
        return DocumentStore(store, chroma_url=chroma_url, embedding="offline")

    open_store()._open(create=True)  # start-up is not indexing
    cpu = time.process_time()
    report, timing = _timed_index(open_store(), folder)
    out: dict[str, Any] = {
        "impl": "selfroute",
        **timing,
        "cpu_seconds": time.process_time() - cpu,
        "chunks": report.chunks,
        "words": report.words,
        "files": len(report.added),
        "peak_mb": _peak_mb(),
    }
    if rerun:
        files = sorted(Path(folder).rglob("*.txt"))
        step = max(1, len(files) // rerun)
        for path in files[::step][:rerun]:
            path.write_text(path.read_text(encoding="utf-8") + " changed\n", encoding="utf-8")
        again, timing = _timed_index(open_store(), folder)
        out["rerun"] = {**timing, "replaced": len(again.replaced)}
        out["rerun_seconds"], out["rerun_replaced"] = timing["seconds"], len(again.replaced)
        new = Path(folder) / "new"
        new.mkdir(exist_ok=True)
        for i, path in enumerate(files[step // 2 :: step][:rerun]):
            text = path.read_text(encoding="utf-8")
            (new / f"new-{i:03d}.txt").write_text(f"new note {i}: {text}", encoding="utf-8")
        again, timing = _timed_index(open_store(), folder)
        out["rerun_new"] = {**timing, "added": len(again.added)}
    out["rerun_peak_mb"] = _peak_mb()
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


def _questions(words: list[str], n: int, seed: int = 1) -> list[str]:
    """``n`` questions: 8-word windows of the corpus."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        start = rng.randrange(0, len(words) - 8)
        out.append(" ".join(words[start : start + 8]))
    return out


def abba(
    raw: Callable[[str], object],
    ours: Callable[[str], object],
    questions: list[str],
    warmup: int,
    reads: Callable[[], int] = lambda: 0,
) -> dict[str, Any]:
    """Time ``raw`` and ``ours`` on every question, the order alternating per question (raw
    first on even questions, ours first on odd ones: A B B A A B ...), so that neither side is
    always the one that runs right after the other on the same question (warm caches) or after
    the previous question. The first ``warmup`` questions are timed but discarded.

    ``reads`` counts extra round trips (the writer-mark lease reads) so that the questions of
    ``ours`` that paid one are reported.
    """
    times: dict[str, list[float]] = {"raw": [], "ours": []}
    extra = 0
    for i, q in enumerate(questions):
        for side in ("raw", "ours") if i % 2 == 0 else ("ours", "raw"):
            before = reads()
            t0 = time.perf_counter()
            (raw if side == "raw" else ours)(q)
            elapsed = time.perf_counter() - t0
            if i >= warmup:
                times[side].append(elapsed)
                if side == "ours":
                    extra += reads() - before
    return {"raw": times["raw"], "ours": times["ours"], "lease_reads": extra}


def paired_stats(
    raw: list[float], ours: list[float], boot: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """p50/p95 of both sides, the ratios ``ours / raw`` and their paired bootstrap 95% interval
    (questions resampled with replacement, each keeping its raw and its own time)."""
    import numpy as np

    a, b = np.asarray(raw), np.asarray(ours)
    idx = np.random.default_rng(seed).integers(0, len(a), size=(boot, len(a)))
    out: dict[str, Any] = {"n": len(a)}
    for q in (50, 95):
        ratios = np.percentile(b[idx], q, axis=1) / np.percentile(a[idx], q, axis=1)
        lo, hi = np.percentile(ratios, [2.5, 97.5])
        pa, pb = float(np.percentile(a, q)), float(np.percentile(b, q))
        out[f"p{q}"] = {"raw": pa, "ours": pb, "ratio": pb / pa, "ci": [float(lo), float(hi)]}
    return out


def retrieval(
    store: str,
    queries: int,
    data: str,
    k: int = 5,
    chroma_url: str | None = None,
    warmup: int | None = None,
) -> dict[str, Any]:
    """Each mode of the store's retriever against the raw Chroma query, paired per question.

    For each mode in turn (``dense``, ``bm25``, ``hybrid``), ``warmup + queries`` questions, each
    answered by the raw query (query embedding + ``collection.query`` of the same collection:
    documents, metadatas, distances) and by the retriever in alternating order (:func:`abba`);
    per mode the p50/p95 of both, their ratio and its bootstrap interval (:func:`paired_stats`).
    Also: how many timed retriever questions paid a writer-mark lease read (a server's one extra
    round trip, at most once a second), full (generation-2) garbage collections during the
    timed loops, and the process's peak RSS.
    """
    import gc

    from selfroute.stores import DocumentStore, HybridRetriever
    from selfroute.stores._embedding import embed_query

    warm = min(50, max(1, queries // 10)) if warmup is None else warmup
    questions = _questions(_words(Path(data)), warm + queries)
    ds = DocumentStore(store, chroma_url=chroma_url)
    chunks, _ = ds._open()
    function = ds._conn.embedding_function()

    def raw(q: str) -> object:
        return chunks.query(
            query_embeddings=[embed_query(function, ds.embedding, q)],
            n_results=k,
            include=["documents", "metadatas", "distances"],
        )

    def reads() -> int:
        marks = ds._conn._marks
        return 0 if marks is None else marks.reads

    full_gcs: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and info.get("generation") == 2:
            full_gcs.append(time.perf_counter())

    timed: dict[str, dict[str, Any]] = {}
    gc.callbacks.append(on_gc)
    try:
        for mode in ("dense", "bm25", "hybrid"):
            retriever = HybridRetriever(ds, mode=mode, k=k)
            timed[mode] = abba(raw, retriever.retrieve, questions, warm, reads)
    finally:
        gc.callbacks.remove(on_gc)
    peak = _peak_mb()  # before the bootstrap's arrays
    modes = {
        mode: {**paired_stats(t["raw"], t["ours"]), "lease_reads": t["lease_reads"]}
        for mode, t in timed.items()
    }
    return {
        "chunks": int(chunks.count()),
        "questions": queries,
        "warmup": warm,
        "modes": modes,
        "full_gcs": len(full_gcs),
        "peak_mb": peak,
    }


def on_server(store: str, queries: int, data: str, repeats: int = 1) -> dict[str, Any]:
    """Start ``chroma run``, ``selfroute migrate`` the store to it, then measure retrieval there
    (``repeats`` runs, each in a fresh subprocess)."""
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
        runs = [_spawn("retrieval", store, queries, data, server.url) for _ in range(repeats)]
        peak = server.peak_rss_mb()
    return {
        "runs": runs,
        "server_peak_mb": peak,
        "migrate_seconds": seconds,
        "migrated_chunks": report.chunks,
        "bm25": report.bm25,
    }


def server_chunks(name: str) -> int:
    """Chunks of the 10^6-row server store for tier ``name`` (0: not run)."""
    return int(os.environ.get(SERVER_ENV) or SERVER_CHUNKS[name])


def bulk_on_server(n: int, queries: int, data: str, repeats: int = 1) -> dict[str, Any]:
    """Start ``chroma run``, write ``n`` one-chunk documents to it directly (a worker process),
    then measure retrieval there in ``repeats`` other workers (so each peak RSS is its own)."""
    from tests.support.chroma_server import ChromaServer

    with (
        tempfile.TemporaryDirectory(prefix="selfroute-scale-bulk-") as tmp,
        ChromaServer(Path(tmp) / "server") as server,
    ):
        store = Path(tmp) / "store"
        built = _spawn("bulk", store, server.url, n, data, timeout=4 * 3600.0)
        runs = [_spawn("retrieval", store, queries, data, server.url) for _ in range(repeats)]
        peak = server.peak_rss_mb()
    return {"runs": runs, "server_peak_mb": peak, "built": built}


def indexed_on_server(
    n: int, queries: int, data: str, repeats: int = 1, rerun: int = 10
) -> dict[str, Any]:
    """Start ``chroma run``, write ``n`` one-chunk files, index them into the server with
    ``selfroute`` (a worker: time, CPU, peak RSS, then ``rerun`` changed and ``rerun`` new files
    indexed again), then measure retrieval there in ``repeats`` other workers."""
    from tests.support.chroma_server import ChromaServer

    with (
        tempfile.TemporaryDirectory(prefix="selfroute-scale-indexed-") as tmp,
        ChromaServer(Path(tmp) / "server") as server,
    ):
        folder = small_files(Path(tmp) / "notes", n, Path(data))
        store = Path(tmp) / "store"
        built = _spawn("ours", folder, store, rerun, server.url, timeout=4 * 3600.0)
        runs = [_spawn("retrieval", store, queries, data, server.url) for _ in range(repeats)]
        peak = server.peak_rss_mb()
    return {"runs": runs, "server_peak_mb": peak, "built": built}


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
    new = ours["rerun_new"]
    result.rows.append(
        Row(
            f"rerun after adding 10 new files to the {n:,}, seconds (BM25 update "
            f"{new['bm25_seconds']:.2f} s)",
            f"{ours['seconds']:.1f} (first run)",
            f"{new['seconds']:.2f}",
            f"{new['seconds'] / ours['seconds']:.3f}",
            "seconds, not minutes (< 30)",
            new["seconds"] < 30 and new["added"] == 10,
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


def _retrieval_rows(result: BenchResult, runs: list[dict[str, Any]], where: str) -> None:
    """Per mode and percentile: the medians over ``runs`` of the raw query's and the mode's
    latency and of their ratio, every run's ratio and the widest bootstrap 95% interval."""
    for mode in ("dense", "bm25", "hybrid"):
        target = 1.1 if mode == "dense" else None
        for q in ("p50", "p95"):
            stats = [r["modes"][mode][q] for r in runs]
            ratio = statistics.median(s["ratio"] for s in stats)
            lo = min(s["ci"][0] for s in stats)
            hi = max(s["ci"][1] for s in stats)
            each = ", ".join(f"{s['ratio']:.2f}" for s in stats)
            result.rows.append(
                Row(
                    f"{where}, {runs[0]['chunks']:,} chunks: {mode} retrieval {q} "
                    f"(raw Chroma query = baseline; {len(runs)} run(s), "
                    f"{runs[0]['questions']:,} questions each)",
                    fmt_ms(statistics.median(s["raw"] for s in stats)),
                    fmt_ms(statistics.median(s["ours"] for s in stats)),
                    f"{ratio:.3f} (runs {each}; 95% CI {lo:.2f}-{hi:.2f})",
                    "" if target is None else f"<= {target:g} (median of runs)",
                    None if target is None else ratio <= target,
                )
            )


def _retrieval_note(runs: list[dict[str, Any]], where: str) -> str:
    reads = [r["modes"]["dense"]["lease_reads"] for r in runs]
    peaks = [r["peak_mb"] for r in runs]
    return (
        f"Retrieval ({where}): per mode, {runs[0]['questions']:,} questions (8-word windows of "
        f"the corpus, k = 5) after {runs[0]['warmup']} discarded warm-up questions, each asked of "
        "the raw Chroma query and of the retriever in alternating order (ABBA); ratios are "
        "mode / raw per run, with a paired bootstrap 95% interval; each run a fresh subprocess. "
        f"Dense questions that paid a writer-mark lease read: {reads}; full GCs during the "
        f"timed loops: {[r['full_gcs'] for r in runs]}; peak RSS of the retrieval process "
        f"{', '.join(f'{peak:.0f}' for peak in peaks)} MB."
    )


def _summary(runs: list[dict[str, Any]]) -> str:
    """``mode p50/p95 ratios`` per run, for the log."""
    return "; ".join(
        f"{mode} "
        + " ".join(
            f"{r['modes'][mode]['p50']['ratio']:.2f}/{r['modes'][mode]['p95']['ratio']:.2f}"
            for r in runs
        )
        for mode in ("dense", "bm25", "hybrid")
    )


def _indexed_note(r: dict[str, Any]) -> str:
    b = r["built"]
    changed, new = b["rerun"], b["rerun_new"]
    return (
        f"The indexed server rows: {b['chunks']:,} one-chunk files indexed into a `chroma run` "
        f"server by `selfroute` (`DocumentStore.index`, offline embedding) in "
        f"{b['seconds']:.1f} s ({b['cpu_seconds']:.1f} s CPU of the indexing process; BM25 "
        f"{b['bm25_seconds']:.1f} s); 10 changed files indexed again in "
        f"{changed['seconds']:.1f} s (BM25 update {changed['bm25_seconds']:.1f} s, record scan "
        f"{changed['scan_seconds']:.1f} s), 10 new files in {new['seconds']:.1f} s (BM25 "
        f"{new['bm25_seconds']:.1f} s); peak RSS: indexer {b['peak_mb']:.0f} MB "
        f"({b['rerun_peak_mb']:.0f} MB after the reruns), retrieval client "
        f"{max(run['peak_mb'] for run in r['runs']):.0f} MB, server {r['server_peak_mb']:.0f} MB."
    )


def _bulk_note(r: dict[str, Any]) -> str:
    b = r["built"]
    return (
        f"The bulk-built server rows: {b['chunks']:,} one-chunk documents written straight to a "
        f"`chroma run` server by `benchmarks/_bulk_store.py` (the indexer's layout, batch `add` of "
        f"offline embeddings, chunks then records, BM25 index built from the texts) in "
        f"{b['write_seconds']:.0f} s + {b['bm25_seconds']:.0f} s BM25, not by `selfroute index`; "
        f"peak RSS: builder {b['peak_mb']:.0f} MB, retrieval client "
        f"{max(run['peak_mb'] for run in r['runs']):.0f} MB, server {r['server_peak_mb']:.0f} MB."
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
            notes.append(_phase_note(folder_n, ours))
        if "small" in chosen:
            pairs = _linear(
                ctx, root, "small files", small_files, (lin_small, lin_big), record, True
            )
            _linear_rows(result, "small files", *pairs[0])
            _linear_rows(result, "small files", *pairs[1], impl="LangChain")
        biggest = root / f"store-small files-{lin_big}"
        repeats = REPEATS[name]
        if "retrieval" in chosen:
            runs = [_spawn("retrieval", biggest, queries, ctx.data) for _ in range(repeats)]
            _retrieval_rows(result, runs, "embedded store")
            ctx.log(f"  [8] retrieval at {runs[0]['chunks']:,} chunks: {_summary(runs)}")
            notes.append(_retrieval_note(runs, "embedded store"))
        if "server" in chosen:
            srv = _spawn("server", biggest, queries, ctx.data, repeats)
            _retrieval_rows(result, srv["runs"], "chroma run server")
            ctx.log(f"  [8] server retrieval: {_summary(srv['runs'])}")
            notes.append(_retrieval_note(srv["runs"], "chroma run server"))
            notes.append(
                f"The server rows: `chroma run` on this machine (loopback HTTP), the store copied "
                f"there with `selfroute migrate` ({srv['migrated_chunks']:,} chunks in "
                f"{srv['migrate_seconds']:.1f} s, BM25 index {srv['bm25']}); peak RSS of the "
                f"server {srv['server_peak_mb']:.0f} MB."
            )
            bulk = server_chunks(name)
            if bulk:
                if os.environ.get(SERVER_BUILD_ENV, "index") == "bulk":
                    big = bulk_on_server(bulk, queries, str(ctx.data), repeats)
                    _retrieval_rows(result, big["runs"], "chroma run server, bulk-built")
                    notes.append(_bulk_note(big))
                else:
                    big = indexed_on_server(bulk, queries, str(ctx.data), repeats)
                    _retrieval_rows(result, big["runs"], "chroma run server, indexed")
                    notes.append(_indexed_note(big))
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
        res = index_ours(
            rest[0],
            rest[1],
            int(rest[2]) if len(rest) > 2 else 0,
            rest[3] if len(rest) > 3 else None,
        )
    elif kind == "langchain":
        res = index_langchain(rest[0], rest[1])
    elif kind == "server":
        res = on_server(rest[0], int(rest[1]), rest[2], int(rest[3]) if rest[3:] else 1)
    elif kind == "bulk":
        from benchmarks._bulk_store import bulk_build

        res = bulk_build(rest[0], rest[1], int(rest[2]), _words(Path(rest[3])))
        res["peak_mb"] = _peak_mb()
    else:
        res = retrieval(rest[0], int(rest[1]), rest[2], chroma_url=rest[3] if rest[3:] else None)
    print(json.dumps(res))
