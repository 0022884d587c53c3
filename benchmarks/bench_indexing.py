"""4. Indexing throughput: chunk + embed + store in Chroma, ours versus LangChain's usual recipe.

* ours: ``selfroute.chunk_text`` (300-word chunks) + Chroma ``PersistentClient`` collection with
  ``selfroute._embeddings.chroma_embedding_function()`` (the offline hashing embedding), added in
  batches of the client's maximum batch size.
* baseline: LangChain ``RecursiveCharacterTextSplitter`` (chunk size in characters chosen to give
  the same ~300-word chunks, no overlap) + ``langchain_chroma.Chroma.from_documents`` with
  ``langchain_selfroute.HashingEmbeddings`` (the same hashing embedding) into a persistent directory.

Each (implementation, size) runs in a fresh subprocess so that timings and peak memory (the
process's ``ru_maxrss``, reported as growth over the RSS before indexing started) are not polluted
by earlier runs. The corpus is real text (LaRA novellas and papers, SQuAD articles; the vendored
fixture texts when ``../shared/data`` is absent) repeated with distinct document ids up to the size.

A last row indexes through a hosted embedding API (a loopback ``/v1/embeddings`` server with a
provider's latency): ours versus LangChain and LlamaIndex in the same run
(:mod:`benchmarks._hosted_indexing`).
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import (
    BenchContext,
    BenchResult,
    Row,
    markdown_table,
    source_texts,
    spawn_worker,
)
from benchmarks._hosted_indexing import hosted_rows, hosted_worker

__all__ = ["corpus", "run", "worker"]

KEY, TITLE = "4", "Indexing: chunk + embed + store in Chroma (words/s)"
CHUNK_WORDS = 300
TIME_LIMIT_S = 180.0


def corpus(data: Path, words: int) -> list[tuple[str, str]]:
    """``(doc_id, text)`` documents of real text totalling about ``words`` words."""
    sources = [t.split() for t in source_texts(data)]
    docs: list[tuple[str, str]] = []
    total = 0
    i = 0
    while total < words:
        src = sources[i % len(sources)]
        take = src[: words - total]
        docs.append((f"doc-{i}", " ".join(take)))
        total += len(take)
        i += 1
    return docs


def _rss_kb() -> int:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0  # pragma: no cover - non-Linux


def _ours(docs: list[tuple[str, str]], path: str) -> int:
    import chromadb
    from chromadb.config import Settings

    import selfroute as sr

    client = chromadb.PersistentClient(path=path, settings=Settings(anonymized_telemetry=False))
    embedding: Any = sr.chroma_embedding_function()  # chromadb's type names numpy vectors too
    collection = client.create_collection(
        "bench", embedding_function=embedding, metadata={"hnsw:space": "cosine"}
    )
    batch = client.get_max_batch_size()
    chunks = [c for did, text in docs for c in sr.chunk_text(text, doc_id=did)]
    for i in range(0, len(chunks), batch):
        part = chunks[i : i + batch]
        collection.add(
            ids=[c.chunk_id for c in part],
            documents=[c.text for c in part],
            metadatas=[{"doc_id": c.doc_id, "chunk_index": c.index} for c in part],
        )
    return len(chunks)


def _langchain(docs: list[tuple[str, str]], path: str, chunk_chars: int) -> int:
    from chromadb.config import Settings
    from langchain_chroma import Chroma
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from langchain_selfroute import HashingEmbeddings

    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_chars, chunk_overlap=0)
    documents = splitter.create_documents(
        [text for _, text in docs], metadatas=[{"doc_id": did} for did, _ in docs]
    )
    Chroma.from_documents(
        documents,
        HashingEmbeddings(),
        collection_name="bench",
        persist_directory=path,
        client_settings=Settings(anonymized_telemetry=False, is_persistent=True),
        collection_metadata={"hnsw:space": "cosine"},
    )
    return len(documents)


def worker(impl: str, chunks: int, data: str) -> dict[str, Any]:
    """Index ``chunks`` x 300 words with ``impl`` (``ours``/``langchain``); time and memory."""
    import chromadb  # noqa: F401 - import cost is not indexing cost
    import langchain_chroma  # noqa: F401

    docs = corpus(Path(data), chunks * CHUNK_WORDS)
    words = sum(len(t.split()) for _, t in docs)
    chunk_chars = round(sum(len(t) for _, t in docs) / words * CHUNK_WORDS)
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-") as tmp:
        before = _rss_kb()
        t0 = time.perf_counter()
        n = _ours(docs, tmp) if impl == "ours" else _langchain(docs, tmp, chunk_chars)
        seconds = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "impl": impl,
        "chunks": n,
        "words": words,
        "seconds": seconds,
        "peak_mb": peak / 1024,
        "growth_mb": max(0, peak - before) / 1024,
    }


def _spawn(impl: str, chunks: int, data: Path, timeout: float) -> dict[str, Any]:
    return spawn_worker("benchmarks.bench_indexing", [impl, chunks, data], timeout)


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    sizes = [50] if ctx.quick else [1_000, 10_000, 100_000]
    result = BenchResult(KEY, TITLE)
    measured: dict[tuple[str, int], dict[str, Any]] = {}
    for size in sizes:
        if size > 10_000:
            # Predict from the previous size (linear) and skip if it would blow the time budget.
            prev = sizes[sizes.index(size) - 1]
            predicted = sum(measured[i, prev]["seconds"] for i in ("ours", "langchain")) * (
                size / prev
            )
            if predicted > TIME_LIMIT_S:
                result.notes.append(
                    f"{size:,} chunks not run: predicted {predicted:.0f} s for both implementations "
                    f"(> {TIME_LIMIT_S:.0f} s budget), from the {prev:,}-chunk timings."
                )
                break
        for impl in ("langchain", "ours"):
            if ctx.quick:  # in-process: no interpreter start-up; memory figures not meaningful
                m = worker(impl, size, str(ctx.data))
            else:
                m = _spawn(impl, size, ctx.data, timeout=max(600.0, size / 50))
            measured[impl, size] = m
            ctx.log(
                f"  [4] {impl} {size} chunks: {m['words'] / m['seconds']:,.0f} words/s, "
                f"{m['chunks']} chunks, peak {m['peak_mb']:.0f} MB (+{m['growth_mb']:.0f} MB)"
            )
    done = sorted({s for _, s in measured})
    for size in done:
        base, ours = measured["langchain", size], measured["ours", size]
        b_rate, o_rate = base["words"] / base["seconds"], ours["words"] / ours["seconds"]
        result.rows.append(
            Row(
                f"{size:,} chunks: words/s",
                f"{b_rate:,.0f}",
                f"{o_rate:,.0f}",
                f"{o_rate / b_rate:.2f}",
                ">= 1.0",
                o_rate >= b_rate,
            )
        )
    if len(done) > 1:
        first, last = done[0], done[-1]
        for metric, key in (("time", "seconds"), ("memory growth", "growth_mb")):
            per_first = measured["ours", first][key] / first
            per_last = measured["ours", last][key] / last
            growth = per_last / per_first if per_first else float("inf")
            result.rows.append(
                Row(
                    f"ours: {metric} per chunk, {last:,} vs {first:,} chunks (linear = 1.0)",
                    f"{per_first * 1000:.3f} {'ms' if key == 'seconds' else 'KB'}",
                    f"{per_last * 1000:.3f} {'ms' if key == 'seconds' else 'KB'}",
                    f"{growth:.2f}",
                    "<= 1.5",
                    growth <= 1.5,
                )
            )
    table_rows = []
    for (impl, size), m in sorted(measured.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        table_rows.append(
            [
                f"{size:,}",
                impl,
                f"{m['chunks']:,}",
                f"{m['words']:,}",
                f"{m['seconds']:.2f}",
                f"{m['words'] / m['seconds']:,.0f}",
                f"{m['peak_mb']:.0f}",
                f"{m['growth_mb']:.0f}",
            ]
        )
    result.details.append(
        markdown_table(
            [
                "target chunks",
                "implementation",
                "chunks",
                "words",
                "seconds",
                "words/s",
                "peak RSS MB",
                "RSS growth MB",
            ],
            table_rows,
        )
    )
    result.notes.append(
        "Each run is a fresh subprocess; peak RSS includes the imported libraries, RSS growth is "
        "the peak minus the RSS just before indexing. Memory linearity is judged on growth "
        "(per-chunk ratio; the small size is dominated by fixed costs, so a ratio below 1 is "
        "expected)."
    )
    result.rows.append(html_reader_row(ctx))
    result.rows.extend(identical_files_rows(ctx))
    rows, extra = hosted_rows(ctx)
    result.rows.extend(rows)
    for text in extra:
        (result.details if text.startswith("|") else result.notes).append(text)
    return result


def _index_twice(folder: Path, store: Path) -> tuple[float, float]:
    """Seconds of a first ``index`` of ``folder`` and of a rerun with nothing changed."""
    from selfroute.stores import DocumentStore

    s = DocumentStore(store, embedding="offline")
    times = []
    for _ in range(2):
        start = time.perf_counter()
        s.index([folder])
        times.append(time.perf_counter() - start)
    return times[0], times[1]


def identical_files_rows(ctx: BenchContext) -> list[Row]:
    """``index`` and its rerun over n and 4n identical files (one shared document record):
    time per file, 4n versus n (linear = 1.0). Distinct files of the same count are shown as
    the baseline's per-file rerun time."""
    small, large = (100, 400) if ctx.quick else (400, 1_600)
    page = "The same handbook page, copied into every folder of the share.\n" * 20
    seconds: dict[tuple[str, int], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = Path(tmp) / "warm-up"  # imports and first-use costs out of the first timing
        warm.mkdir()
        (warm / "page.txt").write_text(page, encoding="utf-8")
        _index_twice(warm, Path(tmp) / "store-warm-up")
        for kind in ("identical", "distinct"):
            for n in (small, large):
                folder = Path(tmp) / f"{kind}-{n}"
                folder.mkdir()
                for i in range(n):
                    text = page if kind == "identical" else f"Page {i}. {page}"
                    (folder / f"copy{i:05d}.txt").write_text(text, encoding="utf-8")
                seconds[kind, n] = _index_twice(folder, Path(tmp) / f"store-{kind}-{n}")
                ctx.log(
                    f"  [4] {n} {kind} files: index {seconds[kind, n][0]:.2f} s, "
                    f"rerun {seconds[kind, n][1]:.2f} s"
                )
    rows = []
    for phase, at in (("index", 0), ("rerun", 1)):
        per_small = seconds["identical", small][at] / small
        per_large = seconds["identical", large][at] / large
        growth = per_large / per_small
        distinct = seconds["distinct", large][at] / large
        rows.append(
            Row(
                f"identical files, {phase}: time per file, {large:,} vs {small:,} copies "
                f"(linear = 1.0; baseline: {large:,} distinct files)",
                f"{distinct * 1000:.2f} ms",
                f"{per_small * 1000:.2f} -> {per_large * 1000:.2f} ms",
                f"{growth:.2f}",
                "<= 2.0",
                growth <= 2.0,
            )
        )
    return rows


def nested_html(kb: int) -> str:
    """Deeply nested HTML of about ``kb`` KB (the shape that made a tree-based reader quadratic)."""
    depth = max(1, kb * 1024 // 13)
    return "<html><body>" + "<div>x " * depth + "</div>" * depth + "</body></html>"


def html_reader_row(ctx: BenchContext) -> Row:
    """``read_document`` time per KB on nested HTML, large versus small (linear = 1.0)."""
    from selfroute.stores._readers import read_document

    small_kb, large_kb = (2, 22) if ctx.quick else (22, 2200)
    seconds: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for kb in (small_kb, large_kb):
            path = Path(tmp) / f"nested-{kb}.html"
            path.write_text(nested_html(kb), encoding="utf-8")
            best = float("inf")
            for _ in range(3 if kb == small_kb else 1):  # best of 3 for the noisy small size
                start = time.perf_counter()
                read_document(path)
                best = min(best, time.perf_counter() - start)
            seconds[kb] = best
    per_small, per_large = seconds[small_kb] / small_kb, seconds[large_kb] / large_kb
    growth = per_large / per_small
    ctx.log(f"  [4] nested HTML reader: {seconds[small_kb]:.3f} s / {seconds[large_kb]:.3f} s")
    return Row(
        f"HTML reader: time per KB, {large_kb:,} KB vs {small_kb} KB nested (linear = 1.0)",
        f"{per_small * 1000:.3f} ms",
        f"{per_large * 1000:.3f} ms",
        f"{growth:.2f}",
        "<= 2.0",
        growth <= 2.0,
    )


if __name__ == "__main__":
    if sys.argv[1].startswith("hosted-"):
        impl = sys.argv[1].removeprefix("hosted-")
        folder, url, concurrency, *provider = sys.argv[2:6]
        print(json.dumps(hosted_worker(impl, folder, url, int(concurrency), *provider)))
    else:
        print(json.dumps(worker(sys.argv[1], int(sys.argv[2]), sys.argv[3])))
