"""Fitting the long context into the window (``fit_context``)."""

from __future__ import annotations

from typing import Any

import pytest

import selfroute as sr
from selfroute._fitting import DOCUMENT_SEPARATOR, GAP_MARKER
from tests.unit.selfroute._scripted import WordCounter

WORDS = WordCounter()


def _doc(n_chunks: int, words: int = 10, tag: str = "c") -> str:
    """A document whose k-th ``words``-word chunk is made of the word ``{tag}{k}``."""
    return " ".join(" ".join([f"{tag}{k}"] * words) for k in range(n_chunks))


def fit(docs: Any, available: int | None, strategy: str = "fill", **kw: Any) -> sr.FittedContext:
    kw.setdefault("counter", WORDS)
    kw.setdefault("question", "What about c7?")
    return sr.fit_context(docs, available_tokens=available, strategy=strategy, **kw)


def test_everything_fits() -> None:
    docs = [" first doc ", sr.ContextDocument("second doc", doc_id="b")]
    fitted = fit(docs, 100)
    assert fitted.text == "first doc\n\nsecond doc"
    assert (fitted.strategy, fitted.truncated, fitted.documents) == ("none", False, 2)
    assert fitted.tokens == fitted.original_tokens == 4
    assert fitted.counter == "words"
    assert fit(docs, None).text == fitted.text  # no window: never fitted


def test_error_strategy_raises_with_the_sizes() -> None:
    with pytest.raises(sr.ContextOverflowError, match="needs 100 tokens but only 40") as info:
        fit(_doc(10), 40, "error", window_tokens=1000)
    err = info.value
    assert (err.document_tokens, err.available_tokens, err.window_tokens) == (100, 40, 1000)
    assert err.context == {"document_tokens": 100, "available_tokens": 40, "window_tokens": 1000}
    assert "1000-token window" in str(err)


def test_no_room_at_all_is_an_overflow_for_every_strategy() -> None:
    for strategy in ("fill", "truncate_middle", "error"):
        with pytest.raises(sr.ContextOverflowError, match="no room"):
            fit(_doc(10), 0, strategy)


def test_truncate_middle_keeps_head_and_tail() -> None:
    doc = _doc(10)
    fitted = fit(doc, 41, "truncate_middle")
    assert fitted.truncated and fitted.strategy == "truncate_middle"
    assert fitted.tokens <= 41 and fitted.original_tokens == 100
    head, tail = fitted.text.split(GAP_MARKER)
    assert doc.startswith(head) and doc.endswith(tail)
    assert head.split()[0] == "c0" and tail.split()[-1] == "c9"
    assert "c5" not in fitted.text  # the middle went


def test_fill_keeps_retrieved_chunks_first_then_lexical_matches_in_document_order() -> None:
    doc = _doc(10)
    retrieved = ["c3 " * 10]
    fitted = fit(doc, 33, retrieved=retrieved, chunk_words=10)
    # Room for three 10-word chunks plus markers: the retrieved chunk c3, then the chunk that
    # matches the question (c7), then the best of the rest -- always shown in document order.
    kept = [w for w in fitted.text.split() if w != "[...]"]
    tags = list(dict.fromkeys(kept))
    assert "c3" in tags and "c7" in tags
    assert tags == sorted(tags, key=lambda t: int(t[1:]))
    assert fitted.tokens <= 33
    assert (fitted.kept_chunks, fitted.total_chunks) == (3, 10)
    assert fitted.strategy == "fill" and fitted.truncated
    # Gaps are marked; every kept chunk is a verbatim slice of the document.
    for part in fitted.text.split("[...]"):
        assert part.strip() in doc


def test_fill_marks_a_leading_gap_and_keeps_contiguous_chunks_together() -> None:
    doc = _doc(6)
    fitted = fit(doc, 25, retrieved=["c4 " * 10, "c5 " * 10], chunk_words=10)
    assert fitted.text.startswith("[...]")
    assert fitted.text.count("[...]") == 1  # c4 and c5 are contiguous: no marker between them
    assert fitted.text.split()[1] == "c4" and fitted.text.split()[-1] == "c5"


def test_fill_over_several_documents_keeps_document_order() -> None:
    first = sr.ContextDocument(_doc(4, tag="a"), doc_id="first")
    second = sr.ContextDocument(_doc(4, tag="b"), doc_id="second")
    fitted = fit([first, second], 35, retrieved=["b2 " * 10, "a1 " * 10], chunk_words=10)
    words = [w for w in fitted.text.split() if w != "[...]"]
    assert words.index("a1") < words.index("b2")
    assert fitted.documents == 2 and fitted.total_chunks == 8


def test_fill_when_not_even_one_chunk_fits() -> None:
    with pytest.raises(sr.ContextOverflowError, match="not even one 10-word chunk"):
        fit(_doc(5), 5, chunk_words=10)


def test_with_the_default_tokenizer() -> None:
    counter = sr.default_token_counter()
    doc = "The keeper climbed the ninety-two steps every night. " * 200
    for strategy in ("fill", "truncate_middle"):
        fitted = sr.fit_context(
            [doc], question="How many steps?", available_tokens=500, strategy=strategy
        )
        assert fitted.tokens <= 500 < fitted.original_tokens
        assert fitted.tokens == counter.count(fitted.text)
        assert fitted.counter == counter.name


@pytest.mark.parametrize(
    ("docs", "error", "message"),
    [
        ([], sr.InvalidInputError, "empty"),
        (["", "  "], sr.InvalidInputError, "empty"),
        ([b"bytes"], sr.InvalidInputError, "document 0"),
        ([sr.ContextDocument(None)], sr.InvalidInputError, "text must be a string"),  # type: ignore[arg-type]
    ],
)
def test_bad_documents(docs: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fit(docs, 10)


def test_unknown_strategy() -> None:
    with pytest.raises(sr.ConfigurationError, match="unknown overflow strategy 'squeeze'"):
        fit(["text"], 10, "squeeze")


def test_to_dict() -> None:
    d = fit(_doc(10), 33, chunk_words=10).to_dict()
    assert set(d) == {
        "tokens",
        "original_tokens",
        "strategy",
        "truncated",
        "documents",
        "kept_chunks",
        "total_chunks",
        "counter",
    }
    assert "text" not in d  # the context itself is not copied into results


def test_a_padded_document_is_counted_by_identity_after_its_first_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfroute import _tokens
    from selfroute._fitting import size_context

    counter = _tokens.default_token_counter()
    document = "\n" + "The keeper lit the lamp at dusk. " * 2000 + "\n"  # stripped: a new string
    first = size_context([document], available_tokens=None, counter=counter)
    digests: list[int] = []
    real = _tokens.hashlib.blake2b

    def spy(data: bytes, **kw: object) -> object:
        digests.append(len(data))
        return real(data, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_tokens.hashlib, "blake2b", spy)
    again = size_context([document], available_tokens=None, counter=counter)
    assert again.tokens == first.tokens and again.text is first.text
    assert digests == []  # not re-read character by character
    equal = "".join(["\n", document.strip(), "\n"])  # equal content, another object
    assert equal is not document
    other = size_context([equal], available_tokens=None, counter=counter)
    assert other.tokens == first.tokens and other.text == first.text
    assert other.text is not first.text and digests  # recognised by content, not identity
    two = size_context([document, equal], available_tokens=None, counter=counter)
    assert two.text == first.text + DOCUMENT_SEPARATOR + first.text
