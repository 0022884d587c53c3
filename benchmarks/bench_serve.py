"""11. ``selfroute serve``: added latency per question and throughput against a 50 ms model server.

The vendored documents (``tests/fixtures/docs``) are indexed offline; every question is RAG-routed
(the loopback model, in a child process, answers every prompt after 50 ms). The baseline is the
same flow in process: the server's own :class:`~selfroute._serve._service.RouteService` (same
store, retriever, async model client and core async driver) called directly. ``serve`` is the
same setup behind HTTP: a ``selfroute serve`` child process on a loopback port, asked through
``/v1/chat/completions`` with ``httpx``.

* Added latency: sequential questions, p50 and p95 of serve minus in-process (target: p50 added
  at most 5 ms).
* Throughput at c=32: questions per second through serve with 32 concurrent clients, against the
  model server's own ceiling (the bare model call at c=32, no retrieval; target at least 0.9),
  and against the same flow in process at c=32 (retrieval included: what HTTP costs).
* CPU per question: the in-process flow (this process's CPU time) and the serve child (its CPU
  time from ``/proc``, Linux only) over sequential questions; less sensitive to machine load than
  the latencies, so a change of the per-question work shows even on a busy machine.
* One core's bound: a ``selfroute serve`` process runs one event loop, so its throughput cannot
  pass 1 / its CPU per question; the c=32 throughput is reported against that bound, with the
  cores the serve process kept busy during the c=32 run (its CPU seconds over the run's wall time).
  A ratio near 1 and about one core busy say the process is CPU-bound: more throughput then needs
  more processes (on a Chroma server), not a faster model server.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from benchmarks._common import REPO_ROOT, BenchContext, BenchResult, Row, fmt_ms, percentile
from benchmarks._fakes import loopback_openai_process

__all__ = ["run"]

KEY, TITLE = "13", "Serve: added latency and throughput at c=32 against a 50 ms model server"
LATENCY_S = 0.05
DOCS = REPO_ROOT / "tests" / "fixtures" / "docs"
QUESTIONS = (
    "Who proclaimed the oil embargo in October 1973?",
    "Who developed the concept behind packet switching at RAND?",
    "What does the SC-LSTM add to the LSTM cell?",
    "How does Hartman treat his clerk at Christmas?",
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(store: Path, base_url: str) -> Any:
    from selfroute.cli import build_parser
    from selfroute.cli._commands import settings_for

    args = build_parser("serve").parse_args(
        [
            "serve",
            "--store",
            str(store),
            "--base-url",
            base_url,
            "--model",
            "m",
            "--max-concurrency",
            "64",
        ]
    )
    return settings_for(args, "serve")


async def _latencies(ask: Callable[[str], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        await ask(QUESTIONS[i % len(QUESTIONS)])
        out.append(time.perf_counter() - t0)
    return out


async def _throughput(ask: Callable[[str], Awaitable[Any]], n: int, c: int) -> float:
    semaphore = asyncio.Semaphore(c)

    async def one(i: int) -> None:
        async with semaphore:
            await ask(QUESTIONS[i % len(QUESTIONS)])

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    return n / (time.perf_counter() - t0)


def _serve(store: Path, base_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "ANONYMIZED_TELEMETRY": "False"}
    cmd = [
        sys.executable,
        "-m",
        "selfroute",
        "serve",
        "--store",
        str(store),
        "--base-url",
        base_url,
    ]
    cmd += ["--model", "m", "--port", str(port), "--max-concurrency", "64"]
    return subprocess.Popen(
        cmd, env=env, cwd=store, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _cpu_s(pid: int) -> float | None:
    """CPU seconds (user + system) process ``pid`` has used, or ``None`` off Linux."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _cpu_per_question(
    ask: Callable[[str], Awaitable[Any]], n: int, cpu: Callable[[], float | None]
) -> float | None:
    """CPU seconds per question (``cpu()`` before and after ``n`` sequential questions)."""
    before = cpu()
    await _latencies(ask, n)
    after = cpu()
    return None if before is None or after is None else (after - before) / n


