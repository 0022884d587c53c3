"""3. Streaming: time to first token of Self-Route versus the plain RAG chain streaming the same model.

A loopback OpenAI-compatible server (``ScriptedOpenAIServer(latency_s=0.05, token_delay_s=0.02)``:
50 ms to the first byte, then one word every 20 ms) serves the real clients (``ChatOpenAI``,
LlamaIndex ``OpenAI``). Time to first token (TTFT) = from the call to the first non-empty answer
text the caller receives. Self-Route holds back RAG text while it could still be the start of the
sentinel, so its TTFT is the plain chain's plus the held-back words. For LC-routed questions (the
RAG step streams the sentinel, then the long-context model streams the answer) the benchmark
reports the time to the first long-context token against the plain chain's TTFT.

Structured verdicts (``verdict="structured"``: ``ChatOpenAI`` with a JSON-schema response format,
LlamaIndex ``OpenAI`` with a tool call) stream the ``answer`` string once ``answerable`` has
arrived, so their TTFT is the plain chain's plus the object's opening (``{"answerable": true,
"answer": "``). That opening is a fixed number of tokens, so the ratio depends on the server:
it is measured on the server above (info) and on a hosted-model profile (400 ms to the first
byte, a 4-character token every 10 ms, as small hosted models stream), where the target applies.
The time until the whole object has arrived -- when a held verdict showed its first token -- is
reported beside it, and so are the wire's floor (when the server sent the first event carrying
answer text: no client can show it sooner) and what the client adds after it. On the 50 ms server
the object's opening is three 20 ms events (``{"answerable":``, `` true,``, `` "answer":``) before
the first answer word, a floor of about (50 + 4 * 20) / (50 + 20) = 1.86x the plain stream's
first word; the client shows the text about a millisecond after the server sends it, as it
does for plain text.
"""

from __future__ import annotations

import functools
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
#: Structured verdicts: TTFT against the plain chain's stream of the same model.
STRUCTURED_TARGET = 1.25
#: ``(name, latency_s, token_delay_s, piece_chars, target)`` of the structured rows' servers.
STRUCTURED_PROFILES: tuple[tuple[str, float, float, int | None, float | None], ...] = (
    ("server above: 50 ms, a word every 20 ms (info)", LATENCY_S, TOKEN_DELAY_S, None, None),
    (
        "hosted-model profile: 400 ms, a 4-character token every 10 ms",
        0.4,
        0.01,
        4,
        STRUCTURED_TARGET,
    ),
)


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


def first_and_last(
    stream: Callable[[], Iterable[Any]], text_of: Callable[[Any], str]
) -> tuple[float, float]:
    """Seconds until ``stream()`` yields its first and its last item with non-empty text."""
    t0 = time.perf_counter()
    first: float | None = None
    last = 0.0
    for item in stream():
        if text_of(item):
            last = time.perf_counter() - t0
            first = last if first is None else first
    if first is None:
        raise RuntimeError("the stream produced no text")
    return first, last


def first_answer_sent(sent: Sequence[tuple[float, bytes]], *, structured: bool) -> float:
    """When the server sent the first stream event that carries answer text: plain content, or
    (``structured``) text of the object's ``answer`` string (content or tool-call argument
    deltas, read by the library's own object reader)."""
    import json

    from selfroute._structured_stream import VerdictStream

    preview = VerdictStream()
    for at, event in sent:
        body = event.decode("utf-8").strip()
        if not body.startswith("data:") or body.endswith("[DONE]"):
            continue
        for choice in json.loads(body[5:]).get("choices") or ():
            delta = choice.get("delta") or {}
            text = str(delta.get("content") or "")
            for call in delta.get("tool_calls") or ():
                text += str((call.get("function") or {}).get("arguments") or "")
            if preview.feed(text) if structured else text:
                return at
    raise RuntimeError("the server sent no answer text")


def wire_timed(
    server: Any,
    stream: Callable[[], Iterable[Any]],
    text_of: Callable[[Any], str],
    *,
    structured: bool,
) -> tuple[float, float]:
    """``(TTFT, when the server sent the first answer text)``, both from the call, in seconds."""
    server.sent = []
    t0 = time.perf_counter()
    first = ttft(stream, text_of)
    sent = first_answer_sent(server.sent, structured=structured) - t0
    server.sent = None
    return first, sent


