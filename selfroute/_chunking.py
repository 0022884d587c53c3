"""Word-based chunking (the paper's 300-word chunks) with offsets that rebuild the document."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfroute._errors import ConfigurationError, InvalidInputError

__all__ = ["DEFAULT_CHUNK_WORDS", "Chunk", "chunk_text", "document_id", "rebuild_document"]

#: The paper splits documents into 300-word chunks.
DEFAULT_CHUNK_WORDS = 300

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document.

    ``document[chunk.start:chunk.end] == chunk.text``. With ``overlap=0`` the chunks of a document
    partition it exactly: concatenating their texts in ``index`` order gives the document back,
    white space included.

    Attributes:
        text: The chunk's text (an exact slice of the document).
        doc_id: Identifier of the document it came from.
        index: Position of the chunk in the document (0-based).
        start: Character offset of the first character in the document.
        end: Character offset one past the last character.
        word_count: Number of words in the chunk.
        metadata: Metadata copied from the document.
    """

    text: str
    doc_id: str
    index: int
    start: int
    end: int
    word_count: int
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def chunk_id(self) -> str:
        """A stable id: ``{doc_id}:{index}``."""
        return f"{self.doc_id}:{self.index}"


def document_id(text: str) -> str:
    """A content hash usable as a stable document id (first 16 hex digits of SHA-256)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _check_text(text: object, what: str = "document") -> str:
    if isinstance(text, bytes):
        raise InvalidInputError(
            f"{what} must be str, got bytes; decode it first (e.g. .decode('utf-8'))"
        )
    if not isinstance(text, str):
        raise InvalidInputError(f"{what} must be a string, got {type(text).__name__}")
    if not text.strip():
        raise InvalidInputError(f"{what} is empty or whitespace only")
    return text


def chunk_text(
    text: str,
    *,
    doc_id: str | None = None,
    chunk_words: int = DEFAULT_CHUNK_WORDS,
    overlap_words: int = 0,
    metadata: dict[str, Any] | None = None,
) -> list[Chunk]:
    """Split ``text`` into chunks of ``chunk_words`` words.

    Words are maximal runs of non-white-space characters. Each chunk spans from the start of its
    first word to the start of the next chunk (the first chunk starts at 0 and the last ends at the
    end of the text), so no character is lost and order is kept.

    Args:
        text: The document.
        doc_id: Its id; defaults to a content hash (:func:`document_id`).
        chunk_words: Words per chunk (300 in the paper).
        overlap_words: Words shared by consecutive chunks (0 in the paper).
        metadata: Copied onto every chunk.

    Returns:
        The chunks in document order.

    Raises:
        InvalidInputError: ``text`` is not a non-empty string.
        ConfigurationError: ``chunk_words`` < 1 or ``overlap_words`` not in ``[0, chunk_words)``.
    """
    _check_text(text)
    if not isinstance(chunk_words, int) or chunk_words < 1:
        raise ConfigurationError(f"chunk_words must be a positive integer, got {chunk_words!r}")
    if not isinstance(overlap_words, int) or not 0 <= overlap_words < chunk_words:
        raise ConfigurationError(
            f"overlap_words must be an integer in [0, chunk_words={chunk_words}), got {overlap_words!r}"
        )
    did = doc_id if doc_id is not None else document_id(text)
    meta = dict(metadata or {})
    words = len(text.split())  # the same words as _WORD's (str.split and \s agree)
    if words <= chunk_words:  # one chunk: no word offsets needed (most small files)
        return [
            Chunk(
                text=text,
                doc_id=did,
                index=0,
                start=0,
                end=len(text),
                word_count=words,
                metadata=meta,
            )
        ]
    starts = [m.start() for m in _WORD.finditer(text)]
    n = len(starts)
    step = chunk_words - overlap_words
    chunks: list[Chunk] = []
    first = 0
    index = 0
    while first < n:
        last = min(first + chunk_words, n)  # exclusive word index
        start = 0 if first == 0 else starts[first]
        end = len(text) if last >= n else starts[last]
        chunks.append(
            Chunk(
                text=text[start:end],
                doc_id=did,
                index=index,
                start=start,
                end=end,
                word_count=last - first,
                metadata=meta,
            )
        )
        index += 1
        if last >= n:
            break
        first += step
    return chunks


def iter_chunks(
    documents: Iterable[tuple[str, str]], **kwargs: Any
) -> Iterator[Chunk]:  # pragma: no cover - thin helper
    """Chunk ``(doc_id, text)`` pairs lazily."""
    for did, text in documents:
        yield from chunk_text(text, doc_id=did, **kwargs)


def rebuild_document(chunks: Sequence[Chunk]) -> str:
    """Rebuild a document from its chunks using their offsets (overlaps are merged).

    Raises:
        InvalidInputError: chunks from several documents, or a gap between chunks.
    """
    if not chunks:
        return ""
    ids = {c.doc_id for c in chunks}
    if len(ids) > 1:
        raise InvalidInputError(f"chunks come from {len(ids)} documents; rebuild one at a time")
    out: list[str] = []
    pos = 0
    for c in sorted(chunks, key=lambda c: (c.start, c.index)):
        if c.start > pos:
            raise InvalidInputError(
                f"gap in chunks of document {c.doc_id!r}: characters {pos}..{c.start} missing"
            )
        if c.end > pos:
            out.append(c.text[pos - c.start :])
            pos = c.end
    return "".join(out)
