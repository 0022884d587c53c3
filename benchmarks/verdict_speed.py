"""Micro-benchmark: how long :func:`selfroute.parse_verdict` takes per output.

Times the detector on the vendored hand-labelled outputs (``tests/fixtures/refusals/*.jsonl``) in
default mode, strict mode and with the question, against a baseline in the same run: one plain
refusal regex searched over the same texts (what a minimal detector costs). Each output is timed
on its own (CPU time of this process, the best of ``--repeat`` passes, so other processes on a
shared machine inflate it less than wall time would); the table gives the median, the 95th
percentile and the mean in microseconds per output, and each as a ratio to the baseline's.
Nothing here is asserted on timing.

Usage::

    python -m benchmarks.verdict_speed [--repeat 5] [--shared] [FILE.jsonl ...]

``--shared`` adds the raw LongBench Qasper and InfiniteBench predictions of
``../shared/data/refusals/`` (4,660 outputs, mostly short answers), when present.
``python -m experiments.scope_model.measure speed`` also times the experimental learned scope
model (``experiments/README.md``): it calls :func:`parser` and :func:`report` with its variants.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import selfroute as sr
from benchmarks._common import REPO_ROOT

__all__ = [
    "BASELINE",
    "SHARED_FILES",
    "Variant",
    "load_texts",
    "main",
    "measure",
    "parser",
    "percentile",
    "report",
]

#: A detector timed on ``(text, question or None)``.
Variant = Callable[[str, str | None], object]

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "refusals"
#: Raw model outputs of the two tuning sources (unlabelled rows included; never RAGTruth's).
SHARED_FILES = tuple(
    REPO_ROOT.parent / "shared" / "data" / "refusals" / name
    for name in ("longbench_qasper_predictions.jsonl", "infinitebench_predictions.jsonl")
)
#: The baseline: one plain refusal regex, the cheapest detector worth comparing against.
BASELINE = re.compile(
    r"\b(?:not (?:mention|provide|specif|state|contain|discuss)\w*|unable to|cannot|can't|"
    r"no information|unanswerable|i'm sorry|i apologi[sz]e)",
    re.IGNORECASE,
)


def load_texts(paths: Sequence[Path]) -> list[tuple[str, str | None]]:
    """``(prediction, question or None)`` of every row of the JSONL files."""
    rows: list[tuple[str, str | None]] = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                rows.append((str(row["prediction"]), row.get("question")))
    return rows


def percentile(values: Sequence[float], share: float) -> float:
    """The ``share`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered)) - 1))]


def _per_output(
    fn: Callable[[str, str | None], object], rows: Sequence[tuple[str, str | None]], repeat: int
) -> list[float]:
    """Seconds per output: each output timed alone, the best of ``repeat`` passes."""
    best = [float("inf")] * len(rows)
    clock = time.process_time_ns
    for _ in range(repeat):
        for i, (text, question) in enumerate(rows):
            t0 = clock()
            fn(text, question)
            best[i] = min(best[i], (clock() - t0) / 1e9)
    return best


def measure(
    rows: Sequence[tuple[str, str | None]],
    *,
    repeat: int = 5,
    extra: Mapping[str, Variant] | None = None,
) -> dict[str, dict[str, float]]:
    """``{variant: {"p50", "p95", "mean"}}`` in seconds per output (and the baseline's).

    ``extra``: more detectors to time (an experiment's), after the others.
    """
    variants: dict[str, Variant] = {
        "baseline regex": lambda t, q: BASELINE.search(t),
        "parse_verdict default": lambda t, q: sr.parse_verdict(t),
        "parse_verdict strict": lambda t, q: sr.parse_verdict(t, strict=True),
        "parse_verdict with question": lambda t, q: sr.parse_verdict(
            t, question=q or "What is it?"
        ),
    }
    variants.update(extra or {})
    out: dict[str, dict[str, float]] = {}
    for name, fn in variants.items():
        times = _per_output(fn, rows, repeat)
        out[name] = {
            "p50": percentile(times, 0.5),
            "p95": percentile(times, 0.95),
            "mean": statistics.fmean(times) if times else 0.0,
        }
    return out


def parser() -> argparse.ArgumentParser:
    """The command line's options (an experiment adds its own to them)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--shared", action="store_true", help="add the raw tuning-source outputs")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Print the table."""
    return report(parser().parse_args(argv))


def report(args: argparse.Namespace, extra: Mapping[str, Variant] | None = None) -> int:
    """Time the detectors (and ``extra``, last) on the parsed options' files and print the table;
    returns the exit code."""
    files = list(args.files or sorted(FIXTURES.glob("*.jsonl")))
    if args.shared:
        files += [f for f in SHARED_FILES if f.is_file()]
    rows = load_texts(files)
    chars = sum(len(t) for t, _ in rows) / max(1, len(rows))
    per = measure(rows, repeat=args.repeat, extra=extra)
    base = per["baseline regex"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(rows)} outputs (mean {chars:.0f} characters) from "
        f"{', '.join(f.name for f in files)}; load average {load:.1f}; CPU time, best of "
        f"{args.repeat}"
    )
    print(
        "| variant | µs p50 | µs p95 | µs mean | × baseline (p50 / p95 / mean) |\n"
        "|---|---:|---:|---:|---:|"
    )
    for name, stats in per.items():
        ratios = " / ".join(
            f"{stats[k] / base[k]:.1f}×" if base[k] else "–" for k in ("p50", "p95", "mean")
        )
        print(
            f"| {name} | {stats['p50'] * 1e6:.1f} | {stats['p95'] * 1e6:.1f} | "
            f"{stats['mean'] * 1e6:.1f} | {ratios} |"
        )
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
