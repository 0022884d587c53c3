"""Fitting a long context into the long-context model's window.

Strategies when the documents do not fit the window (minus the prompt and the answer budget):

* ``error`` -- raise :class:`~selfroute.ContextOverflowError` with the sizes.
* ``truncate_middle`` -- keep the head and the tail, dropping the middle (what LongBench does).
* ``fill`` (default) -- keep the most relevant 300-word chunks that fit, in document order: first
  the chunks the retriever returned (in rank order), then the others by lexical overlap with the
  question. Gaps are marked with ``[...]``.
"""

from __future__ import annotations

import math
import threading
from collections import Counter, OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from selfroute._chunking import DEFAULT_CHUNK_WORDS, Chunk, chunk_text
from selfroute._errors import ConfigurationError, ContextOverflowError, InvalidInputError
from selfroute._text import terms
from selfroute._tokens import TokenCounter, default_token_counter

__all__ = ["ContextDocument", "FittedContext", "OverflowStrategy", "fit_context", "size_context"]


class OverflowStrategy(str, Enum):
    """What to do when the long context does not fit the window."""

    ERROR = "error"
    TRUNCATE_MIDDLE = "truncate_middle"
    FILL = "fill"


@dataclass(frozen=True)
class ContextDocument:
    """A document offered as long context.

    Attributes:
        text: The full text.
        doc_id: Its id (used to match retrieved chunks to their parent).
        metadata: Anything the adapter wants to keep (source, title).
    """

    text: str
    doc_id: str | None = None
    metadata: dict[str, object] | None = None


@dataclass(frozen=True)
class FittedContext:
    """The long context as it will be sent.

    Attributes:
        text: The context text.
        tokens: Its size in tokens (counted by ``counter``; an estimate before the call).
        original_tokens: Size of the full documents before fitting.
        strategy: The strategy applied (``none`` when everything fit).
        truncated: Whether anything was left out.
        documents: How many documents were offered.
        kept_chunks: For ``fill``: how many chunks were kept (of ``total_chunks``).
        total_chunks: For ``fill``: how many chunks the documents had.
        counter: Name of the token counter used.
    """

    text: str
    tokens: int
    original_tokens: int
    strategy: str
    truncated: bool
    documents: int
    kept_chunks: int | None = None
    total_chunks: int | None = None
    counter: str = ""

    def to_dict(self) -> dict[str, object]:
        """Plain-dict form."""
        return {
            "tokens": self.tokens,
            "original_tokens": self.original_tokens,
            "strategy": self.strategy,
            "truncated": self.truncated,
            "documents": self.documents,
            "kept_chunks": self.kept_chunks,
            "total_chunks": self.total_chunks,
            "counter": self.counter,
        }


DOCUMENT_SEPARATOR = "\n\n"
GAP_MARKER = "\n[...]\n"


def _as_documents(documents: Sequence[ContextDocument | str]) -> list[ContextDocument]:
    if isinstance(documents, (str, ContextDocument)):
        documents = [documents]  # one document, not a sequence of characters
    docs: list[ContextDocument] = []
    for i, d in enumerate(documents):
        doc = ContextDocument(text=d) if isinstance(d, str) else d
        if not isinstance(doc, ContextDocument):
            raise InvalidInputError(
                f"long-context document {i} must be a str or ContextDocument, got {type(d).__name__}"
            )
        if not isinstance(doc.text, str):
            raise InvalidInputError(f"long-context document {i} text must be a string")
        if doc.text.strip():
            docs.append(doc)
    if not docs:
        raise InvalidInputError("the long context is empty: no document with any text was given")
    return docs


def _rank_chunks(chunks: list[Chunk], question: str, retrieved: Sequence[str]) -> list[int]:
    """Indices of ``chunks`` from most to least relevant."""
    retrieved_norm = [" ".join(r.split()) for r in retrieved if r and r.strip()]
    first_hit: dict[int, int] = {}
    for i, c in enumerate(chunks):
        norm = " ".join(c.text.split())
        for rank, r in enumerate(retrieved_norm):
            if r and (r in norm or norm in r or (len(r) > 40 and r[:40] in norm)):
                first_hit[i] = rank
                break
    q = terms(question)
    df: Counter[str] = Counter()
    tfs: list[Counter[str]] = []
    for c in chunks:
        tf = Counter(terms(c.text))
        tfs.append(tf)
        df.update(set(tf))
    n = len(chunks)

    def lexical(i: int) -> float:
        tf = tfs[i]
        length = sum(tf.values()) or 1
        score = 0.0
        for t in q:
            if t in tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * length / 300))
        return score

    return sorted(
        range(n),
        key=lambda i: (0, first_hit[i], 0.0, i) if i in first_hit else (1, 0, -lexical(i), i),
    )


