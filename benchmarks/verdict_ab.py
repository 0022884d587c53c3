"""A/B timing of :func:`selfroute.parse_verdict` across source trees, in one process.

Each tree (a checkout's root: ``/work/main``, a worktree, an unpacked ``git archive``) is imported
in turn into the same process and its ``parse_verdict`` kept; then all of them are timed in
interleaved rounds on the same outputs (default mode and with the question), in CPU time, so that
load on a shared machine falls on every tree alike. The first tree is the baseline; the table
gives each tree's minimum and median round time and its ratio to the baseline's. Nothing is
asserted.

Usage::

    python -m benchmarks.verdict_ab BASE_TREE NEW_TREE [...] [--rounds 7]
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.verdict_speed import FIXTURES, SHARED_FILES, load_texts

__all__ = ["load_tree", "main"]


def load_tree(tree: Path) -> Callable[..., object]:
    """``parse_verdict`` of the ``selfroute`` package under ``tree`` (imported afresh)."""
    for name in [m for m in sys.modules if m == "selfroute" or m.startswith("selfroute.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        module = importlib.import_module("selfroute")
    finally:
        sys.path.remove(str(tree))
    return module.parse_verdict  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    saved = {k: v for k, v in sys.modules.items() if k == "selfroute" or k.startswith("selfroute.")}
    fns = [(str(tree), load_tree(tree)) for tree in args.trees]
    sys.modules.update(saved)
    files = sorted(FIXTURES.glob("*.jsonl")) + [f for f in SHARED_FILES if f.is_file()]
    rows = load_texts(files)
    for _, fn in fns:  # warm every tree's caches alike
        for text, question in rows:
            fn(text)
            fn(text, question=question or "What is it?")
    clock = time.process_time_ns
    rounds: list[list[float]] = [[] for _ in fns]
    for _ in range(args.rounds):
        for times, (_, fn) in zip(rounds, fns, strict=True):
            start = clock()
            for text, question in rows:
                fn(text)
                fn(text, question=question or "What is it?")
            times.append((clock() - start) / 1e9)
    base = rounds[0]
    print(f"{len(rows)} outputs, default + with question, {args.rounds} interleaved rounds (CPU s)")
    print("| tree | min | median | × baseline (min / median) |\n|---|---:|---:|---:|")
    for (name, _), times in zip(fns, rounds, strict=True):
        low, mid = min(times), statistics.median(times)
        print(
            f"| {name} | {low:.3f} | {mid:.3f} | "
            f"{low / min(base):.3f} / {mid / statistics.median(base):.3f} |"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