async def _measure(
    store: Path, base_url: str, url: str, n: int, n_tp: int, pid: int
) -> dict[str, Any]:
    import httpx

    from selfroute._serve._clients import AsyncOpenAIChat
    from selfroute._serve._commands import build_service
    from selfroute.cli._openai import OpenAIChat

    service = build_service(_settings(store, base_url), None)
    bare = AsyncOpenAIChat.of(OpenAIChat("m", api_key="x", base_url=base_url, max_retries=0))
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=64)) as http:

        async def via_serve(q: str) -> None:
            body = {"model": "selfroute", "messages": [{"role": "user", "content": q}]}
            reply = await http.post(f"{url}/v1/chat/completions", json=body)
            reply.raise_for_status()

        for q in QUESTIONS:  # warm both paths
            await service.answer(q)
            await via_serve(q)
        inproc: list[float] = []
        served: list[float] = []
        for _ in range(2):  # interleaved rounds: drift hits both alike
            inproc += await _latencies(service.answer, n // 2)
            served += await _latencies(via_serve, n // 2)
        # CPU per question, which machine load does not inflate much (unlike latencies): the
        # flow in this process (its only work then), and the whole serve process
        cpu_inproc = await _cpu_per_question(service.answer, n // 2, time.process_time)
        cpu_served = await _cpu_per_question(via_serve, n // 2, lambda: _cpu_s(pid))
        ceiling = await _throughput(bare.agenerate, n_tp, 32)
        inproc_tp = await _throughput(service.answer, n_tp, 32)
        cpu0, wall0 = _cpu_s(pid), time.perf_counter()
        through = await _throughput(via_serve, n_tp, 32)
        cpu1, wall1 = _cpu_s(pid), time.perf_counter()
    busy = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / (wall1 - wall0)
    await service.aclose()
    await bare.aclose()
    return {
        "inproc": inproc,
        "served": served,
        "ceiling": ceiling,
        "inproc_tp": inproc_tp,
        "through": through,
        "cpu_inproc": cpu_inproc,
        "cpu_served": cpu_served,
        "busy": busy,
    }


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    import httpx

    from selfroute.stores import DocumentStore

    n, n_tp = (8, 32) if ctx.quick else (200, 640)
    result = BenchResult(KEY, TITLE)
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-serve-") as tmp:
        docs = Path(tmp) / "docs"
        shutil.copytree(DOCS, docs)
        store = Path(tmp) / "store"
        DocumentStore(store, embedding="offline").index([docs])
        with loopback_openai_process(latency_s=LATENCY_S) as model:
            port = _free_port()
            proc = _serve(store, model.base_url, port)
            url = f"http://127.0.0.1:{port}"
            try:
                deadline = time.monotonic() + 120
                while True:
                    try:
                        if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                            break
                    except httpx.HTTPError:
                        if time.monotonic() > deadline or proc.poll() is not None:
                            raise RuntimeError("selfroute serve did not start") from None
                    time.sleep(0.2)
                m = asyncio.run(_measure(store, model.base_url, url, n, n_tp, proc.pid))
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
    for q, label in ((50, "p50"), (95, "p95")):
        base, ours = percentile(m["inproc"], q), percentile(m["served"], q)
        added = ours - base
        target = label == "p50"
        result.rows.append(
            Row(
                f"latency per question {label} (added by serve)",
                fmt_ms(base),
                fmt_ms(ours),
                f"{added * 1000:+.1f} ms",
                "<= +5 ms" if target else "",
                (added <= 0.005) if target else None,
            )
        )
    share = m["through"] / m["ceiling"]
    result.rows.append(
        Row(
            "throughput at c=32 (questions/s vs the model server's ceiling)",
            f"{m['ceiling']:.0f}/s",
            f"{m['through']:.0f}/s",
            f"{share:.2f}",
            ">= 0.90",
            share >= 0.9,
        )
    )
    result.rows.append(
        Row(
            "throughput at c=32 (questions/s vs the same flow in process)",
            f"{m['inproc_tp']:.0f}/s",
            f"{m['through']:.0f}/s",
            f"{m['through'] / m['inproc_tp']:.2f}",
        )
    )
    if m["cpu_inproc"] is not None and m["cpu_served"] is not None:
        result.rows.append(
            Row(
                "CPU per question (in process: the flow; serve: the whole server process)",
                fmt_ms(m["cpu_inproc"]),
                fmt_ms(m["cpu_served"]),
                f"{m['cpu_served'] / m['cpu_inproc']:.2f}",
            )
        )
        # one event loop in one process: its throughput cannot pass 1 / its CPU per question
        bound = 1 / m["cpu_served"]
        result.rows.append(
            Row(
                "throughput at c=32 vs one core's bound for serve (1 / its CPU per question)",
                f"{bound:.0f}/s",
                f"{m['through']:.0f}/s",
                f"{m['through'] / bound:.2f}",
            )
        )
    if m["busy"] is not None:
        result.rows.append(
            Row(
                "serve process CPU during the c=32 run (cores busy)",
                "",
                f"{m['busy']:.2f}",
                "",
            )
        )
    result.notes.append(
        f"{n} sequential questions per path (interleaved), {n_tp} at c=32; model latency "
        f"{LATENCY_S * 1000:.0f} ms; serve is a child process (uvicorn, one worker) asked with "
        "httpx; the baseline is the same RouteService in process."
    )
    return result
