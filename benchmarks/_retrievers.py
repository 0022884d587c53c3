"""The retrievers the project offers, built over a list of chunks, for the economics benchmark.

* ``bm25`` -- :class:`selfroute.LexicalIndex` (the core's default, used by ``selfroute.self_route``).
* ``dense`` -- cosine similarity over the offline hashing embedding (``selfroute._embeddings``).
* ``hybrid`` -- reciprocal-rank fusion (``selfroute.stores.rrf_fuse``, what the store's
  ``HybridRetriever`` uses, ``k=60``) of the two full rankings. The store's retriever fuses the top
  ``max(4k, 20)`` of each; over a haystack of ~140 chunks the full ranking differs only in the tail.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import selfroute as sr

__all__ = ["RRF_K", "Search", "available_retrievers", "build_retriever"]

Search = Callable[[str, int], list[sr.Passage]]

#: The usual reciprocal-rank-fusion constant (Cormack et al., 2009).
RRF_K = 60


def _embedding_class() -> Any | None:
    try:
        module = importlib.import_module("selfroute._embeddings")
    except ImportError:
        return None
    return getattr(module, "HashingEmbedding", None)


def available_retrievers() -> list[str]:
    """Names of the retrievers that can be built in this checkout (``bm25`` first: the default)."""
    names = ["bm25"]
    if _embedding_class() is not None:
        names += ["dense", "hybrid"]
    return names


def _passage(chunk: sr.Chunk, score: float) -> sr.Passage:
    return sr.Passage(
        text=chunk.text,
        doc_id=chunk.doc_id,
        score=score,
        metadata={"chunk_index": chunk.index},
        source=chunk,
    )


def _dense(chunks: Sequence[sr.Chunk]) -> Search:
    import numpy as np

    cls = _embedding_class()
    assert cls is not None
    embedder = cls()
    matrix = np.asarray(embedder.embed_documents([c.text for c in chunks]), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.asarray(matrix / np.where(norms == 0, 1.0, norms), dtype=np.float32)

    def search(question: str, k: int) -> list[sr.Passage]:
        q = np.asarray(embedder.embed_query(question), dtype=np.float32)
        n = float(np.linalg.norm(q)) or 1.0
        scores = matrix @ (q / n)
        order = np.argsort(-scores, kind="stable")[:k]
        return [_passage(chunks[i], float(scores[i])) for i in order]

    return search


def _hybrid(chunks: Sequence[sr.Chunk], bm25: Search, dense: Search) -> Search:
    from selfroute.stores import rrf_fuse  # the fusion HybridRetriever uses

    by_id = {c.chunk_id: c for c in chunks}
    depth = len(chunks)

    def search(question: str, k: int) -> list[sr.Passage]:
        rankings = [
            [p.source.chunk_id for p in bm25(question, depth)],
            [p.source.chunk_id for p in dense(question, depth)],
        ]
        return [_passage(by_id[i], s) for i, s in rrf_fuse(rankings, k=RRF_K)[:k]]

    return search


def build_retriever(name: str, chunks: Sequence[sr.Chunk]) -> Search:
    """A ``search(question, k)`` function of the named retriever over ``chunks``."""
    if name == "bm25":
        return sr.LexicalIndex(chunks).search
    if name == "dense":
        return _dense(chunks)
    if name == "hybrid":
        return _hybrid(chunks, sr.LexicalIndex(chunks).search, _dense(chunks))
    raise ValueError(f"unknown retriever {name!r}; available: {available_retrievers()}")
