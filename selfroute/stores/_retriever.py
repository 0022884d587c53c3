"""Hybrid retrieval over a :class:`DocumentStore`: dense (Chroma) + BM25, fused by RRF.

Reciprocal rank fusion (Cormack et al., 2009) scores each chunk ``sum(1 / (rrf_k + rank))`` over
the rankings it appears in (rank from 1, ``rrf_k = 60``). It needs no score calibration between a
cosine similarity and a BM25 score, and a chunk ranked well by either retriever survives -- an
exact token such as a passkey or an error code that the embedding blurs is still found lexically.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, cast

from selfroute._errors import ConfigurationError
from selfroute._fitting import ContextDocument
from selfroute._result import Passage
from selfroute._threads import in_thread
from selfroute.stores._store import DEFAULT_COLLECTION, DEFAULT_STORE, DocumentStore

__all__ = ["RETRIEVAL_MODES", "HybridRetriever", "rrf_fuse"]

#: Retrieval modes.
RETRIEVAL_MODES = ("hybrid", "dense", "bm25")


def rrf_fuse(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion of several rankings of ids (best first).

    Args:
        rankings: Each a list of ids, best first (duplicates inside one ranking count once).
        k: The RRF constant (60 in the original paper).

    Returns:
        ``(id, score)`` pairs, best first; ties broken by the best single rank, then by id.
    """
    if k < 0:
        raise ConfigurationError(f"rrf k must be >= 0, got {k}")
    scores: dict[str, float] = {}
    best: dict[str, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


#: The score scale of each retrieval mode (see :attr:`HybridRetriever.score_scale`).
#: ``bm25s`` is the store's BM25 (the ``bm25s`` package, its own tokenizer): not the same numbers
#: as the core's :class:`~selfroute.LexicalIndex` (``bm25``, used by ``--doc`` and ``eval``).
SCORE_SCALES = {"hybrid": "rrf", "dense": "cosine", "bm25": "bm25s"}


class HybridRetriever:
    """Top-k chunks from a :class:`DocumentStore`, and their parent documents as long context.

    Args:
        store: The store (or use :meth:`open`).
        mode: ``hybrid`` (dense + BM25 fused by RRF, default), ``dense`` or ``bm25``. ``bm25``
            needs no embedding model at query time.
        k: Chunks to return (5 in the paper).
        rrf_k: The RRF constant.
        candidates: Chunks each retriever contributes before fusion (default ``max(4k, 20)``).
        max_parent_documents: Cap on the documents :meth:`long_context` returns (``None``: the
            parents of all retrieved chunks).

    Example:
        >>> retriever = HybridRetriever.open(".selfroute", collection="docs")  # doctest: +SKIP
        >>> passages = retriever.retrieve("What is the passkey?")  # doctest: +SKIP
        >>> documents = retriever.long_context(passages)  # doctest: +SKIP
    """

    def __init__(
        self,
        store: DocumentStore,
        *,
        mode: str = "hybrid",
        k: int = 5,
        rrf_k: int = 60,
        candidates: int | None = None,
        max_parent_documents: int | None = None,
    ) -> None:
        if mode not in RETRIEVAL_MODES:
            raise ConfigurationError(
                f"unknown retrieval mode {mode!r}; choose one of {', '.join(RETRIEVAL_MODES)}"
            )
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise ConfigurationError(f"k must be a positive integer, got {k!r}")
        if candidates is not None and candidates < 1:
            raise ConfigurationError(f"candidates must be >= 1, got {candidates!r}")
        if max_parent_documents is not None and max_parent_documents < 1:
            raise ConfigurationError(
                f"max_parent_documents must be >= 1, got {max_parent_documents!r}"
            )
        self.store = store
        self.mode = mode
        self.k = k
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.max_parent_documents = max_parent_documents

    @property
    def score_scale(self) -> str:
        """What ``Passage.score`` means here: ``rrf`` (fused, about 0.01-0.03), ``cosine`` or
        ``bm25s``. A score threshold fitted on one scale does not apply to another."""
        return SCORE_SCALES[self.mode]

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] = DEFAULT_STORE,
        collection: str = DEFAULT_COLLECTION,
        *,
        chroma_url: str | None = None,
        embedding: Any = None,
        **kwargs: Any,
    ) -> HybridRetriever:
        """Open an existing store's collection (see :class:`DocumentStore` for the arguments)."""
        store = DocumentStore(path, collection, chroma_url=chroma_url, embedding=embedding)
        store._open()  # fail now (missing collection, embedding mismatch), not at the first query
        return cls(store, **kwargs)

    def _pool(self, k: int) -> int:
        return self.candidates or max(4 * k, 20)

    def retrieve(self, question: str, k: int | None = None) -> list[Passage]:
        """The top ``k`` chunks for ``question``, best first.

        ``Passage.score`` is the fused RRF score (``hybrid``), the cosine similarity (``dense``)
        or the BM25 score (``bm25``); ``metadata`` has ``dense_rank`` and ``bm25_rank`` where
        known, plus the chunk's ``doc_id``, ``source``, ``chunk_index``, ``start``, ``end``.
        """
        n = self.k if k is None else k
        if n < 1:
            return []
        store = self.store
        store.refresh()  # another process indexed since the last question: see its vectors
        pool = self._pool(n)
        want = pool if self.mode == "hybrid" else n
        # with a run in progress (or killed), chunks may lack their commit marker: ask for more
        # and keep those whose document is committed (one targeted read); else trust them all
        clean = store.is_clean()
        dense: list[Passage] = []
        lexical: list[tuple[str, float]] = []
        if self.mode in ("hybrid", "dense"):
            dense = store.dense_search(question, want if clean else want + max(10, want))
        if self.mode in ("hybrid", "bm25"):
            lexical = store.bm25().search(question, want)
        if not clean:
            keep = store.committed_among(
                [str(p.doc_id) for p in dense] + [cid.rsplit(":", 1)[0] for cid, _ in lexical]
            )
            dense = [p for p in dense if p.doc_id in keep][:want]
            lexical = [(cid, s) for cid, s in lexical if cid.rsplit(":", 1)[0] in keep]
        if self.mode == "dense":  # the passages and their metadata are this question's own
            for i, p in enumerate(dense[:n], 1):
                meta = cast("dict[str, Any]", p.metadata)
                meta["retrieval"], meta["dense_rank"] = self.mode, i
            return dense[:n]
        dense_by_id = {str(p.source): p for p in dense}
        dense_rank = {cid: i for i, cid in enumerate(dense_by_id, 1)}
        bm25_rank = {cid: i for i, (cid, _) in enumerate(lexical, 1)}
        bm25_score = dict(lexical)
        if self.mode == "bm25":
            ranked = [(cid, score) for cid, score in lexical[:n]]
        else:
            ranked = rrf_fuse([list(dense_by_id), [cid for cid, _ in lexical]], self.rrf_k)[:n]
        missing = [cid for cid, _ in ranked if cid not in dense_by_id]
        fetched = store.get_chunks(missing)
        out: list[Passage] = []
        for cid, score in ranked:
            if cid in dense_by_id:
                p = dense_by_id[cid]
                text, meta = p.text, dict(p.metadata)
                meta["dense_score"] = p.score
            elif cid in fetched:
                text, meta = fetched[cid]
                meta["chunk_id"] = cid
            else:  # deleted between the ranking and the fetch
                continue
            if cid in bm25_score:
                meta["bm25_score"] = bm25_score[cid]
            out.append(
                self._annotate(
                    Passage(
                        text=text, doc_id=meta.get("doc_id"), score=score, metadata=meta, source=cid
                    ),
                    dense_rank=dense_rank.get(cid),
                    bm25_rank=bm25_rank.get(cid),
                )
            )
        return out

    def _annotate(
        self, passage: Passage, *, dense_rank: int | None = None, bm25_rank: int | None = None
    ) -> Passage:
        meta = dict(passage.metadata)
        meta["retrieval"] = self.mode
        if dense_rank is not None:
            meta["dense_rank"] = dense_rank
        if bm25_rank is not None:
            meta["bm25_rank"] = bm25_rank
        return Passage(
            text=passage.text,
            doc_id=passage.doc_id,
            score=passage.score,
            metadata=meta,
            source=passage.source,
        )

    def __call__(self, question: str, k: int | None = None) -> list[Passage]:
        """Same as :meth:`retrieve` (so the retriever plugs into ``FunctionHandler``)."""
        return self.retrieve(question, k)

    def long_context(self, passages: Sequence[Passage]) -> list[ContextDocument]:
        """The full documents the ``passages`` came from, most relevant first.

        With no passages and a store of exactly one document, that document (a one-file store
        has an obvious long context even when BM25 matched nothing).
        """
        doc_ids = list(dict.fromkeys(p.doc_id for p in passages if p.doc_id))
        if not doc_ids and self.store.document_count() == 1:
            doc_ids = self.store.committed_ids()
        if self.max_parent_documents is not None:
            doc_ids = doc_ids[: self.max_parent_documents]
        return self.store.get_documents(doc_ids)

    async def aretrieve(self, question: str, k: int | None = None) -> list[Passage]:
        """:meth:`retrieve` in a worker thread (local stores do blocking I/O)."""
        return await in_thread(self.retrieve, question, k)

    async def along_context(self, passages: Sequence[Passage]) -> list[ContextDocument]:
        """:meth:`long_context` in a worker thread."""
        return await in_thread(self.long_context, passages)
