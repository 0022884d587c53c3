"""Every parser that sees model output outside the decline detector stays linear on adversarial
replies. The streaming sniffer is measured by the characters it cleans (deterministic): a reply
streamed in small chunks must not be cleaned whole again for every chunk. The JSON verdict
reader and the quote splitter (regular expressions: their backtracking is not countable) are
timed in CPU time as a growth ratio, n against 8n characters (linear ~8x, quadratic ~64x)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from selfroute import _streaming
from selfroute._grounding import split_quotes
from selfroute._streaming import SentinelSniffer
from selfroute._structured import load_structured
from tests.support.growth import growth

SHAPES: dict[str, Callable[[int], str]] = {
    "plain answer": lambda n: "Paris is the capital of France. " + "It is large. " * (n // 13),
    "label, spaces": lambda n: "A" + " " * n + "Paris is the capital.",
    "Answer:, spaces": lambda n: "Answer:" + " " * n + "Paris is the capital.",
    "**Answer**, spaces": lambda n: "**Answer**" + " " * n + "Paris.",
    "trailing markup": lambda n: "Paris" + " **" * (n // 3) + " is the capital.",
    "reasoning block": lambda n: "<think>" + "hmm " * (n // 4) + "</think> Paris.",
    "newlines": lambda n: "Paris is the capital.\n" + "\n" * n + "More.",
}


def _cleaned_chars(text: str, monkeypatch: pytest.MonkeyPatch, **options: Any) -> int:
    counted = [0]
    real = _streaming._stream_clean

    def counting(raw: str) -> tuple[str, bool]:
        counted[0] += len(raw)
        return real(raw)

    with monkeypatch.context() as patch:
        patch.setattr(_streaming, "_stream_clean", counting)
        sniffer = SentinelSniffer(**options)
        shown = "".join(sniffer.feed(text[i : i + 4]) for i in range(0, len(text), 4))
    assert text.startswith(shown.lstrip()[:1]) or not shown or "Paris" in shown
    return counted[0]


@pytest.mark.parametrize("hold", [0, 200], ids=["no-hold", "hold-200"])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_sniffer_cleans_each_character_a_bounded_number_of_times(
    shape: str, hold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    make = SHAPES[shape]
    small = _cleaned_chars(make(5_000), monkeypatch, hold_chars=hold)
    large = _cleaned_chars(make(20_000), monkeypatch, hold_chars=hold)
    # linear: ~4x (each chunk looked at once, a few full cleanings); quadratic: ~16x
    assert large / max(small, 1) < 6, (small, large)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_sniffer_releases_what_it_released_before(shape: str) -> None:
    """Chunked or whole, the sniffer shows the same text (the incremental path changes no
    output)."""
    text = SHAPES[shape](300)
    whole = SentinelSniffer()
    once = whole.feed(text)
    chunked = SentinelSniffer()
    pieces = "".join(chunked.feed(text[i : i + 3]) for i in range(0, len(text), 3))
    assert pieces == chunked.emitted
    assert once == whole.emitted
    assert once.rstrip() == pieces.rstrip() or once.startswith(pieces) or pieces.startswith(once)


#: A parser and the adversarial reply of about ``n`` characters it is timed on.
PARSERS: dict[str, tuple[Callable[[str], Any], Callable[[int], str]]] = {
    "fence, newlines": (load_structured, lambda n: "```json" + "\n" * n + "x"),
    "fence, spaces then fence": (load_structured, lambda n: "```" + " " * n + "{}" + " " * n),
    "fence, backticks": (load_structured, lambda n: "```" + "`` " * (n // 3)),
    "quotes, blank lines": (split_quotes, lambda n: "Answer.\n" + "\n" * n + "Quote: x"),
    "quotes, many quote marks": (split_quotes, lambda n: '"' * n),
    "quotes, label spaces": (split_quotes, lambda n: "Quote:" + " " * n + "x"),
}


@pytest.mark.parametrize("name", list(PARSERS))
def test_reply_parsers_are_linear(name: str) -> None:
    parse, make = PARSERS[name]
    ratio = growth(parse, make, 10_000, 80_000)
    # linear ~8x, quadratic ~64x: 24 lies between them with a factor of ~3 either side
    assert ratio < 24, ratio


def test_load_structured_reads_fences_as_before() -> None:
    assert load_structured('```json\n{"answerable": true}\n```') == {"answerable": True}
    assert load_structured('```JSON {"a": 1} ```') == {"a": 1}
    assert load_structured('```\n{"a": 1}\n```') == {"a": 1}
    assert load_structured('  ```{"a": 2}```  ') == {"a": 2}
    assert load_structured("```json") is None
    assert load_structured('text {"a": 3} more') == {"a": 3}


#: Long first sentences that never end, held whole (a detector with no hold limit, or an
#: opening that reads as a decline under a hold): abbreviations, decimals and ellipses
#: inside them are no sentence end.
UNENDED: dict[str, Callable[[int], str]] = {
    "plain words": lambda n: "Paris is the capital " + "and it is very large " * (n // 21),
    "abbreviations": lambda n: (
        "Paris " + "met Mr. Holt e.g. at St. Ives, approx. 3.5 km " * (n // 46)
    ),
    "ellipses": lambda n: "Paris " + "was...well?!it was big...and " * (n // 30),
}


def _held_work(text: str, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[int, int, str]:
    """(characters the detector was shown, characters cleaned, text shown) for ``text`` fed in
    chunks of 5 characters."""
    shown_to_detector = [0]
    cleaned = [0]
    real = _streaming._stream_clean

    def detector(t: str, question: str | None) -> bool:
        shown_to_detector[0] += len(t)
        return False

    def counting(raw: str) -> tuple[str, bool]:
        cleaned[0] += len(raw)
        return real(raw)

    with monkeypatch.context() as patch:
        patch.setattr(_streaming, "_stream_clean", counting)
        sniffer = SentinelSniffer(detector=detector, **options)
        shown = "".join(sniffer.feed(text[i : i + 5]) for i in range(0, len(text), 5))
    return shown_to_detector[0], cleaned[0], shown


@pytest.mark.parametrize("shape", list(UNENDED))
def test_a_long_unended_first_sentence_is_read_once_with_a_detector(
    shape: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a detector and ``hold_chars=0`` nothing shows before the first sentence ends: each
    chunk of it is looked at itself, and the detector is not asked about its openings."""
    make = UNENDED[shape]
    d_small, c_small, shown = _held_work(make(5_000), monkeypatch, hold_chars=0)
    d_large, c_large, shown_large = _held_work(make(20_000), monkeypatch, hold_chars=0)
    assert shown == shown_large == ""
    assert d_small == d_large == 0  # nothing of an unended sentence decides anything
    assert c_large / max(c_small, 1) < 6, (c_small, c_large)  # quadratic: ~16x


