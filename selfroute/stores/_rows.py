"""How a chunk and a document record are laid out in Chroma rows, written and read in one place.

Every reader of the collections (retrieval, the BM25 build, ``migrate``, ``stats``, a read-only
query reader) decodes rows with :func:`chunk_row` and :func:`unpack_record`, and every writer
(``index``, ``migrate``, the benchmarks' bulk builder) encodes them with :func:`pack_chunk` and
:func:`pack_record`, so a layout change touches only this module.

Chunk rows (``NAME``), store schema 3: metadata ``doc_id`` and ``source`` (the only fields a
``where`` filter may use) and one JSON value :data:`CHUNK_KEY` holding the chunk's text and its
other fields (``title``, ``chunk_index``, ``start``, ``end``, ``words``); Chroma's own document
field is left empty. The reason is write cost: Chroma's embedded and ``chroma run`` backends
full-text index (SQLite FTS5, trigrams) every row's document on write, whatever the collection's
schema asks, and that index was about half the write time of a one-chunk file (Chroma 1.5.9,
5,000 rows of 40 words: 3.1 s with the text as the document, 1.5 s without); each metadata field
is a row of Chroma's metadata table, with its own index entries, and costs about 5% more.
selfroute searches text with its own BM25 index and never with ``where_document``.

Chunk rows written before schema 3 keep the text as the document and one metadata field per
chunk field; :func:`chunk_row` reads both layouts, so older stores open as they are and a store
may hold rows of both (new documents are written in the new layout).

Document records (``NAME__documents``), schema 2: one JSON metadata value :data:`RECORD_KEY`
(:func:`pack_record`); the full text as the row's document when it has one of its own (not for a
one-chunk document, :data:`TEXT_IN_CHUNK`: its record is written without a document, which halves
the record's write cost -- an empty document is still full-text indexed).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

try:  # a dependency of chromadb; the standard library's parser otherwise
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - chromadb requires orjson
    _loads: Callable[[str], Any] = json.loads  # type: ignore[no-redef]

__all__ = [
    "CHUNK_KEY",
    "FILTER_FIELDS",
    "RECORD_KEY",
    "TEXT_IN_CHUNK",
    "chunk_row",
    "pack_chunk",
    "pack_record",
    "unpack_record",
]

#: The one metadata field of a document record (schema 2): every record field, as JSON.
RECORD_KEY = "selfroute:record"
#: Record metadata: the document is one chunk, whose row holds the text (the document record
#: has no text of its own).
TEXT_IN_CHUNK = "text_in_chunk"
#: A chunk row's text (as ``text``) and fields other than :data:`FILTER_FIELDS`, as JSON
#: (schema 3).
CHUNK_KEY = "selfroute:chunk"
#: Chunk fields kept as metadata fields of their own (``where`` filters use them).
FILTER_FIELDS = ("doc_id", "source")


def pack_chunk(text: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The Chroma metadata of a chunk row: its text and fields (``doc_id``, ``source``, ...).

    The row is written with this metadata and no document (:func:`chunk_row` reads it back).
    """
    out: dict[str, Any] = {k: fields[k] for k in FILTER_FIELDS if k in fields}
    rest = {k: v for k, v in fields.items() if k not in FILTER_FIELDS and k != "text"}
    rest["text"] = text
    out[CHUNK_KEY] = json.dumps(rest, ensure_ascii=False, separators=(",", ":"))
    return out


def chunk_row(text: str | None, meta: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """A chunk row's text and fields, from its Chroma document and metadata, in either layout.

    Args:
        text: The row's document (``None`` for a schema-3 row, or when not included).
        meta: The row's metadata.

    Returns:
        ``(text, fields)``: ``fields`` has ``doc_id``, ``source``, ``title``, ``chunk_index``,
        ``start``, ``end`` and ``words`` as the indexer wrote them, whichever the layout.
    """
    fields = dict(meta or {})
    packed = fields.pop(CHUNK_KEY, None)
    if packed is not None:
        try:  # per retrieved row on every question: the faster parser
            rest = _loads(str(packed))
        except ValueError:
            rest = None
        if isinstance(rest, dict):
            stored = rest.pop("text", None)
            fields.update(rest)
            if isinstance(stored, str):
                return stored, fields
    return text or "", fields


def pack_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The Chroma metadata of a document record: its fields as one JSON value."""
    return {RECORD_KEY: json.dumps(record, separators=(",", ":"), sort_keys=True)}


def unpack_record(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """A document record's fields from its Chroma metadata, in either layout (one JSON value
    since schema 2, one metadata field per record field before). A record of the old layout
    that was updated in the new one keeps its old fields beside the JSON value: the JSON wins."""
    out = dict(meta or {})
    packed = out.pop(RECORD_KEY, None)
    if packed is None:
        return out
    try:
        fields = json.loads(str(packed))
    except ValueError:
        fields = None
    if isinstance(fields, dict):
        out.update(fields)
    return out
