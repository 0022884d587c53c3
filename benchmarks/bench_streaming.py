"""3. Streaming: time to first token of Self-Route versus the plain RAG chain streaming the same model.

A loopback OpenAI-compatible server (``ScriptedOpenAIServer(latency_s=0.05, token_delay_s=0.02)``:
50 ms to the first byte, then one word every 20 ms) serves the real clients (``ChatOpenAI``,
LlamaIndex ``OpenAI``). Time to first token (TTFT) = from the call to the first non-empty answer
text the caller receives. Self-Route holds back RAG text while it could still be the start of the
sentinel, so its TTFT is the plain chain's plus the held-back words. For LC-routed questions (the
RAG step streams the sentinel, then the long-context model streams the answer) the benchmark
reports the time to the first long-context token against the plain chain's TTFT.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from benchmarks._common import BenchContext, BenchResult, fmt_ms, percentile, ratio_row
from benchmarks._fakes import (
    HEDGE_MARKER,
    LC_MARKER,
    document_and_questions,
    loopback_openai,
    reply_for,
)

__all__ = ["run", "ttft"]

KEY, TITLE = "3", "Streaming: time to first token versus the plain RAG chain"
TARGET = 1.10
LATENCY_S = 0.05
TOKEN_DELAY_S = 0.02


def ttft(stream: Callable[[], Iterable[Any]], text_of: Callable[[Any], str]) -> float:
    """Seconds until ``stream()`` yields its first item with non-empty text (drains the rest)."""
    t0 = time.perf_counter()
    first: float | None = None
    for item in stream():
        if first is None and text_of(item):
            first = time.perf_counter() - t0
    if first is None:
        raise RuntimeError("the stream produced no text")
    return first


def _lc_text(chunk: Any) -> str:
    return chunk if isinstance(chunk, str) else (getattr(chunk, "text", None) or "")


def _series(
    questions: Sequence[str], base: Callable[[str], float], ours: Callable[[str], float]
) -> tuple[float, float]:
    b = [base(q) for q in questions]
    o = [ours(q) for q in questions]
    return percentile(b, 50), percentile(o, 50)


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    from benchmarks.bench_overhead import build_langchain, build_llamaindex
    from tests.support.clients import chat_openai, llamaindex_openai

    n = 1 if ctx.quick else 20
    text, questions = document_and_questions(ctx.data, 10_000, 3 * n)
    rag_q = questions[:n]
    lc_q = [f"{q} {LC_MARKER}" for q in questions[n : 2 * n]]
    hedge_q = [f"{q} {HEDGE_MARKER}" for q in questions[2 * n :]]
    result = BenchResult(KEY, TITLE)
    with loopback_openai(latency_s=LATENCY_S, token_delay_s=TOKEN_DELAY_S) as server:
        chain, _, route = build_langchain(text, llm=chat_openai(server))
        base_li, engine = build_llamaindex(text, llm=llamaindex_openai(server), streaming=True)

        def lc_base(q: str) -> float:
            return ttft(lambda: chain.stream(q), _lc_text)

        def lc_ours(q: str) -> float:
            return ttft(lambda: route.stream(q), _lc_text)

        def li_base(q: str) -> float:
            return ttft(lambda: base_li.query(q).response_gen, _lc_text)

        def li_ours(q: str) -> float:
            return ttft(lambda: engine.query(q).response_gen, _lc_text)

        for base, ours in ((lc_base, lc_ours), (li_base, li_ours)):  # warm up
            base(rag_q[0])
            ours(rag_q[0])
        pairs = (
            ("LangChain SelfRoute.stream vs LCEL chain.stream", lc_base, lc_ours),
            (
                "LlamaIndex SelfRouteQueryEngine vs RetrieverQueryEngine (streaming)",
                li_base,
                li_ours,
            ),
        )
        for name, base, ours in pairs:
            b50, o50 = _series(rag_q, base, ours)
            ctx.log(f"  [3] {name}: TTFT p50 {b50 * 1e3:.1f} -> {o50 * 1e3:.1f} ms")
            result.rows.append(
                ratio_row(f"{name}: TTFT p50, RAG-routed", b50, o50, target=TARGET, fmt=fmt_ms)
            )
            hb50, ho50 = _series(hedge_q, base, ours)
            result.rows.append(
                ratio_row(
                    f"{name}: TTFT p50, RAG-routed answer opening like a decline "
                    '("The answer is ...", info)',
                    hb50,
                    ho50,
                    target=None,
                    fmt=fmt_ms,
                )
            )
            lb50, lo50 = _series(lc_q, base, ours)
            result.rows.append(
                ratio_row(
                    f"{name}: first long-context token p50, LC-routed (info; the RAG step's "
                    "sentinel is streamed and withheld first)",
                    lb50,
                    lo50,
                    target=None,
                    fmt=fmt_ms,
                )
            )
    result.notes.append(
        f"{n} RAG-routed and {n} LC-routed questions; server: {LATENCY_S * 1e3:.0f} ms to first "
        f"byte, one word every {TOKEN_DELAY_S * 1e3:.0f} ms; answer "
        f"{len(reply_for('x').split())} words, starting with its content. Baselines: sequential LCEL chain and "
        "RetrieverQueryEngine(streaming=True) over the same retriever and server."
    )
    return result