def test_a_long_unended_suspect_sentence_is_read_once_under_a_hold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An opening that read as a decline ("His age is not mentioned") holds the rest of its
    sentence under a hold limit: the rest is not cleaned whole again for every chunk."""

    def make(n: int) -> str:
        return "His age is not mentioned " + "and so on and on " * (n // 17)

    counts = [_cleaned_chars(make(n), monkeypatch, hold_chars=80) for n in (5_000, 20_000)]
    assert SentinelSniffer(hold_chars=80).feed(make(5_000)) == ""
    assert counts[1] / max(counts[0], 1) < 6, counts


@pytest.mark.parametrize("hold", [0, 80])
@pytest.mark.parametrize(
    "text",
    [
        "Paris is the capital and it is large. It has many museums.",
        "Paris met Mr. Holt e.g. at St. Ives, approx. 3.5 km away. Then more.",
        'Paris asked "Why?" she said. Then "Who?" Nobody knew.',
        "His age is not mentioned in the text, only his town. He lived in Paris.",
        "You asked about Paris. The text does not say.",
        "Answer: Paris is the capital; it is large! Yes.",
        "<think>hmm</think> Paris is the capital of France and K. Holt lived there.\nMore.",
        "Paris!!! is... the capital?! of France. Yes.",
    ],
)
def test_reading_a_held_sentence_by_its_chunks_changes_no_decision(
    text: str, hold: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chunk-only reading of a held sentence shows exactly what judging the whole text at
    every chunk shows, for every chunk size."""

    def detector(t: str, question: str | None) -> bool:
        return "does not say" in t or "not mentioned" in t

    for size in (1, 2, 3, 5, 8):
        pieces = [text[i : i + size] for i in range(0, len(text), size)]
        fast = SentinelSniffer(detector=detector, hold_chars=hold)
        fast_out = [fast.feed(p) for p in pieces]
        with monkeypatch.context() as patch:
            patch.setattr(SentinelSniffer, "_still_quiet", lambda self, delta: False)
            whole = SentinelSniffer(detector=detector, hold_chars=hold)
            whole_out = [whole.feed(p) for p in pieces]
        assert fast_out == whole_out, (size, fast_out, whole_out)
