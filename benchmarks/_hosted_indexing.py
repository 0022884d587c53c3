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

import importlib
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

PEERS = ("langchain", "llamaindex")
OURS = ("ours", "ours-langchain", "ours-llamaindex")
IMPLS = (*PEERS, *OURS)
MODEL = "text-embedding-3-small"
GEMINI_MODEL = "gemini-embedding-001"
_NAMES = {
    "ours": "selfroute",
    "ours-langchain": "selfroute LangChain helper",
    "ours-llamaindex": "selfroute LlamaIndex helper",
    "langchain": "LangChain",
    "llamaindex": "LlamaIndex",
}


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


def _spec(provider: str) -> str:
    return f"openai:{MODEL}" if provider == "openai" else f"google:{GEMINI_MODEL}"


def _ours(folder: Path, store: Path, url: str, concurrency: int, provider: str) -> int:
    from selfroute.stores import DocumentStore

    s = DocumentStore(
        store,
        embedding=_spec(provider),
        embedding_base_url=url if provider == "openai" else None,
        embedding_concurrency=concurrency,
    )
    return s.index([folder]).chunks


def _ours_langchain(folder: Path, store: Path, url: str, concurrency: int, provider: str) -> int:
    from chromadb.config import Settings
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    from langchain_selfroute import HostedEmbeddings, index_documents

    embeddings = HostedEmbeddings(
        _spec(provider), base_url=url if provider == "openai" else None, concurrency=concurrency
    )
    vectorstore = Chroma(
        collection_name="bench",
        embedding_function=embeddings,
        persist_directory=str(store),
        client_settings=Settings(anonymized_telemetry=False, is_persistent=True),
        collection_metadata={"hnsw:space": "cosine"},
    )
    docs = [Document(page_content=t, metadata={"source": n}) for n, t in _texts(folder)]
    index_documents(vectorstore, docs)
    return int(vectorstore._collection.count())


def _ours_llamaindex(folder: Path, store: Path, url: str, concurrency: int, provider: str) -> int:
    from llama_index.core import Document

    from llamaindex_selfroute import HostedEmbedding, build_index

    embed = HostedEmbedding(
        _spec(provider), base_url=url if provider == "openai" else None, concurrency=concurrency
    )
    docs = [Document(text=t, id_=n, metadata={"source": n}) for n, t in _texts(folder)]
    index = build_index(
        docs,
        embed_model=embed,
        persist_dir=store,
        collection_kwargs={"metadata": {"hnsw:space": "cosine"}},
    )
    return int(index.vector_store._collection.count())  # type: ignore[attr-defined]


def _langchain_embeddings(url: str, provider: str) -> Any:
    from pydantic import SecretStr

    if provider == "google":
        from langchain_google_genai import GoogleGenerativeAIEmbeddings

        options: dict[str, Any] = {"google_api_key": SecretStr("not-needed"), "base_url": url}
        return GoogleGenerativeAIEmbeddings(model=GEMINI_MODEL, **options)
    from langchain_openai import OpenAIEmbeddings

    return OpenAIEmbeddings(
        model=MODEL, base_url=url, api_key=SecretStr("not-needed"), check_embedding_ctx_length=False
    )


def _langchain(folder: Path, store: Path, url: str, provider: str) -> int:
    from chromadb.config import Settings
    from langchain_chroma import Chroma
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    docs = _texts(folder)
    words = sum(len(t.split()) for _, t in docs)
    chunk_chars = round(sum(len(t) for _, t in docs) / words * 300)
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_chars, chunk_overlap=0)
    documents = splitter.create_documents(
        [t for _, t in docs], metadatas=[{"source": n} for n, _ in docs]
    )
    Chroma.from_documents(
        documents,
        _langchain_embeddings(url, provider),
        collection_name="bench",
        persist_directory=str(store),
        client_settings=Settings(anonymized_telemetry=False, is_persistent=True),
        collection_metadata={"hnsw:space": "cosine"},
    )
    return len(documents)


def _llamaindex_embedding(url: str, provider: str) -> Any:
    if provider == "google":
        from google.genai.types import HttpOptions
        from llama_index.embeddings.google_genai import GoogleGenAIEmbedding

        return GoogleGenAIEmbedding(
            model_name=GEMINI_MODEL, api_key="not-needed", http_options=HttpOptions(base_url=url)
        )
    from llama_index.embeddings.openai import OpenAIEmbedding

    return OpenAIEmbedding(model=MODEL, api_base=url, api_key="not-needed")


def _llamaindex(folder: Path, store: Path, url: str, provider: str) -> int:
    import chromadb
    from chromadb.config import Settings
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
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
        embed_model=_llamaindex_embedding(url, provider),
        transformations=[splitter],
        use_async=True,
    )
    del index
    return int(collection.count())


_PEER_MODULES = {
    ("langchain", "openai"): "langchain_openai",
    ("langchain", "google"): "langchain_google_genai",
    ("llamaindex", "openai"): "llama_index.embeddings.openai",
    ("llamaindex", "google"): "llama_index.embeddings.google_genai",
}


