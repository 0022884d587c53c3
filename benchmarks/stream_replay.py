"""Replay real RAG-step outputs token by token through the streaming sniffer.

For every output of the labelled fixtures (``tests/fixtures/refusals/*.jsonl``; with ``--shared``
also the raw LongBench Qasper and InfiniteBench predictions of ``../shared/data/refusals/``), the
text is cut into tokens the way a BPE tokenizer cuts English (a word with its leading space, a
run of digits, a run of punctuation) and fed to :class:`selfroute.flow.SentinelSniffer` one
token at a time, as the flow's drivers feed a stream. :func:`selfroute.parse_verdict` on the whole output
(with the question when the row has one) decides the route, as the flow does. Reported, for each
``hold_chars`` setting:

- **declines shown, then retracted**: declines of which the sniffer released any text before the
  stream ended (the flow then emits ``RouteEvent(retracted=True)``);
- **answers held to the end**: answers of which nothing was released before the last token;
- **characters before the first release** (median, 95th percentile) of the answers released
  early: how far into the answer the reader sees its first character (added latency).

Usage::

    python -m benchmarks.stream_replay [--shared] [--hold 0 60 120] [FILE.jsonl ...]
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import selfroute as sr
from benchmarks.verdict_speed import FIXTURES, SHARED_FILES, load_texts

__all__ = ["ReplayStats", "main", "replay", "tokens"]

_TOKEN = re.compile(r" ?[^\W\d_]+| ?\d{1,3}| ?[^\w\s]+|\s+|_+")


def tokens(text: str) -> list[str]:
    """``text`` cut roughly as a BPE tokenizer cuts it (the pieces join back to ``text``)."""
    out = _TOKEN.findall(text)
    assert "".join(out) == text
    return out


@dataclass
class ReplayStats:
    """What one ``hold_chars`` setting did over a set of outputs."""

    hold_chars: int
    declines: int = 0
    declines_shown: int = 0
    answers: int = 0
    answers_held_to_end: int = 0
    first_release_chars: list[int] | None = None

    def percentile(self, share: float) -> int | None:
        """The ``share`` quantile of the characters before the first release (nearest rank)."""
        values = sorted(self.first_release_chars or [])
        if not values:
            return None
        return values[min(len(values) - 1, max(0, round(share * len(values)) - 1))]


def _first_release(text: str, **kw: object) -> int | None:
    """Characters of ``text`` received when the sniffer first released text (``None``: never
    before the stream ended)."""
    sniffer = sr.flow.SentinelSniffer(**kw)  # type: ignore[arg-type]
    received = 0
    for token in tokens(text):
        received += len(token)
        if sniffer.feed(token):
            return received
    return None


def replay(
    rows: Sequence[tuple[str, str | None]], hold_chars: int, *, sentinel: str | None = None
) -> ReplayStats:
    """Replay ``(output, question)`` rows with one ``hold_chars`` setting."""
    stats = ReplayStats(hold_chars, first_release_chars=[])
    sentinel = sentinel or sr.DEFAULT_SENTINEL
    for text, question in rows:
        declined = sr.parse_verdict(text, sentinel=sentinel, question=question).declined
        at = _first_release(text, sentinel=sentinel, hold_chars=hold_chars, question=question)
        if declined:
            stats.declines += 1
            stats.declines_shown += at is not None
        else:
            stats.answers += 1
            if at is None:
                stats.answers_held_to_end += 1
            else:
                assert stats.first_release_chars is not None
                stats.first_release_chars.append(at)
    return stats


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--shared", action="store_true", help="add the raw tuning-source outputs")
    ap.add_argument("--hold", nargs="+", type=int, default=[0, 40, 80, 120, 200])
    args = ap.parse_args(argv)
    files = list(args.files or sorted(FIXTURES.glob("*.jsonl")))
    if args.shared:
        files += [f for f in SHARED_FILES if f.is_file()]
    rows = load_texts(files)
    print(f"{len(rows)} outputs from {', '.join(f.name for f in files)}, one token at a time")
    print(
        "| hold_chars | declines shown, then retracted | answers held to the end | "
        "characters before the first release (median / p95) |\n|---:|---:|---:|---:|"
    )
    for hold in args.hold:
        s = replay(rows, hold)
        print(
            f"| {hold} | {s.declines_shown} of {s.declines} | {s.answers_held_to_end} of "
            f"{s.answers} | {s.percentile(0.5)} / {s.percentile(0.95)} |"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
