"""Run the benchmarks and write their results into ``docs/benchmarks.md``.

Usage::

    python -m benchmarks            # full run (about 10 minutes on 2 cores)
    python -m benchmarks --quick    # tiny run (under a minute)
    python -m benchmarks --only 5,6 --no-write
    python -m benchmarks --only 10 --merge   # replace only section 10 of the page, keep the rest

The real data defaults to ``../shared/data`` next to the repository; ``SELFROUTE_DATA`` or
``--data`` override it. Benchmarks whose data is missing print ``skipped: data not found at PATH``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

if __package__ in (None, ""):  # ``python benchmarks/run_all.py``
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (
    REPO_ROOT,
    BenchContext,
    BenchResult,
    data_dir,
    machine_description,
)

__all__ = ["BENCHMARKS", "END", "START", "main", "merge_sections", "render", "write_docs"]

#: Benchmark number -> module, in the order they run.
BENCHMARKS: dict[str, str] = {
    "5": "benchmarks.bench_economics",
    "6": "benchmarks.bench_fitting",
    "4": "benchmarks.bench_indexing",
    "1": "benchmarks.bench_overhead",
    "2": "benchmarks.bench_concurrency",
    "3": "benchmarks.bench_streaming",
    "7": "benchmarks.bench_policies",
    "8": "benchmarks.bench_scale",
    "9": "benchmarks.bench_batch",
    "10": "benchmarks.bench_startup",
    "11": "benchmarks.bench_tracing",
    "12": "benchmarks.bench_eval",
    "13": "benchmarks.bench_serve",
}

START = "<!-- results:start -->"
END = "<!-- results:end -->"
DOCS = REPO_ROOT / "docs" / "benchmarks.md"


def _run_one(key: str, ctx: BenchContext) -> BenchResult:
    module = importlib.import_module(BENCHMARKS[key])
    t0 = time.perf_counter()
    try:
        result: BenchResult = module.run(ctx)
    except Exception as exc:  # a crashed benchmark is reported, the others still run
        traceback.print_exc()
        result = BenchResult(key, getattr(module, "TITLE", key), skipped=f"failed: {exc!r}")
    result.seconds = time.perf_counter() - t0
    return result


def render(results: Sequence[BenchResult], *, quick: bool, seconds: float) -> str:
    """The markdown that goes between the markers."""
    met = sum(1 for r in results for row in r.rows if row.met is True)
    missed = sum(1 for r in results for row in r.rows if row.met is False)
    mode = "`--quick` (tiny configuration, not representative)" if quick else "full"
    out = [
        START,
        "",
        f"Run: {mode}, {seconds:.0f} s total; targets met: {met}, missed: {missed}.",
        "",
        machine_description(),
        "",
    ]
    out += [r.markdown() for r in results]
    out.append(END)
    return "\n".join(out)


def write_docs(block: str, path: Path = DOCS) -> None:
    """Replace the text between the markers in ``path`` (append the block if they are absent)."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def _sections(body: str) -> tuple[str, dict[str, str]]:
    """The text before the first ``### N.`` heading, and each section by its key, in order."""
    parts = re.split(r"(?m)^(?=### [0-9]+\. )", body)
    head, sections = parts[0], {}
    for part in parts[1:]:
        key = part[4:].split(".", 1)[0]
        sections[key] = part
    return head, sections


def merge_sections(results: Sequence[BenchResult], path: Path = DOCS) -> None:
    """Replace only the sections of ``results`` in the page's results block (append the new
    ones at its end), keeping the others and the block's header; each written section says
    when and on what load it ran, since the header describes the last full run."""
    text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n"
    if START not in text or END not in text:
        write_docs(render(results, quick=False, seconds=sum(r.seconds for r in results)), path)
        return
    page_head, rest = text.split(START, 1)
    body, tail = rest.split(END, 1)
    head, sections = _sections(body)
    for result in results:
        heading, _, section = result.markdown().partition("\n")
        when = machine_description().splitlines()
        note = f"_Run alone (`python -m benchmarks --only {result.key} --merge`): " + "; ".join(
            line.removeprefix("- ") for line in when[:2]
        )
        sections[result.key] = f"{heading}\n\n{note}._\n{section.rstrip()}\n\n"
    path.write_text(page_head + START + head + "".join(sections.values()) + END + tail, "utf-8")


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="tiny configuration (smoke run)")
    parser.add_argument(
        "--only", default="", help="comma-separated benchmark numbers, e.g. 5,6 (default: all)"
    )
    parser.add_argument("--data", type=Path, default=None, help="real data root (SELFROUTE_DATA)")
    parser.add_argument("--no-write", action="store_true", help="do not update the docs page")
    parser.add_argument("--docs", type=Path, default=DOCS, help="page to write the results into")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="replace only the sections of the benchmarks run (with --only), keep the others",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected benchmarks, print their tables, update the docs page; 0 on success."""
    args = _parse(argv)
    keys = [k.strip() for k in args.only.split(",") if k.strip()] or list(BENCHMARKS)
    unknown = [k for k in keys if k not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    ctx = BenchContext(quick=args.quick, data=args.data or data_dir())
    print(f"data: {ctx.data}{'' if ctx.data.is_dir() else ' (not found)'}", flush=True)
    t0 = time.perf_counter()
    results = []
    for key in keys:
        print(f"== benchmark {key} ==", flush=True)
        result = _run_one(key, ctx)
        print(result.markdown(), flush=True)
        results.append(result)
    block = render(results, quick=args.quick, seconds=time.perf_counter() - t0)
    if not args.no_write:
        if args.merge:
            merge_sections(results, args.docs)
        else:
            write_docs(block, args.docs)
        print(f"results written to {args.docs}")
    return 1 if any(r.skipped and r.skipped.startswith("failed") for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
