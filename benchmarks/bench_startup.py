"""10. Command-line start-up: ``selfroute --help`` and the CLI's own overhead on ``ask``.

Every number is a fresh process, timed from ``subprocess.run`` to its exit, against a bare
``python -c pass`` measured in the same run (the baseline). ``ask`` runs over one vendored document
(``--doc``, BM25 over its chunks) and over an offline-embedded store, with the built-in offline
reader (``--model offline``) and with the CLI's own OpenAI-compatible client (standard-library
HTTP, no LangChain or ``openai`` SDK) against a loopback server (whose replies come from the same
extractive reader, so the model part takes milliseconds). The CLI's overhead on ``ask`` is the wall time minus the bare interpreter
minus the time spent in model calls (the steps' ``latency_s`` in ``--json``). Each row also gives
the process's CPU time (user + system, from the child's resource usage), which a busy shared
machine inflates far less than wall time. The import breakdown is ``python -X importtime`` of the
same command: cumulative time of the top-level packages.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks._common import REPO_ROOT, BenchContext, BenchResult, Row, markdown_table

__all__ = ["import_breakdown", "run", "timed", "timed_cpu"]

KEY, TITLE = "10", "Command line: start-up and the CLI's own overhead on ask"
HELP_TARGET_S = 0.5
ASK_OVERHEAD_TARGET_S = 1.0
DOCUMENT = REPO_ROOT / "tests" / "fixtures" / "docs" / "1973_oil_crisis.html"
QUESTION = "Who proclaimed the oil embargo in October 1973?"


def _env(cwd: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), ANONYMIZED_TELEMETRY="False")
    for key in ("OPENAI_API_KEY", "SELFROUTE_CONFIG"):
        env.pop(key, None)
    env["HOME"] = str(cwd)  # no user config or caches leak in
    return env


def timed(argv: Sequence[str], cwd: Path) -> tuple[float, str]:
    """Wall seconds of one fresh process running ``argv``, and its stdout."""
    wall, _, stdout = timed_cpu(argv, cwd)
    return wall, stdout


def timed_cpu(argv: Sequence[str], cwd: Path) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + system) and stdout of one fresh process running
    ``argv`` (the CPU time is the children's resource usage before and after: run one at a
    time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(
        list(argv), cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=300
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr[-400:]}")
    return wall, cpu, done.stdout


def import_breakdown(argv: Sequence[str], cwd: Path, top: int = 6) -> list[tuple[str, float]]:
    """The ``top`` top-level packages by cumulative import time (seconds) of ``argv``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        cwd=cwd,
        env=_env(cwd),
        capture_output=True,
        text=True,
        timeout=300,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if name.startswith("   "):  # nested import: counted in its top-level parent
            continue
        try:
            seconds = int(cumulative) / 1e6
        except ValueError:  # the header line
            continue
        package = name.strip().split(".")[0]
        totals[package] = totals.get(package, 0.0) + seconds
    return sorted(totals.items(), key=lambda kv: -kv[1])[:top]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _model_seconds(stdout: str) -> float:
    data = json.loads(stdout)
    return float(sum(step.get("latency_s") or 0.0 for step in data.get("steps", [])))


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    from benchmarks._fakes import loopback_openai_extractive

    repeats = 1 if ctx.quick else 5
    cli = [sys.executable, "-m", "selfroute.cli"]
    result = BenchResult(KEY, TITLE)
    with tempfile.TemporaryDirectory() as tmp, loopback_openai_extractive() as server:
        cwd = Path(tmp)
        (cwd / "kb").mkdir()
        (cwd / "kb" / DOCUMENT.name).write_bytes(DOCUMENT.read_bytes())
        timed([*cli, "index", "kb", "--embedding", "offline", "--progress", "never"], cwd)
        local = ["--base-url", server.base_url, "--model", "qwen2.5-7b-instruct"]
        asks = {
            "ask --doc, offline reader": ["ask", QUESTION, "--doc", str(DOCUMENT), "--model", "offline"],
            "ask --doc, OpenAI-compatible server (loopback)": ["ask", QUESTION, "--doc", str(DOCUMENT), *local],
            "ask over the store, offline reader": ["ask", QUESTION, "--model", "offline"],
            "ask over the store, OpenAI-compatible server (loopback)": ["ask", QUESTION, *local],
        }  # fmt: skip
        base, helps, base_cpu, help_cpu = [], [], [], []
        walls: dict[str, list[float]] = {name: [] for name in asks}
        cpus: dict[str, list[float]] = {name: [] for name in asks}
        models: dict[str, list[float]] = {name: [] for name in asks}
        for _ in range(repeats):  # interleaved, so load changes hit every series alike
            wall, cpu, _ = timed_cpu([sys.executable, "-c", "pass"], cwd)
            base.append(wall)
            base_cpu.append(cpu)
            wall, cpu, _ = timed_cpu([*cli, "--help"], cwd)
            helps.append(wall)
            help_cpu.append(cpu)
            for name, argv in asks.items():
                wall, cpu, out = timed_cpu([*cli, *argv, "--json"], cwd)
                walls[name].append(wall)
                cpus[name].append(cpu)
                models[name].append(_model_seconds(out))
        python, python_cpu = _median(base), _median(base_cpu)
        help_s = _median(helps) - python
        result.rows.append(
            Row(
                "`selfroute --help` (wall − bare python)",
                f"{python:.3f} s (python -c pass)",
                f"{help_s:.3f} s (CPU {_median(help_cpu) - python_cpu:.3f} s)",
                f"{_median(helps) / python:.2f}× python",
                f"< {HELP_TARGET_S:g} s",
                help_s < HELP_TARGET_S,
            )
        )
        for name in asks:
            overhead = _median([w - m for w, m in zip(walls[name], models[name], strict=True)])
            overhead -= python
            result.rows.append(
                Row(
                    f"{name}: CLI overhead (wall − python − model calls)",
                    f"{python:.3f} s (python -c pass)",
                    f"{overhead:.3f} s (model {_median(models[name]):.3f} s; "
                    f"CPU {_median(cpus[name]) - python_cpu:.3f} s)",
                    f"{_median(walls[name]) / python:.1f}× python",
                    f"< {ASK_OVERHEAD_TARGET_S:g} s",
                    overhead < ASK_OVERHEAD_TARGET_S,
                )
            )
        breakdown = [] if ctx.quick else [("--help", ["--help"])]
        breakdown += [] if ctx.quick else [(n, [*a, "--json"]) for n, a in asks.items()]
        for name, argv in breakdown:
            rows = import_breakdown(["-m", "selfroute.cli", *argv], cwd)
            result.details += [
                f"Imports of `selfroute {name}` (cumulative, top-level packages):",
                "",
                markdown_table(["package", "import time"], [[p, f"{s:.3f} s"] for p, s in rows]),
                "",
            ]
    result.notes.append(
        f"Medians of {repeats} interleaved run(s) per row; the machine is shared, so absolute "
        "seconds move with its load (the bare-python baseline of the same run shows how much)."
    )
    return result