def hosted_worker(
    impl: str, folder: str, url: str, concurrency: int, provider: str = "openai"
) -> dict[str, Any]:
    """Index ``folder`` with ``impl`` through the ``provider``-like embedding server at ``url``
    (``openai``: ``/v1/embeddings``; ``google``: Gemini ``batchEmbedContents``); time it."""
    import chromadb  # noqa: F401 - import cost is not indexing cost

    if provider == "google":  # selfroute's Gemini client reads its endpoint and key from here
        os.environ["GOOGLE_GEMINI_BASE_URL"] = url
        os.environ.setdefault("GOOGLE_API_KEY", "not-needed")
    if impl in ("langchain", "llamaindex"):
        importlib.import_module(_PEER_MODULES[impl, provider])
        importlib.import_module("langchain_chroma" if impl == "langchain" else "llama_index.core")
    elif impl == "ours-langchain":
        import langchain_selfroute  # noqa: F401
    elif impl == "ours-llamaindex":
        import llamaindex_selfroute  # noqa: F401
    words = sum(len(t.split()) for _, t in _texts(Path(folder)))
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-") as tmp:
        store = Path(tmp) / "store"
        t0 = time.perf_counter()
        if impl == "ours":
            chunks = _ours(Path(folder), store, url, concurrency, provider)
        elif impl == "ours-langchain":
            chunks = _ours_langchain(Path(folder), store, url, concurrency, provider)
        elif impl == "ours-llamaindex":
            chunks = _ours_llamaindex(Path(folder), store, url, concurrency, provider)
        elif impl == "langchain":
            chunks = _langchain(Path(folder), store, url, provider)
        else:
            chunks = _llamaindex(Path(folder), store, url, provider)
        seconds = time.perf_counter() - t0
    return {"impl": impl, "chunks": chunks, "words": words, "seconds": seconds}


def _start_server(provider: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    module = "openai_server" if provider == "openai" else "gemini_server"
    dim = "1536" if provider == "openai" else "3072"  # each model's default size
    proc = subprocess.Popen(
        [sys.executable, "-m", f"tests.support.{module}", "--embed-dim", dim,
         "--embed-base-ms", "40", "--embed-us-per-token", "4", "--embed-max-concurrent", "16"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO_ROOT,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


#: (provider, our implementations) measured against both peers of that provider.
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("openai", OURS),
    ("google", ("ours",)),
)
_ENDPOINT = {
    "openai": "/v1/embeddings, 1536 dims",
    "google": "Gemini :batchEmbedContents, 3072 dims",
}
_WHAT = {
    "ours": "selfroute index",
    "ours-langchain": "langchain_selfroute.index_documents + HostedEmbeddings",
    "ours-llamaindex": "llamaindex_selfroute.build_index + HostedEmbedding",
}


def _measure(
    ctx: BenchContext, provider: str, impls: tuple[str, ...], folder: str, concurrency: int
) -> dict[str, dict[str, Any]]:
    """Best-of-rounds measurements of ``impls`` against one server of ``provider``'s kind."""
    rounds = 1 if ctx.quick else 2
    best: dict[str, dict[str, Any]] = {}
    proc, url = _start_server(provider)
    try:
        for r in range(rounds):
            for impl in impls if r % 2 == 0 else tuple(reversed(impls)):
                m = spawn_worker(
                    "benchmarks.bench_indexing",
                    [f"hosted-{impl}", folder, url, concurrency, provider],
                    timeout=900,
                )
                m["rate"] = m["words"] / m["seconds"]
                ctx.log(
                    f"  [4] hosted {provider} {impl} round {r + 1}: {m['rate']:,.0f} words/s, "
                    f"{m['chunks']:,} chunks, {m['seconds']:.2f} s"
                )
                if impl not in best or m["rate"] > best[impl]["rate"]:
                    best[impl] = m
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return best


def hosted_rows(ctx: BenchContext, concurrency: int = 16) -> tuple[list[Row], list[str]]:
    """The hosted-embedding rows (words/s, each of ours versus the faster peer on the same
    provider-like server) and their detail tables; a note instead of a provider's rows when the
    data is absent or a peer's package is missing."""
    docs = hosted_documents(ctx.data, ctx.quick)
    if not docs:
        return [], [f"hosted-embedding rows not run: no LaRA or SQuAD documents under {ctx.data}"]
    rows: list[Row] = []
    extra: list[str] = []
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-docs-") as tmp:
        for name, text in docs:
            (Path(tmp) / f"{name}.txt").write_text(text, encoding="utf-8")
        for provider, ours in PLAN:
            try:
                for peer in PEERS:
                    importlib.import_module(_PEER_MODULES[peer, provider])
            except ImportError as exc:
                extra.append(f"hosted {provider} rows not run: {exc.name} is not installed")
                continue
            impls = (*PEERS, *ours)
            best = _measure(ctx, provider, impls, tmp, concurrency)
            peer = max(PEERS, key=lambda i: best[i]["rate"])
            for impl in ours:
                ratio = best[impl]["rate"] / best[peer]["rate"]
                rows.append(
                    Row(
                        f"hosted embedding, {_WHAT[impl]} (loopback {_ENDPOINT[provider]}, "
                        f"40 ms + 4 us/token, 16 at once), {len(docs)} long documents "
                        f"({best[impl]['words']:,} words): words/s vs the faster peer "
                        f"({_NAMES[peer]})",
                        f"{best[peer]['rate']:,.0f}",
                        f"{best[impl]['rate']:,.0f}",
                        f"{ratio:.2f}",
                        ">= 2.0",
                        ratio >= 2.0,
                    )
                )
            cells = [
                [provider, _NAMES[i], f"{best[i]['chunks']:,}", f"{best[i]['words']:,}",
                 f"{best[i]['seconds']:.2f}", f"{best[i]['rate']:,.0f}"]
                for i in impls
            ]  # fmt: skip
            header = ["provider", "implementation", "chunks", "words", "seconds (best)", "words/s"]
            extra.append(markdown_table(header, cells))
    extra.append(
        f"Hosted-embedding rows: best of {1 if ctx.quick else 2} interleaved rounds per "
        f"implementation, each in a fresh subprocess, against one loopback embedding server per "
        f"provider in its own process; selfroute with {concurrency} embedding requests in flight."
    )
    return rows, extra
