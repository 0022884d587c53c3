"""2. Concurrency: ``abatch`` / ``aquery`` against a loopback OpenAI-compatible server (50 ms).

200 RAG-routed questions (one model call each) through the real clients (``ChatOpenAI``,
LlamaIndex ``OpenAI``) against ``tests.support.openai_server.ScriptedOpenAIServer(latency_s=0.05)``
at concurrency 1, 8 and 32. Efficiency = ideal wall time (ceil(requests / concurrency) x 50 ms) / measured
wall time. The plain pipeline (sequential LCEL chain ``abatch``; ``RetrieverQueryEngine.aquery``)
runs in the same process against the same server as the baseline.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from benchmarks._common import BenchContext, BenchResult, Row, fmt_pct, markdown_table
from benchmarks._fakes import document_and_questions, reply_for

__all__ = ["LATENCY_S", "run"]

KEY, TITLE = "2", "Concurrency: abatch / aquery against a 50 ms loopback OpenAI server"
LATENCY_S = 0.05
LEVELS = (1, 8, 32)
TARGET = 0.80


def _server() -> Any:
    from tests.support._loopback import prompt_text
    from tests.support.openai_server import Reply, ScriptedOpenAIServer

    return ScriptedOpenAIServer(
        lambda body: Reply(reply_for(prompt_text(body))), latency_s=LATENCY_S
    )


async def _gather(
    fn: Callable[[str], Awaitable[Any]], questions: Sequence[str], limit: int
) -> None:
    semaphore = asyncio.Semaphore(limit)

    async def one(q: str) -> None:
        async with semaphore:
            await fn(q)

    await asyncio.gather(*(one(q) for q in questions))


async def _timed(coro_factory: Callable[[], Awaitable[Any]]) -> float:
    t0 = time.perf_counter()
    await coro_factory()
    return time.perf_counter() - t0


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    from benchmarks.bench_overhead import build_langchain, build_llamaindex
    from tests.support.clients import chat_openai, llamaindex_openai

    n = 8 if ctx.quick else 200
    levels = (1, 4) if ctx.quick else LEVELS
    text, questions = document_and_questions(ctx.data, 10_000, n)
    result = BenchResult(KEY, TITLE)
    table = []
    with _server() as server:
        chain, _, route = build_langchain(text, llm=chat_openai(server, timeout=30))
        engine_base, engine = build_llamaindex(text, llm=llamaindex_openai(server, timeout=30))
        pipelines: list[
            tuple[str, Callable[[int], Awaitable[Any]], Callable[[int], Awaitable[Any]]]
        ]
        pipelines = [
            (
                "LangChain abatch",
                lambda c: chain.abatch(questions, config={"max_concurrency": c}),
                lambda c: route.abatch(questions, config={"max_concurrency": c}),
            ),
            (
                "LlamaIndex aquery",
                lambda c: _gather(engine_base.aquery, questions, c),
                lambda c: _gather(engine.aquery, questions, c),
            ),
        ]

        async def measure() -> list[tuple[str, int, float, float, int, int]]:
            rows = []
            for name, base_fn, ours_fn in pipelines:
                if not ctx.quick:  # warm up connections and lazy imports
                    await _timed(lambda b=base_fn: b(8))
                    await _timed(lambda o=ours_fn: o(8))
                for level in levels:
                    b_wall = await _timed(lambda b=base_fn, c=level: b(c))
                    before = server.calls
                    server.max_in_flight = 0
                    o_wall = await _timed(lambda o=ours_fn, c=level: o(c))
                    rows.append(
                        (name, level, b_wall, o_wall, server.calls - before, server.max_in_flight)
                    )
            return rows

        # One event loop for everything: the clients' connection pools belong to it.
        measured = asyncio.run(measure())
    for name, level, b_wall, o_wall, calls, in_flight in measured:
        ideal = math.ceil(n / level) * LATENCY_S
        b_eff, o_eff = ideal / b_wall, ideal / o_wall
        ctx.log(
            f"  [2] {name} c={level}: ideal {ideal:.2f}s, baseline {b_wall:.2f}s "
            f"({fmt_pct(b_eff)}), ours {o_wall:.2f}s ({fmt_pct(o_eff)})"
        )
        table.append(
            [
                name,
                level,
                f"{ideal:.2f}",
                f"{b_wall:.2f} ({fmt_pct(b_eff)})",
                f"{o_wall:.2f} ({fmt_pct(o_eff)})",
                calls,
                in_flight,
            ]
        )
        target = level == max(LEVELS)  # only the full run reaches it
        result.rows.append(
            Row(
                f"{name}, concurrency {level}: efficiency (ideal / wall)",
                fmt_pct(b_eff),
                fmt_pct(o_eff),
                f"{o_eff / b_eff:.2f}",
                f">= {TARGET * 100:g}%" if target else "",
                (o_eff >= TARGET) if target else None,
            )
        )
    result.details.append(
        markdown_table(
            [
                "pipeline",
                "concurrency",
                "ideal s",
                "baseline s (eff.)",
                "Self-Route s (eff.)",
                "model calls",
                "peak in flight",
            ],
            table,
        )
    )
    result.notes.append(
        f"{n} RAG-routed questions, one 50 ms model call each; the baseline is the plain pipeline "
        "(sequential LCEL chain / RetrieverQueryEngine) over the same retriever and server."
    )
    return result
