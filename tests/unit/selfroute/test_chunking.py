"""Word chunking with offsets (the paper's 300-word chunks)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import selfroute as sr

TEXT = "  Alpha beta\tgamma.\n\nDelta epsilon zeta eta theta iota kappa.  \n"


def test_chunks_partition_the_document_with_exact_offsets() -> None:
    chunks = sr.chunk_text(TEXT, doc_id="d", chunk_words=3)
    assert "".join(c.text for c in chunks) == TEXT  # white space included, nothing lost
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert chunks[0].start == 0 and chunks[-1].end == len(TEXT)
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.end == nxt.start
    for c in chunks:
        assert TEXT[c.start : c.end] == c.text
        assert c.word_count == len(c.text.split())
    assert [c.word_count for c in chunks] == [3, 3, 3, 1]
    # Each chunk after the first starts at a word.
    assert all(not c.text[0].isspace() for c in chunks[1:])


def test_default_is_300_words() -> None:
    text = " ".join(f"w{i}" for i in range(700))
    chunks = sr.chunk_text(text)
    assert sr.DEFAULT_CHUNK_WORDS == 300
    assert [c.word_count for c in chunks] == [300, 300, 100]


def test_overlap_repeats_words_and_rebuilds() -> None:
    text = " ".join(f"w{i}" for i in range(10))
    chunks = sr.chunk_text(text, doc_id="d", chunk_words=4, overlap_words=2)
    assert [c.text.split() for c in chunks] == [
        ["w0", "w1", "w2", "w3"],
        ["w2", "w3", "w4", "w5"],
        ["w4", "w5", "w6", "w7"],
        ["w6", "w7", "w8", "w9"],
    ]
    assert sr.rebuild_document(chunks) == text
    assert sr.rebuild_document(list(reversed(chunks))) == text  # order of the list does not matter


def test_single_chunk_document() -> None:
    chunks = sr.chunk_text("one two", doc_id="d")
    assert len(chunks) == 1 and chunks[0].text == "one two" and chunks[0].chunk_id == "d:0"


def test_ids_and_metadata() -> None:
    a = sr.chunk_text(TEXT, chunk_words=3)
    b = sr.chunk_text(TEXT, chunk_words=3)
    assert a[0].doc_id == b[0].doc_id == sr.document_id(TEXT)
    assert len(sr.document_id(TEXT)) == 16 and sr.document_id(TEXT) != sr.document_id(TEXT + " ")
    assert [c.chunk_id for c in a] == [f"{a[0].doc_id}:{i}" for i in range(len(a))]
    meta = {"title": "Grey Point"}
    chunks = sr.chunk_text(TEXT, doc_id="g", chunk_words=3, metadata=meta)
    meta["title"] = "changed"
    assert all(c.metadata == {"title": "Grey Point"} for c in chunks)  # copied, not aliased


def test_document_id_handles_lone_surrogates() -> None:
    assert len(sr.document_id("bad \ud800 text")) == 16


def test_unicode_and_exotic_white_space() -> None:
    text = "Ça\u00a0va\u2003très bien,\u3000merci 日本語 テキスト"
    chunks = sr.chunk_text(text, doc_id="u", chunk_words=2)
    assert "".join(c.text for c in chunks) == text
    assert sum(c.word_count for c in chunks) == len(text.split())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("  \n\t ", "empty"),
        (b"bytes", "decode"),
        (None, "string"),
        (42, "string"),
    ],
)
def test_bad_documents(text: Any, message: str) -> None:
    with pytest.raises(sr.InvalidInputError, match=message):
        sr.chunk_text(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"chunk_words": 0}, "chunk_words"),
        ({"chunk_words": -3}, "chunk_words"),
        ({"chunk_words": 2.5}, "chunk_words"),
        ({"chunk_words": 5, "overlap_words": 5}, "overlap_words"),
        ({"chunk_words": 5, "overlap_words": -1}, "overlap_words"),
    ],
)
def test_bad_settings(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(sr.ConfigurationError, match=message):
        sr.chunk_text("a b c d e f", **kwargs)


def test_rebuild_rejects_mixed_documents_and_gaps() -> None:
    a = sr.chunk_text("one two three four", doc_id="a", chunk_words=1)
    b = sr.chunk_text("five six", doc_id="b", chunk_words=1)
    with pytest.raises(sr.InvalidInputError, match="2 documents"):
        sr.rebuild_document([a[0], b[0]])
    with pytest.raises(sr.InvalidInputError, match="gap"):
        sr.rebuild_document([a[0], a[2]])
    assert sr.rebuild_document([]) == ""
