"""Every pattern that runs on model output stays linear in its input (issue #27 item 11).

Growth is measured as a ratio (the calling thread's CPU time, best of five, on a 100 KB input over
the time on a 10 KB one, in the same run), never as an absolute time: linear growth is ~10x,
quadratic ~100x. A row's pattern
is compared with a plain linear scan of the same inputs (its growth over the scan's growth: ~1 when
linear, ~10 when quadratic), which cancels what a loaded machine or a cache adds to long inputs.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest

from selfroute._streaming import SentinelSniffer
from selfroute._verdict import _rules
from selfroute._verdict._parse import parse_verdict
from selfroute._verdict._rules import RULES, Rule
from tests.support.growth import growth

SMALL = 10_000
LARGE = 100_000
#: Linear growth is ~10x, quadratic ~100x: 30 separates them on a loaded machine.
MAX_RATIO = 30


#: A linear scan: the yardstick of a row's growth.
LINEAR = re.compile(r"\bzqx\b")
#: A linear pattern grows like the scan (~1x of it), a quadratic one ~10x: 4 separates them.
MAX_RELATIVE = 4


def _ratio(
    fn: Callable[[str], object], make: Callable[[int], str], small: int = SMALL, large: int = LARGE
) -> float:
    """How much longer ``fn`` takes on ``make(large)`` than on ``make(small)`` (CPU time)."""
    return growth(fn, make, small, large)


def _sniff(text: str) -> None:
    sniffer = SentinelSniffer()
    sniffer.feed(text)


@pytest.mark.parametrize("label", ["A", "Answer", "Final answer", "**Answer**", "** A"])
@pytest.mark.parametrize("entry", [parse_verdict, _sniff], ids=["parse_verdict", "sniffer"])
def test_label_then_white_space_is_linear(label, entry) -> None:
    ratio = _ratio(entry, lambda n: label + " " * n + "Paris is the capital.")
    assert ratio < MAX_RATIO, ratio


def _adversarial(row: Rule) -> dict[str, Callable[[int], str]]:
    """Inputs of ``n`` characters that keep a pattern's repetitions and alternatives busy."""
    words = list(dict.fromkeys(re.findall(r"[a-z][a-z']+", row.pattern)))

    def own(n: int) -> str:  # the pattern's own words, one after another (long partial matches)
        return " ".join(itertools.islice(itertools.cycle(words), n // 3))[:n]

    return {
        "own-words": own,
        "determiners": lambda n: ("the " * n)[:n],
        "negations": lambda n: ("no not n't " * n)[:n],
        "spaces": lambda n: " " * n + "x",
    }


@pytest.mark.slow
@pytest.mark.parametrize("row", RULES, ids=[r.name for r in RULES])
def test_every_rows_pattern_is_linear(row: Rule) -> None:
    pattern = _rules.compiled(row.pattern)
    for family, make in _adversarial(row).items():
        relative = _relative(pattern.search, make)
        assert relative < MAX_RELATIVE, (row.name, family, relative)


def _relative(fn: Callable[[str], object], make: Callable[[int], str], scale: int = 1) -> float:
    """``fn``'s growth over a linear scan's, on the same inputs (``1/scale`` of the sizes)."""
    sizes = (SMALL // scale, LARGE // scale)
    return _ratio(fn, make, *sizes) / max(_ratio(LINEAR.search, make, *sizes), 1.0)


def test_the_growth_check_catches_a_quadratic_pattern() -> None:
    quadratic = re.compile(r"(?:the ){0,9999}text")  # O(n^2) on "the the ...": fails after each
    assert _relative(quadratic.search, lambda n: ("the " * n)[:n], scale=10) >= MAX_RELATIVE


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
    def obj(size: int) -> str:
        return '{"answerable": true, "answer": "' + body * (size // len(body)) + '"}'

    # each run takes tens of milliseconds: scheduling noise on a loaded machine stays small
    size = n * len(body)
    assert _ratio(_stream_verdict, obj, size, 10 * size) < MAX_RATIO
