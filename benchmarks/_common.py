"""Shared pieces of the benchmarks: the result table, data location, machine description."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "FIXTURES",
    "REPO_ROOT",
    "BenchContext",
    "BenchResult",
    "Row",
    "data_dir",
    "fmt_ms",
    "fmt_pct",
    "machine_description",
    "markdown_table",
    "percentile",
    "ratio_row",
    "share_row",
    "skipped",
    "source_texts",
    "spawn_worker",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

#: Packages whose versions describe the run.
VERSIONED_PACKAGES = (
    "selfroute",
    "langchain-core",
    "langchain-text-splitters",
    "langchain-chroma",
    "langchain-openai",
    "llama-index-core",
    "llama-index-llms-openai",
    "chromadb",
    "tiktoken",
    "openai",
    "httpx",
)


#: Vendored real text (tests, CI, machines without ``../shared/data``).
FIXTURES = REPO_ROOT / "tests" / "fixtures" / "benchmarks"


def source_texts(data: Path) -> list[str]:
    """Real document texts: LaRA novellas and papers and SQuAD articles under ``data``, else the
    vendored fixture texts."""
    texts: list[str] = []
    lara = data / "lara" / "32k"
    if lara.is_dir():
        texts += [p.read_text(encoding="utf-8") for p in sorted(lara.glob("*/*")) if p.is_file()]
    squad = data / "squad_v2" / "articles_as_documents.jsonl"
    if squad.is_file():
        with squad.open(encoding="utf-8") as fh:
            texts += [json.loads(line)["document"] for line in fh if line.strip()]
    if not texts:
        texts += [p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.txt"))]
        texts += [
            json.loads(line)["document"]
            for p in sorted(FIXTURES.rglob("articles_as_documents.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    if not texts:
        raise FileNotFoundError(f"no corpus text in {data} nor in {FIXTURES}")
    return texts


def spawn_worker(module: str, args: Sequence[object], timeout: float) -> dict[str, Any]:
    """Run ``python -m MODULE ARGS...`` in a fresh interpreter; its last stdout line is JSON."""
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False", "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{module} {' '.join(map(str, args))} failed:\n{out.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def data_dir() -> Path:
    """Where the real data lives: ``$SELFROUTE_DATA`` or ``<repo>/../shared/data``."""
    env = os.environ.get("SELFROUTE_DATA")
    return Path(env) if env else (REPO_ROOT.parent / "shared" / "data").resolve()


@dataclass(frozen=True)
class BenchContext:
    """How a benchmark should run.

    Attributes:
        quick: A tiny configuration (smoke test, seconds instead of minutes).
        data: Root of the real data (``squad_v2/``, ``lara/``).
        log: Where progress lines go.
    """

    quick: bool = False
    data: Path = field(default_factory=data_dir)
    log: Callable[[str], None] = print


@dataclass(frozen=True)
class Row:
    """One line of a benchmark table: a baseline measured in the same run versus ours.

    ``met`` is ``None`` for rows that only report (no target).
    """

    metric: str
    baseline: str
    ours: str
    ratio: str
    target: str = ""
    met: bool | None = None

    @property
    def verdict(self) -> str:
        """``met``, ``missed`` or empty."""
        return "" if self.met is None else ("met" if self.met else "**missed**")


@dataclass
class BenchResult:
    """What a benchmark reports."""

    key: str
    title: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0

    def markdown(self) -> str:
        """The benchmark's section: headline table, then notes and detail tables."""
        out = [f"### {self.key}. {self.title}", ""]
        if self.skipped:
            out += [f"skipped: {self.skipped}", ""]
            return "\n".join(out)
        out.append(
            markdown_table(
                ["metric", "baseline", "ours", "ratio", "target", "result"],
                [[r.metric, r.baseline, r.ours, r.ratio, r.target, r.verdict] for r in self.rows],
            )
        )
        out.append("")
        for note in self.notes:
            out += [note, ""]
        for detail in self.details:
            out += [detail, ""]
        out.append(f"_{self.seconds:.1f} s_")
        out.append("")
        return "\n".join(out)


def skipped(key: str, title: str, path: Path) -> BenchResult:
    """The result of a benchmark whose data is missing."""
    return BenchResult(key, title, skipped=f"data not found at {path}")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation."""
    if not values:
        raise ValueError("percentile of no values")
    if len(values) == 1:
        return float(values[0])
    return float(
        statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, int(q) - 1))]
    )


def fmt_ms(seconds: float) -> str:
    """Seconds as milliseconds with 3 decimals."""
    return f"{seconds * 1000:.3f} ms"


def fmt_pct(value: float) -> str:
    """A share as a percentage."""
    return f"{value * 100:.1f}%"


def ratio_row(
    metric: str, baseline: float, ours: float, *, target: float | None, fmt: Callable[[float], str]
) -> Row:
    """``ours / baseline`` against ``ratio <= target`` (lower is better)."""
    r = ours / baseline if baseline else float("inf")
    return Row(
        metric,
        fmt(baseline),
        fmt(ours),
        f"{r:.3f}",
        "" if target is None else f"<= {target:g}",
        None if target is None else r <= target,
    )


def share_row(metric: str, total: int, hits: int, *, at_least: float | None) -> Row:
    """``hits / total`` against ``share >= at_least``."""
    share = hits / total if total else 0.0
    return Row(
        metric,
        str(total),
        str(hits),
        fmt_pct(share),
        "" if at_least is None else f">= {at_least * 100:g}%",
        None if at_least is None else share >= at_least,
    )


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine_description() -> str:
    """CPU, Python, package versions and date, as markdown."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    versions = ", ".join(f"{p} {_version(p)}" for p in VERSIONED_PACKAGES)
    now = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    try:
        load = ", load average at the end {:.1f} / {:.1f} / {:.1f} (1/5/15 min)".format(
            *os.getloadavg()
        )
    except OSError:  # pragma: no cover - not on every platform
        load = ""
    return (
        f"- date: {now}\n"
        f"- machine: {os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}{load}\n"
        f"- Python {platform.python_version()} ({platform.python_implementation()})\n"
        f"- packages: {versions}"
    )


class Stopwatch:
    """``with Stopwatch() as sw: ...; sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self._t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._t0