def fit_context(
    documents: Sequence[ContextDocument | str],
    *,
    question: str,
    available_tokens: int | None,
    strategy: OverflowStrategy | str = OverflowStrategy.FILL,
    retrieved: Sequence[str] = (),
    counter: TokenCounter | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    window_tokens: int | None = None,
) -> FittedContext:
    """Fit ``documents`` (ordered by relevance) into ``available_tokens``.

    Args:
        documents: The long context, most relevant document first.
        question: The question (used by ``fill`` to rank chunks).
        available_tokens: Tokens available for the context; ``None`` means unlimited.
        strategy: ``fill``, ``truncate_middle`` or ``error``.
        retrieved: Texts of the retrieved chunks, in rank order (``fill`` keeps these first).
        counter: Token counter; defaults to :func:`~selfroute.default_token_counter`.
        chunk_words: Chunk size used by ``fill``.
        window_tokens: The model window, for error messages.

    Returns:
        The fitted context.

    Raises:
        InvalidInputError: No document has any text.
        ContextOverflowError: The documents do not fit and ``strategy`` is ``error``, or not even
            one chunk fits.
        ConfigurationError: Unknown strategy.
    """
    try:
        strat = OverflowStrategy(strategy)
    except ValueError:
        raise ConfigurationError(
            f"unknown overflow strategy {strategy!r}; use one of "
            f"{[s.value for s in OverflowStrategy]}"
        ) from None
    docs = _as_documents(documents)
    counter = counter or default_token_counter()
    full = _joined(docs)
    total = counter.count(full)
    if available_tokens is None or total <= available_tokens:
        return FittedContext(
            text=full,
            tokens=total,
            original_tokens=total,
            strategy="none",
            truncated=False,
            documents=len(docs),
            counter=counter.name,
        )
    window = window_tokens if window_tokens is not None else available_tokens
    if available_tokens <= 0:
        raise _overflow(
            f"no room for the long context: the prompt and answer budget already use the "
            f"{window}-token window",
            total,
            available_tokens,
            window,
        )
    if strat is OverflowStrategy.ERROR:
        raise _overflow(
            f"the long context needs {total} tokens but only {available_tokens} of the "
            f"{window}-token window are available; choose overflow='fill' or 'truncate_middle', "
            "or a model with a larger window",
            total,
            available_tokens,
            window,
        )
    if strat is OverflowStrategy.TRUNCATE_MIDDLE:
        text, tokens = _truncate_middle(full, total, available_tokens, window, counter)
        return FittedContext(
            text=text,
            tokens=tokens,
            original_tokens=total,
            strategy=strat.value,
            truncated=True,
            documents=len(docs),
            counter=counter.name,
        )
    chunks = [
        chunk
        for d_i, d in enumerate(docs)
        for chunk in chunk_text(d.text, doc_id=d.doc_id or f"doc{d_i}", chunk_words=chunk_words)
    ]
    kept = _fill(chunks, question, retrieved, counter, available_tokens)
    if not kept:
        raise _overflow(
            f"not even one {chunk_words}-word chunk fits the {available_tokens} tokens available "
            "for the long context",
            total,
            available_tokens,
            window,
        )
    text = _join_kept(chunks, kept)
    return FittedContext(
        text=text,
        tokens=counter.count(text),
        original_tokens=total,
        strategy=strat.value,
        truncated=True,
        documents=len(docs),
        kept_chunks=len(kept),
        total_chunks=len(chunks),
        counter=counter.name,
    )


def _overflow(message: str, total: int, available: int, window: int) -> ContextOverflowError:
    return ContextOverflowError(
        message, document_tokens=total, available_tokens=available, window_tokens=window
    )