def _wire_rows(
    ctx: BenchContext,
    name: str,
    profile: str,
    base: Sequence[tuple[float, float]],
    ours: Sequence[tuple[float, float]],
) -> list[Any]:
    """What the server's wire allows (no client shows text before the server sends it) and
    what the client adds after it, plain against structured."""
    b_wire = percentile([s for _, s in base], 50)
    o_wire = percentile([s for _, s in ours], 50)
    b_lag = percentile([f - s for f, s in base], 50)
    o_lag = percentile([f - s for f, s in ours], 50)
    ctx.log(
        f"  [3] {name} ({profile}): server sent the first answer text at {b_wire * 1e3:.1f} -> "
        f"{o_wire * 1e3:.1f} ms; shown {b_lag * 1e3:.2f} -> {o_lag * 1e3:.2f} ms after it"
    )
    return [
        ratio_row(
            f"{name}: when the server sent the first answer text p50 (the wire's floor: the "
            f"object's opening comes first; info); {profile}",
            b_wire,
            o_wire,
            target=None,
            fmt=fmt_ms,
        ),
        ratio_row(
            f"{name}: TTFT after the server sent the first answer text p50 (what the client "
            f"adds; info); {profile}",
            b_lag,
            o_lag,
            target=None,
            fmt=fmt_ms,
        ),
    ]


def _response_gen(engine: Any, question: str) -> Iterable[Any]:
    """A streaming LlamaIndex engine's text pieces for ``question``."""
    return engine.query(question).response_gen  # type: ignore[no-any-return]


def _structured_rows(ctx: BenchContext, text: str, questions: Sequence[str]) -> list[Any]:
    """TTFT of streamed structured verdicts against the plain chain, per server profile."""
    from benchmarks.bench_overhead import build_langchain, build_llamaindex
    from tests.support.clients import chat_openai, llamaindex_openai

    rows = []
    for profile, latency, delay, piece_chars, target in STRUCTURED_PROFILES:
        with loopback_openai(
            latency_s=latency, token_delay_s=delay, piece_chars=piece_chars
        ) as srv:
            chain, _, route = build_langchain(text, llm=chat_openai(srv), verdict="structured")
            base_li, engine = build_llamaindex(
                text, llm=llamaindex_openai(srv), streaming=True, verdict="structured"
            )
            pairs: tuple[
                tuple[str, Callable[[str], Iterable[Any]], Callable[[str], Iterable[Any]]], ...
            ] = (
                (
                    'LangChain SelfRoute.stream, verdict="structured" (JSON-schema response '
                    "format) vs LCEL chain.stream",
                    chain.stream,
                    route.stream,
                ),
                (
                    'LlamaIndex SelfRouteQueryEngine, verdict="structured" (tool call) vs '
                    "RetrieverQueryEngine (streaming)",
                    functools.partial(_response_gen, base_li),
                    functools.partial(_response_gen, engine),
                ),
            )
            for name, base, ours in pairs:
                first_and_last(functools.partial(base, questions[0]), _lc_text)  # warm up
                first_and_last(functools.partial(ours, questions[0]), _lc_text)
                b = [ttft(functools.partial(base, q), _lc_text) for q in questions]
                o = [first_and_last(functools.partial(ours, q), _lc_text) for q in questions]
                bw = [
                    wire_timed(srv, functools.partial(base, q), _lc_text, structured=False)
                    for q in questions
                ]
                ow = [
                    wire_timed(srv, functools.partial(ours, q), _lc_text, structured=True)
                    for q in questions
                ]
                b50 = percentile(b, 50)
                o50 = percentile([f for f, _ in o], 50)
                whole50 = percentile([w for _, w in o], 50)
                ctx.log(
                    f"  [3] {name} ({profile}): TTFT p50 {b50 * 1e3:.1f} -> {o50 * 1e3:.1f} ms "
                    f"(whole object {whole50 * 1e3:.1f} ms)"
                )
                rows.append(
                    ratio_row(
                        f"{name}: TTFT p50, RAG-routed; {profile}",
                        b50,
                        o50,
                        target=target,
                        fmt=fmt_ms,
                    )
                )
                rows.append(
                    ratio_row(
                        f"{name}: time until the whole object has arrived (a held verdict's "
                        f"first token, info); {profile}",
                        b50,
                        whole50,
                        target=None,
                        fmt=fmt_ms,
                    )
                )
                rows.extend(_wire_rows(ctx, name, profile, bw, ow))
    return rows


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
    result.rows.extend(_structured_rows(ctx, text, rag_q))
    result.notes.append(
        f"{n} RAG-routed and {n} LC-routed questions; server: {LATENCY_S * 1e3:.0f} ms to first "
        f"byte, one word every {TOKEN_DELAY_S * 1e3:.0f} ms; answer "
        f"{len(reply_for('x').split())} words, starting with its content. Baselines: sequential LCEL chain and "
        "RetrieverQueryEngine(streaming=True) over the same retriever and server."
    )
    result.notes.append(
        "Structured rows: the same RAG-routed questions; the model sends the "
        '{"answerable": true, "answer": "..."} object (JSON-schema content for ChatOpenAI, tool-call '
        "argument deltas for LlamaIndex OpenAI) and the baseline chain streams the plain answer "
        "from the same server; the whole-object row is when the last answer text arrived (the "
        "object then closes), which is when the verdict used to be shown."
    )
    return result
