"""Parsing model output stays linear on adversarial replies (white space after an answer label)."""

from __future__ import annotations

import time

import pytest

from selfroute._streaming import SentinelSniffer
from selfroute._verdict import parse_verdict


def _best(fn, text: str, runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def _sniff(text: str) -> None:
    sniffer = SentinelSniffer()
    sniffer.feed(text)


@pytest.mark.parametrize("label", ["A", "Answer", "Final answer", "**Answer**", "** A"])
@pytest.mark.parametrize("entry", [parse_verdict, _sniff], ids=["parse_verdict", "sniffer"])
def test_label_then_white_space_is_linear(label, entry) -> None:
    small = label + " " * 10_000 + "Paris is the capital."
    large = label + " " * 100_000 + "Paris is the capital."
    ratio = _best(entry, large) / max(_best(entry, small), 1e-5)
    # Linear growth is ~10x, quadratic ~100x: 25 separates them on a loaded machine.
    assert ratio < 25, ratio


def _stream_verdict(text: str) -> None:
    from selfroute._structured_stream import VerdictStream

    stream = VerdictStream()
    for i in range(0, len(text), 3):  # token-sized pieces: per-piece cost must not grow
        stream.feed(text[i : i + 3])


@pytest.mark.parametrize(
    ("body", "n"),
    [("word ", 4_000), ("caf\\u00e9 \\ud83d\\ude00 \\n", 500)],
    ids=["plain", "escapes"],
)
def test_streamed_structured_verdict_is_linear(body: str, n: int) -> None:
    def obj(count: int) -> str:
        return '{"answerable": true, "answer": "' + body * count + '"}'

    # each run takes tens of milliseconds: scheduling noise on a loaded machine stays small
    ratio = _best(_stream_verdict, obj(10 * n)) / max(_best(_stream_verdict, obj(n)), 1e-5)
    assert ratio < 25, ratio
