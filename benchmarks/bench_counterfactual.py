"""Pricing always-LC on a large document: fitting it (before issue #16) versus counting it (after).

A RAG-routed call prices the always-long-context counterfactual. Before the fix the flow fitted
the document into the window on every call (``fit_long_context``: count the whole document,
chunk it, count every chunk again, rank every chunk); now it only counts it
(``count_long_context``: one count per content, remembered by a digest). Both are timed on the
same synthetic document in the same run, for the first call (cold counter cache) and for a
repeated call (warm cache), and the ratio is reported. No model, no network.

Run: ``python -m benchmarks.bench_counterfactual --mb 20`` (the issue's attack used 200 MB).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import selfroute as sr
from selfroute._flow._fit import count_long_context, fit_long_context
from selfroute._tokens import TiktokenCounter

PARAGRAPH = (
    "Grey Point lighthouse was kept by Mara Holt for thirty-one years. She was born in Dunmore in "
    "1901. The lens was replaced in 1947 after a winter storm broke the old one. Ships passing the "
    "point in fog listened for the horn, which she sounded every thirty seconds until dawn.\n\n"
)
QUESTION = "How long did Mara Holt keep the lamp?"


def _fresh_config(window: int) -> sr.RouteConfig:
    base = sr.default_token_counter()
    if not isinstance(base, TiktokenCounter):  # pragma: no cover - tiktoken is vendored
        raise SystemExit("tiktoken encodings not available offline")
    counter = TiktokenCounter(base._enc, "o200k_base")  # its own (empty) cache
    return sr.RouteConfig(long_context_window=window, token_counter=counter)


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(megabytes: float, window: int = 128_000) -> dict[str, float]:
    """Seconds for the first and a repeated call, before and after, on one document."""
    document = PARAGRAPH * max(1, int(megabytes * 1_000_000 / len(PARAGRAPH)))
    docs = [sr.ContextDocument(document, "big")]
    out: dict[str, float] = {"megabytes": len(document) / 1e6}
    for name, price in (("before", fit_long_context), ("after", count_long_context)):
        cfg = _fresh_config(window)
        out[f"{name}_first_s"] = _timed(lambda: price(QUESTION, docs, cfg))  # noqa: B023
        out[f"{name}_repeat_s"] = _timed(lambda: price(QUESTION, docs, cfg))  # noqa: B023
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=5.0, help="document size in megabytes")
    parser.add_argument("--window", type=int, default=128_000, help="long-context window")
    args = parser.parse_args(argv)
    r = run(args.mb, args.window)
    print(f"document: {r['megabytes']:.1f} MB, window {args.window} tokens")
    print("| call | before (fit) s | after (count) s | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for call in ("first", "repeat"):
        before, after = r[f"before_{call}_s"], r[f"after_{call}_s"]
        print(f"| {call} | {before:.2f} | {after:.3f} | {before / max(after, 1e-9):.0f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
