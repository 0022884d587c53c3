"""Benchmark 4's hosted-embedding row: indexing through an OpenAI-compatible ``/v1/embeddings``.

A loopback server that behaves like a provider (``tests.support.openai_server`` in its own
process: 40 ms + 4 us per token per request, 16 requests worked on at once, 1536-dimension
vectors sent as base64 when asked) embeds for three indexers, each in a fresh subprocess, into
an embedded Chroma store, over the same long documents (LaRA's novellas and papers; SQuAD's first
8 articles when LaRA is absent; LaRA's financial documents are not used):

* ours: ``DocumentStore(embedding="openai:text-embedding-3-small", embedding_base_url=URL)
  .index([folder])`` (the ``selfroute index`` path: read, chunk, embed with
  ``embedding_concurrency`` requests in flight, write, BM25);
* LangChain: ``RecursiveCharacterTextSplitter`` (the same ~300-word chunks) +
  ``Chroma.from_documents`` with ``OpenAIEmbeddings(base_url=URL, check_embedding_ctx_length=False)``;
* LlamaIndex: ``VectorStoreIndex.from_documents(..., use_async=True)`` with a ``SentenceSplitter``
  (400 tokens, about 300 words) and ``OpenAIEmbedding(api_base=URL)`` into a
  ``ChromaVectorStore``.

Each reads the files inside its timing; imports are not timed. The rounds interleave the three
(A/B/C, then again) and the best words/s of each is kept, so a noisy neighbour hurts all alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import REPO_ROOT, BenchContext, Row, markdown_table, spawn_worker

__all__ = ["IMPLS", "hosted_documents", "hosted_rows", "hosted_worker"]

IMPLS = ("langchain", "llamaindex", "ours")
MODEL = "text-embedding-3-small"
_NAMES = {"ours": "selfroute", "langchain": "LangChain", "llamaindex": "LlamaIndex"}


def hosted_documents(data: Path, quick: bool) -> list[tuple[str, str]]:
    """``(name, text)`` of the long documents (none when the data is absent)."""
    lara = data / "lara" / "32k"
    docs: list[tuple[str, str]] = []
    if lara.is_dir():
        for kind in ("book", "paper"):  # never the financial reports
            for p in sorted((lara / kind).glob("*")):
                if p.is_file():
                    docs.append((f"{kind}-{p.stem}", p.read_text(encoding="utf-8")))
    squad = data / "squad_v2" / "articles_as_documents.jsonl"
    if not docs and squad.is_file():
        with squad.open(encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if i >= 8:  # only the first 8 articles may be used
                    break
                row = json.loads(line)
                docs.append((f"squad-{i}", row["document"]))
    return docs[:4] if quick else docs


def _texts(folder: Path) -> list[tuple[str, str]]:
    return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.txt"))]


def _ours(folder: Path, store: Path, url: str, concurrency: int) -> int:
    from selfroute.stores import DocumentStore

    s = DocumentStore(
        store,
        embedding=f"openai:{MODEL}",
        embedding_base_url=url,
        embedding_concurrency=concurrency,
    )
    return s.index([folder]).chunks


def _langchain(folder: Path, store: Path, url: str) -> int:
    from chromadb.config import Settings
    from langchain_chroma import Chroma
    from langchain_openai import OpenAIEmbeddings
    from langchain_text_splitters import RecursiveCharacterTextSplitter
    from pydantic import SecretStr

    docs = _texts(folder)
    words = sum(len(t.split()) for _, t in docs)
    chunk_chars = round(sum(len(t) for _, t in docs) / words * 300)
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_chars, chunk_overlap=0)
    documents = splitter.create_documents(
        [t for _, t in docs], metadatas=[{"source": n} for n, _ in docs]
    )
    embeddings = OpenAIEmbeddings(
        model=MODEL, base_url=url, api_key=SecretStr("not-needed"), check_embedding_ctx_length=False
    )
    Chroma.from_documents(
        documents,
        embeddings,
        collection_name="bench",
        persist_directory=str(store),
        client_settings=Settings(anonymized_telemetry=False, is_persistent=True),
        collection_metadata={"hnsw:space": "cosine"},
    )
    return len(documents)


def _llamaindex(folder: Path, store: Path, url: str) -> int:
    import chromadb
    from chromadb.config import Settings
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.embeddings.openai import OpenAIEmbedding
    from llama_index.vector_stores.chroma import ChromaVectorStore

    client = chromadb.PersistentClient(
        path=str(store), settings=Settings(anonymized_telemetry=False)
    )
    collection = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    documents = [Document(text=t, metadata={"source": n}) for n, t in _texts(folder)]
    splitter = SentenceSplitter(chunk_size=400, chunk_overlap=0)
    storage = StorageContext.from_defaults(vector_store=ChromaVectorStore(collection))
    index = VectorStoreIndex.from_documents(
        documents,
        storage_context=storage,
        embed_model=OpenAIEmbedding(model=MODEL, api_base=url, api_key="not-needed"),
        transformations=[splitter],
        use_async=True,
    )
    del index
    return int(collection.count())


def hosted_worker(impl: str, folder: str, url: str, concurrency: int) -> dict[str, Any]:
    """Index ``folder`` with ``impl`` through the embedding server at ``url``; time it."""
    import chromadb  # noqa: F401 - import cost is not indexing cost

    if impl == "langchain":
        import langchain_chroma  # noqa: F401
        import langchain_openai  # noqa: F401
    elif impl == "llamaindex":
        import llama_index.core
        import llama_index.embeddings.openai  # noqa: F401
    words = sum(len(t.split()) for _, t in _texts(Path(folder)))
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-") as tmp:
        t0 = time.perf_counter()
        if impl == "ours":
            chunks = _ours(Path(folder), Path(tmp) / "store", url, concurrency)
        elif impl == "langchain":
            chunks = _langchain(Path(folder), Path(tmp) / "store", url)
        else:
            chunks = _llamaindex(Path(folder), Path(tmp) / "store", url)
        seconds = time.perf_counter() - t0
    return {"impl": impl, "chunks": chunks, "words": words, "seconds": seconds}


def _start_server() -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.openai_server", "--embed-dim", "1536",
         "--embed-base-ms", "40", "--embed-us-per-token", "4", "--embed-max-concurrent", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def hosted_rows(ctx: BenchContext, concurrency: int = 16) -> tuple[list[Row], list[str]]:
    """The hosted-embedding row (words/s, ours versus the faster peer) and its detail table;
    no rows (a note) when the data is absent or a peer's package is missing."""
    docs = hosted_documents(ctx.data, ctx.quick)
    if not docs:
        return [], [f"hosted-embedding row not run: no LaRA or SQuAD documents under {ctx.data}"]
    try:
        import langchain_openai  # noqa: F401
        import llama_index.embeddings.openai  # noqa: F401
    except ImportError as exc:
        return [], [f"hosted-embedding row not run: {exc.name} is not installed"]
    rounds = 1 if ctx.quick else 2
    best: dict[str, dict[str, Any]] = {}
    proc, url = _start_server()
    try:
        with tempfile.TemporaryDirectory(prefix="selfroute-bench-docs-") as tmp:
            for name, text in docs:
                (Path(tmp) / f"{name}.txt").write_text(text, encoding="utf-8")
            for r in range(rounds):
                for impl in IMPLS if r % 2 == 0 else tuple(reversed(IMPLS)):
                    m = spawn_worker(
                        "benchmarks.bench_indexing",
                        [f"hosted-{impl}", tmp, url, concurrency],
                        timeout=900,
                    )
                    m["rate"] = m["words"] / m["seconds"]
                    ctx.log(
                        f"  [4] hosted {impl} round {r + 1}: {m['rate']:,.0f} words/s, "
                        f"{m['chunks']:,} chunks, {m['seconds']:.2f} s"
                    )
                    if impl not in best or m["rate"] > best[impl]["rate"]:
                        best[impl] = m
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    peer = max(("langchain", "llamaindex"), key=lambda i: best[i]["rate"])
    ratio = best["ours"]["rate"] / best[peer]["rate"]
    words = best["ours"]["words"]
    row = Row(
        f"hosted embedding (loopback /v1/embeddings, 40 ms + 4 us/token, 16 at once), "
        f"{len(docs)} long documents ({words:,} words): words/s vs the faster peer "
        f"({_NAMES[peer]})",
        f"{best[peer]['rate']:,.0f}",
        f"{best['ours']['rate']:,.0f}",
        f"{ratio:.2f}",
        ">= 2.0",
        ratio >= 2.0,
    )
    table = markdown_table(
        ["implementation", "chunks", "words", "seconds (best)", "words/s"],
        [
            [_NAMES[i], f"{best[i]['chunks']:,}", f"{best[i]['words']:,}",
             f"{best[i]['seconds']:.2f}", f"{best[i]['rate']:,.0f}"]
            for i in IMPLS
        ],
    )  # fmt: skip
    note = (
        f"Hosted-embedding row: best of {rounds} interleaved rounds per implementation, each in a "
        f"fresh subprocess, against one loopback embedding server in its own process; selfroute "
        f"with embedding_concurrency={concurrency}."
    )
    return [row], [table, note]
