"""Property tests (hypothesis) of chunking, verdict parsing and fitting.

Example counts are bounded so the suite stays fast; set ``SELFROUTE_HYPOTHESIS_SCALE=20`` for a
longer soak (20x the examples).
"""

from __future__ import annotations

import itertools
import os

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import selfroute as sr
from selfroute._fitting import GAP_MARKER
from tests.unit.selfroute._scripted import WordCounter

SCALE = int(os.environ.get("SELFROUTE_HYPOTHESIS_SCALE", "1"))
FAST = settings(
    max_examples=120 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
SLOW = settings(
    max_examples=25 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Text with plenty of white space of every kind, so word boundaries are exercised.
texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(list(" \t\n\r\u00a0\u2003\u3000")),
        st.characters(blacklist_categories=["Cs"]),
    ),
    min_size=1,
    max_size=400,
)
words = st.text(alphabet="abcdefghij", min_size=1, max_size=6)


# -- chunking -----------------------------------------------------------------------------------
@FAST
@given(text=texts, size=st.integers(1, 12))
def test_chunks_without_overlap_concatenate_to_the_document(text: str, size: int) -> None:
    assume(text.strip())
    chunks = sr.chunk_text(text, doc_id="d", chunk_words=size)
    assert "".join(c.text for c in chunks) == text
    assert chunks[0].start == 0 and chunks[-1].end == len(text)
    for i, c in enumerate(chunks):
        assert c.index == i and text[c.start : c.end] == c.text
        assert 1 <= c.word_count <= size and c.word_count == len(c.text.split())
    for a, b in itertools.pairwise(chunks):
        assert a.end == b.start
    assert sum(c.word_count for c in chunks) == len(text.split())


@FAST
@given(text=texts, size=st.integers(1, 12), data=st.data())
def test_chunks_with_any_overlap_rebuild_the_document(
    text: str, size: int, data: st.DataObject
) -> None:
    assume(text.strip())
    overlap = data.draw(st.integers(0, size - 1))
    chunks = sr.chunk_text(text, doc_id="d", chunk_words=size, overlap_words=overlap)
    assert sr.rebuild_document(chunks) == text
    starts = [c.start for c in chunks]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)  # order kept
    for c in chunks:
        assert text[c.start : c.end] == c.text
    # Every word of the document is in some chunk, in order.
    assert [w for c in chunks for w in c.text.split()][: len(chunks[0].text.split())] == (
        text.split()[: len(chunks[0].text.split())]
    )


# -- verdict parsing ------------------------------------------------------------------------------
@FAST
@given(text=st.one_of(st.none(), st.text(max_size=300)), strict=st.booleans())
def test_parse_verdict_never_raises(text: str | None, strict: bool) -> None:
    v = sr.parse_verdict(text, strict=strict)
    assert isinstance(v.kind, sr.VerdictKind) and isinstance(v.answer, str)
    assert v.declined is not v.answered
    assert isinstance(sr.flow.could_start_decline(text or "", strict=strict), bool)


@FAST
@given(text=st.text(alphabet=" \t\n\r\u00a0\u2003\u3000\u200b\ufeff", max_size=50))
def test_empty_and_whitespace_are_always_declined(text: str) -> None:
    for strict in (False, True):
        v = sr.parse_verdict(text, strict=strict)
        assert v.declined and v.kind in (sr.VerdictKind.EMPTY, sr.VerdictKind.GARBLED)


refusal_like = st.lists(
    st.sampled_from(
        [
            "The text does not mention it.",
            "Unanswerable.",
            "unanswerable",
            "I'm sorry, I cannot answer.",
            "Paris.",
            "However, it seems he left.",
            "Based on the passage,",
            "There is no information.",
            "Answer:",
            "<think>maybe</think>",
            "\n",
            "not mentioned",
            "Please provide more context.",
            "As an AI, I cannot read books.",
        ]
    ),
    max_size=6,
).map(" ".join)


