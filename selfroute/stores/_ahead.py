"""Embedding ahead: the next batches' embedding requests in flight while the current one is written.

A store helper that indexes through a hosted embedding (``langchain_selfroute.index_documents``,
``llamaindex_selfroute.build_index``) alternates two waits: the provider's latency for a batch's
vectors, then the vector store's write of that batch. :func:`embed_ahead` submits the texts of up
to ``ahead`` later batches before it hands the current batch over, so the provider works on them
while the caller writes. The batches come out in their input order, each with its vectors in its
texts' order; at most ``ahead + 1`` batches are submitted and not yet handed over. A failed batch
raises its error with a note naming the step and the batch; leaving the loop early, by an error
or a ``break``, cancels the requests of the batches not handed over. Before a batch is handed
over, the later batches' requests are waited onto the wire (``wait_sent``), because Chroma's write
keeps the GIL and a request still in our threads would not leave during it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["DEFAULT_AHEAD", "FIRST_BATCH", "Pending", "embed_ahead", "ramp_batches"]

#: Batches whose requests are sent before the current batch is handed over.
DEFAULT_AHEAD = 2

#: Longest wait for the later batches' requests to be sent before a batch is handed over.
_SENT_TIMEOUT_S = 0.5
#: Size of the first batch of :func:`ramp_batches` (its vectors are waited for, not hidden).
FIRST_BATCH = 32

T = TypeVar("T")
S = TypeVar("S")


class Pending(Protocol):
    """What ``submit`` returns (:class:`~selfroute.stores._hosted.PendingVectors`)."""

    def result(self) -> list[Any]: ...

    def cancel(self) -> None: ...


def ramp_batches(items: Sequence[S], size: int, *, first: int = FIRST_BATCH) -> list[Sequence[S]]:
    """``items`` in consecutive batches of ``first``, twice that, ... up to ``size`` each: the
    first batch's embedding is the only one waited for in full, so it is kept small."""
    out: list[Sequence[S]] = []
    step = max(1, min(first, size))
    start = 0
    while start < len(items):
        out.append(items[start : start + step])
        start += step
        step = min(size, step * 2)
    return out


def embed_ahead(
    submit: Callable[[list[str]], Pending],
    batches: Iterable[tuple[T, Sequence[str]]],
    *,
    ahead: int = DEFAULT_AHEAD,
    step: str = "indexing",
) -> Iterator[tuple[T, list[Any]]]:
    """``(item, vectors)`` for each ``(item, texts)`` of ``batches``, in order, with the texts of
    up to ``ahead`` later batches already submitted.

    Args:
        submit: Sends texts out and returns their pending vectors at once
            (``HostedEmbedder.submit``).
        batches: ``(item, texts)`` pairs; ``item`` is handed back with the vectors.
        ahead: Later batches kept in flight (>= 0; 0 embeds each batch when it is reached).
        step: What the error note calls the work (``indexing``).

    Raises:
        Whatever a batch's ``result()`` raises, with a note ``"{step}: embedding batch N
        (K texts) failed"``; the later batches' requests are cancelled first.
    """
    if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0:
        from selfroute._errors import ConfigurationError

        raise ConfigurationError(f"ahead must be an integer >= 0, got {ahead!r}")
    source = iter(batches)
    pending: deque[tuple[int, T, int, Pending]] = deque()
    number = 0

    def fill(limit: int) -> None:
        nonlocal number
        while len(pending) < limit:
            try:
                item, texts = next(source)
            except StopIteration:
                return
            pending.append((number, item, len(texts), submit(list(texts))))
            number += 1

    try:
        while True:
            fill(ahead + 1)
            if not pending:
                return
            index, item, count, handle = pending.popleft()
            try:
                vectors = handle.result()
            except BaseException as exc:
                _cancel(pending)
                note = f"{step}: embedding batch {index + 1} ({count} texts) failed"
                add_note = getattr(exc, "add_note", None)  # Python 3.11+
                if add_note is not None:
                    add_note(note)
                raise
            fill(ahead)  # the next batches go out before this one is written
            for _, _, _, later in pending:
                # on the wire before the caller's write: Chroma's holds the GIL, and a request
                # still in our threads would wait for it instead of the provider working on it
                wait = getattr(later, "wait_sent", None)
                if wait is not None:
                    wait(_SENT_TIMEOUT_S)
            yield item, vectors
    finally:  # an error in the caller's write, or the caller stopped early
        _cancel(pending)


def _cancel(pending: deque[tuple[int, Any, int, Pending]]) -> None:
    while pending:
        pending.popleft()[3].cancel()