def _truncate_middle(
    full: str, total: int, available_tokens: int, window: int, counter: TokenCounter
) -> tuple[str, int]:
    """``truncate_middle``: the head and the tail of ``full`` around a gap marker, and its
    token count."""
    half = available_tokens // 2
    text = counter.head(full, half) + GAP_MARKER + counter.tail(full, available_tokens - half)
    tokens = counter.count(text)
    # The marker and re-tokenisation at the seam can add a few tokens: shave them off.
    while tokens > available_tokens and half > 0:
        half -= max(1, (tokens - available_tokens + 1) // 2)
        text = counter.head(full, half) + GAP_MARKER + counter.tail(full, max(0, half))
        tokens = counter.count(text)
    if tokens > available_tokens:  # not even the gap marker fits: never send over budget
        raise _overflow(
            f"only {available_tokens} tokens are available for the long context, too few "
            "to truncate it",
            total,
            available_tokens,
            window,
        )
    return text, tokens


def _fill(
    chunks: list[Chunk],
    question: str,
    retrieved: Sequence[str],
    counter: TokenCounter,
    available_tokens: int,
) -> set[int]:
    """``fill``: the indices of the chunks kept, most relevant first while they fit (each with
    room for a gap marker)."""
    sizes = [counter.count(c.text) for c in chunks]
    marker_cost = counter.count(GAP_MARKER)
    kept: set[int] = set()
    used = 0
    for i in _rank_chunks(chunks, question, retrieved):
        cost = sizes[i] + marker_cost
        if used + cost <= available_tokens:
            kept.add(i)
            used += cost
    return kept


#: How many joined long contexts are remembered by the identity of their documents' texts.
_JOINED_KEEP = 8
#: The longest joined context remembered (as :data:`selfroute._tokens._REMEMBER_UP_TO`).
_JOINED_UP_TO = 4_000_000
_joined_memo: OrderedDict[tuple[int, ...], tuple[tuple[str, ...], str]] = OrderedDict()
_joined_lock = threading.Lock()


def _joined(docs: Sequence[ContextDocument]) -> str:
    """The documents' stripped texts joined by :data:`DOCUMENT_SEPARATOR`.

    The same text objects give back the same joined object (the last few are remembered by the
    identity of the texts, which are kept alive with it): a document with surrounding whitespace
    would otherwise be copied on every call, and the copy counted by a digest of all its
    characters rather than recognised by identity (see ``TiktokenCounter.remembered``).
    """
    texts = tuple(d.text for d in docs)
    key = tuple(map(id, texts))
    hit = _joined_memo.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], texts, strict=True)):
        with _joined_lock:
            if key in _joined_memo:
                _joined_memo.move_to_end(key)
        return hit[1]
    full = DOCUMENT_SEPARATOR.join(t.strip() for t in texts)
    if (len(texts) != 1 or full is not texts[0]) and len(full) <= _JOINED_UP_TO:
        with _joined_lock:
            _joined_memo[key] = (texts, full)
            _joined_memo.move_to_end(key)
            while len(_joined_memo) > _JOINED_KEEP:
                _joined_memo.popitem(last=False)
    return full


def _join_kept(chunks: list[Chunk], kept: set[int]) -> str:
    """The kept chunks in document order, a gap marker wherever something was left out."""
    doc_order = {did: i for i, did in enumerate(dict.fromkeys(c.doc_id for c in chunks))}
    ordered = sorted(kept, key=lambda i: (doc_order[chunks[i].doc_id], chunks[i].index))
    parts: list[str] = []
    prev: Chunk | None = None
    for i in ordered:
        c = chunks[i]
        if prev is not None:
            contiguous = prev.doc_id == c.doc_id and prev.index + 1 == c.index
            if not contiguous:
                parts.append(GAP_MARKER)
        elif c.index != 0:
            parts.append(GAP_MARKER.lstrip("\n"))
        parts.append(c.text)
        prev = c
    return "".join(parts).strip()


def size_context(
    documents: Sequence[ContextDocument | str],
    *,
    available_tokens: int | None,
    strategy: OverflowStrategy | str = OverflowStrategy.FILL,
    counter: TokenCounter | None = None,
) -> FittedContext:
    """The size of what :func:`fit_context` would send, counted without fitting.

    For pricing always-LC (the counterfactual): documents that fit are counted as a whole, once
    (the counter remembers long texts by content), exactly as :func:`fit_context` counts them.
    Documents that do not fit are not chunked, ranked or re-counted: ``fill`` and
    ``truncate_middle`` fill the window, so the size is ``available_tokens`` (an upper bound,
    within one chunk of what ``fill`` keeps; ``text`` is empty).

    Raises:
        InvalidInputError: No document has any text.
        ContextOverflowError: The documents do not fit and ``strategy`` is ``error``.
    """
    strat = OverflowStrategy(strategy)
    counter = counter or default_token_counter()
    docs = _as_documents(documents)
    full = _joined(docs)
    total = counter.count(full)
    if available_tokens is None or total <= available_tokens:
        return FittedContext(full, total, total, "none", False, len(docs), counter=counter.name)
    if strat is OverflowStrategy.ERROR or available_tokens <= 0:
        raise ContextOverflowError(
            f"the long context needs {total} tokens but only {available_tokens} are available",
            document_tokens=total,
            available_tokens=available_tokens,
            window_tokens=available_tokens,
        )
    return FittedContext(
        "", available_tokens, total, strat.value, True, len(docs), counter=counter.name
    )