@FAST
@given(text=st.one_of(st.text(max_size=200), refusal_like))
def test_strict_declines_a_subset_of_default(text: str) -> None:
    if sr.parse_verdict(text, strict=True).declined:
        assert sr.parse_verdict(text).declined


# -- fitting --------------------------------------------------------------------------------------
documents = st.lists(st.lists(words, min_size=1, max_size=80).map(" ".join), min_size=1, max_size=3)


def _check_fill_slices(text: str, docs: list[str]) -> None:
    """Every kept piece is a slice of one document, and pieces appear in document order."""
    pieces = [p.strip() for p in text.split("[...]") if p.strip()]
    position = (0, 0)  # (document, offset)
    for piece in pieces:
        # A piece may span contiguous chunks of one document only.
        found = None
        for d_i in range(position[0], len(docs)):
            start = docs[d_i].find(piece, position[1] if d_i == position[0] else 0)
            if start >= 0:
                found = (d_i, start + len(piece))
                break
        assert found is not None, (piece, docs)
        position = found


@FAST
@given(docs=documents, fraction=st.floats(0.05, 1.2), size=st.integers(3, 15), data=st.data())
def test_fill_never_exceeds_the_budget_and_keeps_document_slices_in_order(
    docs: list[str], fraction: float, size: int, data: st.DataObject
) -> None:
    counter = WordCounter()
    total = counter.count("\n\n".join(docs))
    available = max(1, int(total * fraction))
    retrieved = data.draw(st.lists(st.sampled_from(docs[0].split()), max_size=3))
    try:
        fitted = sr.fit_context(
            docs,
            question=" ".join(retrieved) or "what?",
            available_tokens=available,
            strategy="fill",
            retrieved=retrieved,
            counter=counter,
            chunk_words=size,
        )
    except sr.ContextOverflowError as err:
        assert err.available_tokens == available < size + counter.count(GAP_MARKER)
        return
    assert fitted.tokens <= available
    assert fitted.tokens == counter.count(fitted.text)
    if fitted.truncated:
        _check_fill_slices(fitted.text, docs)
    else:
        assert fitted.text == "\n\n".join(d.strip() for d in docs)


@FAST
@given(docs=documents, fraction=st.floats(0.05, 1.2))
def test_truncate_middle_never_exceeds_the_budget(docs: list[str], fraction: float) -> None:
    counter = WordCounter()
    full = "\n\n".join(d.strip() for d in docs)
    available = max(1, int(counter.count(full) * fraction))
    try:
        fitted = sr.fit_context(
            docs,
            question="q",
            available_tokens=available,
            strategy="truncate_middle",
            counter=counter,
        )
    except sr.ContextOverflowError:
        assert available < 2
        return
    assert fitted.tokens <= available
    if fitted.truncated:
        head, tail = fitted.text.split(GAP_MARKER)
        assert full.startswith(head) and full.endswith(tail)
    else:
        assert fitted.text == full


@SLOW
@given(
    docs=st.lists(
        st.lists(
            st.sampled_from(["lamp", "keeper,", "1938", "storm.", "Grey", "Point's"]),
            min_size=5,
            max_size=300,
        ).map(" ".join),
        min_size=1,
        max_size=2,
    ),
    fraction=st.floats(0.1, 0.9),
    strategy=st.sampled_from(["fill", "truncate_middle"]),
)
def test_fitting_with_tiktoken_never_exceeds_the_budget(
    docs: list[str], fraction: float, strategy: str
) -> None:
    counter = sr.default_token_counter()
    available = max(1, int(counter.count("\n\n".join(docs)) * fraction))
    try:
        fitted = sr.fit_context(
            docs, question="storm", available_tokens=available, strategy=strategy, chunk_words=20
        )
    except sr.ContextOverflowError:
        return
    assert fitted.tokens <= available
    assert counter.count(fitted.text) == fitted.tokens
    if strategy == "fill" and fitted.truncated:
        _check_fill_slices(fitted.text, docs)
