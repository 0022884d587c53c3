"""Micro-benchmark: how long :func:`selfroute.parse_verdict` takes per output.

Times the detector on the vendored hand-labelled outputs (``tests/fixtures/refusals/*.jsonl``) in
default mode, strict mode and with the question, against a baseline in the same run: one plain
refusal regex searched over the same texts (what a minimal detector costs). Reported as
microseconds per output and as a ratio to the baseline; nothing here is asserted on timing.

Usage::

    python -m benchmarks.verdict_speed [--repeat 5] [FILE.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import selfroute as sr
from benchmarks._common import REPO_ROOT

__all__ = ["BASELINE", "load_texts", "main", "measure"]

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "refusals"
#: The baseline: one plain refusal regex, the cheapest detector worth comparing against.
BASELINE = re.compile(
    r"\b(?:not (?:mention|provide|specif|state|contain|discuss)\w*|unable to|cannot|can't|"
    r"no information|unanswerable|i'm sorry|i apologi[sz]e)",
    re.IGNORECASE,
)


def load_texts(paths: Sequence[Path]) -> list[tuple[str, str | None]]:
    """``(prediction, question or None)`` of every row of the labelled JSONL files."""
    rows: list[tuple[str, str | None]] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append((str(row["prediction"]), row.get("question")))
    return rows


def _best(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure(rows: Sequence[tuple[str, str | None]], *, repeat: int = 5) -> dict[str, float]:
    """Best-of-``repeat`` seconds per output for each variant (and the baseline)."""
    texts = [t for t, _ in rows]
    variants: dict[str, Callable[[], object]] = {
        "baseline regex": lambda: [BASELINE.search(t) for t in texts],
        "parse_verdict default": lambda: [sr.parse_verdict(t) for t in texts],
        "parse_verdict strict": lambda: [sr.parse_verdict(t, strict=True) for t in texts],
        "parse_verdict with question": lambda: [
            sr.parse_verdict(t, question=q or "What is it?") for t, q in rows
        ],
    }
    return {name: _best(fn, repeat) / max(1, len(texts)) for name, fn in variants.items()}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    files = args.files or sorted(FIXTURES.glob("*.jsonl"))
    rows = load_texts(files)
    chars = sum(len(t) for t, _ in rows) / max(1, len(rows))
    per = measure(rows, repeat=args.repeat)
    base = per["baseline regex"]
    print(
        f"{len(rows)} outputs (mean {chars:.0f} characters) from {', '.join(f.name for f in files)}"
    )
    print("| variant | µs per output | × baseline |\n|---|---:|---:|")
    for name, seconds in per.items():
        print(f"| {name} | {seconds * 1e6:.1f} | {seconds / base:.0f}× |")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
