"""2. Concurrency: ``abatch`` / ``aquery`` against a loopback OpenAI-compatible server (50 ms).

200 RAG-routed questions (one model call each) through the real clients (``ChatOpenAI``,
LlamaIndex ``OpenAI``) against ``tests.support.openai_server.ScriptedOpenAIServer`` (50 ms per
request, run in a child process so that its threads do not compete for the GIL with the event loop
being measured) at concurrency 1, 8 and 32. Efficiency = ideal wall time (ceil(requests /
concurrency) x 50 ms) / measured wall time. The plain pipeline (sequential LCEL chain ``abatch``;
``RetrieverQueryEngine.aquery``) and the bare model client run against the same server as
baselines.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from benchmarks._common import BenchContext, BenchResult, Row, fmt_pct, markdown_table
from benchmarks._fakes import document_and_questions, loopback_openai_process

__all__ = ["LATENCY_S", "run"]

KEY, TITLE = "2", "Concurrency: abatch / aquery against a 50 ms loopback OpenAI server"
LATENCY_S = 0.05
LEVELS = (1, 8, 32)
TARGET = 0.80


Runner = Callable[[int], Awaitable[Any]]


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
    with loopback_openai_process(latency_s=LATENCY_S) as server:
        chat = chat_openai(server, timeout=30)
        li_llm = llamaindex_openai(server, timeout=30)
        chain, _, route = build_langchain(text, llm=chat, constant_retriever=True)
        engine_base, engine = build_llamaindex(text, llm=li_llm, constant_retriever=True)
        prompt = f"Answer briefly: {questions[0]}"
        pipelines: list[tuple[str, Runner, Runner, Runner]] = [
            (
                "LangChain abatch",
                lambda c: _gather(chat.ainvoke, [prompt] * n, c),
                lambda c: chain.abatch(questions, config={"max_concurrency": c}),
                lambda c: route.abatch(questions, config={"max_concurrency": c}),
            ),
            (
                "LlamaIndex aquery",
                lambda c: _gather(li_llm.acomplete, [prompt] * n, c),
                lambda c: _gather(engine_base.aquery, questions, c),
                lambda c: _gather(engine.aquery, questions, c),
            ),
        ]

        async def measure() -> list[tuple[str, int, float, float, float]]:
            rows = []
            for name, bare_fn, base_fn, ours_fn in pipelines:
                if not ctx.quick:  # warm up connections and lazy imports
                    await _timed(functools.partial(base_fn, 8))
                    await _timed(functools.partial(ours_fn, 8))
                for level in levels:
                    bare = await _timed(functools.partial(bare_fn, level))
                    b_wall = await _timed(functools.partial(base_fn, level))
                    o_wall = await _timed(functools.partial(ours_fn, level))
                    rows.append((name, level, bare, b_wall, o_wall))
            return rows

        # One event loop for everything: the clients' connection pools belong to it.
        measured = asyncio.run(measure())
    for name, level, bare, b_wall, o_wall in measured:
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
                f"{bare:.2f} ({fmt_pct(ideal / bare)})",
                f"{b_wall:.2f} ({fmt_pct(b_eff)})",
                f"{o_wall:.2f} ({fmt_pct(o_eff)})",
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
        if target:
            result.rows.append(
                Row(
                    f"{name}, concurrency {level}: wall time, bare model client (ceiling) vs "
                    "Self-Route (info)",
                    f"{bare:.2f} s",
                    f"{o_wall:.2f} s",
                    f"{bare / o_wall:.2f} of ceiling",
                )
            )
    result.details.append(
        markdown_table(
            [
                "pipeline",
                "concurrency",
                "ideal s",
                "bare client s (eff.)",
                "baseline s (eff.)",
                "Self-Route s (eff.)",
            ],
            table,
        )
    )
    result.notes.append(
        f"{n} RAG-routed questions, one 50 ms model call each; the baseline is the plain pipeline "
        "(sequential LCEL chain / RetrieverQueryEngine) over the same zero-cost retriever (always "
        "the same 5 chunks, so that only the frameworks, the clients and the server are measured) "
        "and server. 'Bare client' is the model client alone (`ChatOpenAI.ainvoke` / LlamaIndex "
        "`OpenAI.acomplete` under the same concurrency limit): the ceiling any pipeline on this "
        "machine can reach, since the client's own CPU time per request (HTTP, JSON, pydantic) "
        "serialises on the event loop."
    )
    return result
