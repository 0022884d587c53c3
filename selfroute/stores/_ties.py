"""Deterministic ranking of chunks: ties on score are broken by the chunk's id, read as
``(document id, chunk index)``.

Chroma returns chunks of equal distance in an order that differs between processes (and, at the
``n_results`` boundary, even a different *set* of them), and a top-k cut of BM25 scores can split
a run of equal scores anywhere. Every store ranking goes through :func:`chunk_order` so that the
same store and question give the same chunks, in the same order, in every process -- which a
batch job's replay and any cache keyed by the prompt rely on.
"""

from __future__ import annotations

__all__ = ["TIE_CAP", "chunk_order", "more_ties"]

#: Most rows a ranking fetches while widening to see the end of a run of ties at its cut.
TIE_CAP = 4096


def chunk_order(chunk_id: str) -> tuple[str, int, int, str]:
    """The tie-break key of a chunk id ``DOC:INDEX``: document id, then chunk index as a number
    (``doc:2`` before ``doc:10``), then the raw id for anything else."""
    doc, sep, index = chunk_id.rpartition(":")
    if sep and index.isdigit():
        return (doc, 0, int(index), "")
    return (chunk_id, 1, 0, chunk_id)


def more_ties(scores: list[float], n: int, fetched: int, asked: int, worst: float) -> bool:
    """Whether a ranking that asked for ``asked`` rows, got ``fetched`` and keeps ``n`` must ask
    for more to cut deterministically: it got all it asked for and the worst row it got ties the
    ``n``-th best kept one (so rows of that score may lie beyond), or it still has fewer than
    ``n``.

    Args:
        scores: The kept rows' scores, higher is better, sorted best first.
        n: Rows wanted.
        fetched: Rows the source returned (before any filtering).
        asked: Rows asked for.
        worst: The worst score the source returned.
    """
    if fetched < asked or asked >= TIE_CAP:
        return False  # the source has no more (or the run of ties is too long to follow)
    if len(scores) < n:
        return True
    return worst >= scores[n - 1]
