"""11. Tracing: what the OpenTelemetry hooks cost when tracing is off, and what spans cost when on.

The drivers report every step to the flow's trace; with tracing off that is :data:`OFF`, whose
methods do nothing. The benchmark runs the core flow with a zero-latency handler (constant
passages, a constant model answer, a word-count tokenizer: the cheapest call there is, so any
hook cost shows as much as it can) and measures, in the same run:

* the call with tracing off (p50 over many calls);
* the hooks themselves: the exact sequence of trace calls one such run makes (``start_trace``,
  and per step ``start``/``active``/``done``, then ``finish``/``close``), replayed in a loop
  (p50 per call). The baseline is the call minus that: the call as it would be without hooks.
  Targets: off costs <= 2% of the cheapest core call, <= 0.5% of a LangChain ``SelfRoute.invoke``
  with a zero-latency model and retriever;
* with tracing on (the SDK's in-memory exporter, when ``opentelemetry-sdk`` is installed), paired
  and interleaved with the off call (info: the price of the spans themselves).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import BenchContext, BenchResult, Row, fmt_ms, percentile, ratio_row

__all__ = ["hook_replay", "run"]

KEY, TITLE = "11", "Tracing: OpenTelemetry hooks with tracing off, and spans with it on"
TARGET_CORE_RATIO = 1.02
TARGET_ADAPTER_RATIO = 1.005
QUESTION = "How long did the keeper keep the lamp?"


class _Words:
    source = "tokenizer"
    name = "words"

    def count(self, text: str) -> int:
        return text.count(" ") + 1

    def head(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split(" ")[:max_tokens])

    def tail(self, text: str, max_tokens: int) -> str:
        return " ".join(text.split(" ")[-max_tokens:]) if max_tokens else ""


def _handler() -> Any:
    import selfroute as sr

    passages = [
        sr.Passage(text=f"Passage {i}: the keeper kept the lamp for {i + 30} years.", doc_id="d")
        for i in range(5)
    ]
    return sr.FunctionHandler(
        retrieve=lambda q, k: passages[:k],
        generate=lambda prompt: sr.Generation("Thirty-one years.", usage=sr.Usage.of(100, 3)),
        long_context="The keeper kept the lamp for thirty-one years. " * 200,
    )


def _caller(tracing: Any) -> Callable[[], Any]:
    import selfroute as sr
    import selfroute.flow as srflow

    config = sr.RouteConfig(token_counter=_Words(), tracing=tracing)
    handler = _handler()
    return lambda: srflow.run_flow(srflow.self_route_flow(QUESTION, config), handler)


def hook_replay(steps: list[Any], result: Any) -> Callable[[], None]:
    """One call's trace calls with tracing off, as the drivers make them."""
    import selfroute.flow as srflow
    from selfroute._flow._tracing import start_trace

    flow = srflow.self_route_flow(QUESTION)

    def replay() -> None:
        trace = start_trace(flow)
        for step in steps:
            span = trace.start(step)
            with trace.active(span):
                pass
            trace.done(span, step, None)
        trace.finish(result)
        trace.close()

    return replay


def _steps_of_one_call() -> tuple[list[Any], Any]:
    """The steps one off call yields (what the hooks are called with) and its result."""
    import selfroute as sr
    import selfroute.flow as srflow

    config = sr.RouteConfig(token_counter=_Words())
    handler = _handler()
    flow = srflow.self_route_flow(QUESTION, config)
    steps: list[Any] = []
    result = None
    for event in srflow.drive(_Recording(flow, steps), handler):  # type: ignore[arg-type]
        if isinstance(event, srflow.ResultEvent):
            result = event.result
    return steps, result


class _Recording:
    """A flow that records each step it yields (a plain wrapper: its runs are not traced)."""

    def __init__(self, flow: Any, steps: list[Any]) -> None:
        self.flow, self.steps = flow, steps

    def send(self, value: Any) -> Any:
        step = self.flow.send(value)
        self.steps.append(step)
        return step

    def throw(self, exc: BaseException) -> Any:
        step = self.flow.throw(exc)
        self.steps.append(step)
        return step


def _langchain_route() -> Callable[[], Any] | None:
    """``SelfRoute.invoke`` on one question, zero-latency model and retriever (or ``None``
    without the LangChain extra)."""
    try:
        from benchmarks.bench_overhead import build_langchain
    except ImportError:  # pragma: no cover - the langchain extra is missing
        return None
    text = "The keeper kept the lamp for thirty-one years. " * 600
    route = build_langchain(text, constant_retriever=True)[2]
    return lambda: route.invoke(QUESTION)


def _timed(fn: Callable[[], Any], n: int) -> list[float]:
    clock = time.perf_counter
    out = []
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def _paired(a: Callable[[], Any], b: Callable[[], Any], n: int) -> tuple[list[float], list[float]]:
    ta: list[float] = []
    tb: list[float] = []
    clock = time.perf_counter
    for i in range(n):
        pair = ((a, ta), (b, tb))
        for fn, out in pair if i % 2 == 0 else pair[::-1]:
            t0 = clock()
            fn()
            out.append(clock() - t0)
    return ta, tb


def _sdk_provider() -> tuple[Any, Any] | None:
    """``(TracerProvider, its in-memory exporter)``, or ``None`` without the SDK."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return None
    provider = TracerProvider()
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    n = 300 if ctx.quick else 5000
    result = BenchResult(KEY, TITLE)
    off = _caller(False)
    steps, routed = _steps_of_one_call()
    replay = hook_replay(steps, routed)
    for _ in range(50 if ctx.quick else 300):  # warm-up
        off()
        replay()
    calls = _timed(off, n)
    hooks = _timed(replay, n)
    call50, hook50 = percentile(calls, 50), percentile(hooks, 50)
    ctx.log(f"  [11] off call p50 {call50 * 1e6:.1f} us, its hooks {hook50 * 1e6:.2f} us")
    result.rows.append(
        ratio_row(
            f"tracing off, core: p50 per call vs the same call without its hooks ({n} calls, "
            f"{len(steps)} steps each)",
            call50 - hook50,
            call50,
            target=TARGET_CORE_RATIO,
            fmt=fmt_ms,
        )
    )
    result.rows.append(
        Row(
            "tracing off: the hooks of one call (p50, replayed)",
            "",
            f"{hook50 * 1e6:.2f} us",
            f"{hook50 / call50 * 100:.2f}% of the core call",
        )
    )
    adapter = _langchain_route()
    if adapter is not None:
        for _ in range(20 if ctx.quick else 100):
            adapter()
        lc50 = percentile(_timed(adapter, max(100, n // 10)), 50)
        result.rows.append(
            ratio_row(
                "tracing off, LangChain SelfRoute.invoke: p50 vs the same call without its hooks",
                lc50 - hook50,
                lc50,
                target=TARGET_ADAPTER_RATIO,
                fmt=fmt_ms,
            )
        )
    sdk = _sdk_provider()
    if sdk is None:
        result.notes.append("opentelemetry-sdk is not installed: tracing-on rows skipped.")
        return result
    provider, exporter = sdk
    on_call = _caller(provider)

    def on() -> None:
        on_call()
        exporter.clear()

    b, o = _paired(off, on, max(50, n // 5))
    result.rows.append(
        ratio_row(
            "tracing on (SDK, in-memory exporter) vs off: p50 per call (info)",
            percentile(b, 50),
            percentile(o, 50),
            target=None,
            fmt=fmt_ms,
        )
    )
    result.notes.append(
        "Zero-latency handler and word-count tokenizer: the cheapest possible call, so the "
        "hooks' share is an upper bound; with a real model (hundreds of ms) it is far smaller. "
        "Tracing on costs the SDK's span creation and export of 4-5 spans per question."
    )
    return result
