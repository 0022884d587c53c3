"""9. Batch jobs: the batch driver's overhead per question, and what a batch run costs.

Overhead: the same questions through the online sync driver (``run_flow``, one flow after the
other) and through :class:`selfroute.BatchJob` with an in-process batch provider
(:class:`selfroute.LocalBatchBackend`, answering at once with the same zero-latency function),
without and with a job file (the durable state, written atomically at every phase boundary),
and a rerun that resumes a finished job (every flow replayed from the job file, no provider
call). Same retrieval (BM25 over 30-word chunks), same model function, interleaved rounds. A real
batch takes minutes to hours, so the driver's own time only has to stay small next to the online
driver's.

Cost: Self-Route on the bundled SQuAD 2.0 sample (120 questions, three articles as one haystack)
with the oracle reader, run as one batch job (``selfroute eval --batch``), priced with
gpt-4o's list prices ($2.50 / $10 per million tokens, batch 50%) on both steps, against always-LC
online, always-LC batch and Self-Route online.
"""

from __future__ import annotations

import re
import statistics
import tempfile
import time
from pathlib import Path

import selfroute as sr
from benchmarks._common import BenchContext, BenchResult, Row, fmt_ms, ratio_row

__all__ = ["cost_table", "run"]

KEY, TITLE = "9", "Batch jobs: driver overhead per question and the cost table"
TARGET_RATIO = 1.5
PRICES = sr.PriceTable({"oracle": (2.5, 10.0)})
_ASKED = re.compile(r"item (\d+)\?")


def _workload(n: int) -> tuple[list[str], sr.FunctionHandler, sr.LocalBatchBackend]:
    facts = [f"The serial of item {i} is S{i * 31:05d}." for i in range(n)]
    text = " ".join(f"{f} Stock is counted at the end of each month by two clerks." for f in facts)
    index = sr.LexicalIndex.from_text(text, chunk_words=30)

    def model(prompt: str) -> str:
        i = int(_ASKED.findall(prompt)[-1])
        if "Document:" in prompt or (facts[i] in prompt and i % 2):
            return f"S{i * 31:05d}"
        return "unanswerable"

    handler = sr.FunctionHandler(
        retrieve=lambda q, k: index.search(q, k),
        generate=model,
        long_context=lambda q, passages: [p.text for p in passages],
    )
    backend = sr.LocalBatchBackend(lambda r: model(r.step.prompt))
    return [f"What is the serial of item {i}?" for i in range(n)], handler, backend


def _online(questions: list[str], handler: sr.FunctionHandler, cfg: sr.RouteConfig) -> float:
    t0 = time.perf_counter()
    for q in questions:
        sr.flow.run_flow(sr.flow.self_route_flow(q, cfg), handler)
    return time.perf_counter() - t0


def _batch(
    questions: list[str],
    handler: sr.FunctionHandler,
    backend: sr.LocalBatchBackend,
    cfg: sr.RouteConfig,
    job_file: Path | None,
) -> float:
    t0 = time.perf_counter()
    job = sr.BatchJob(
        questions,
        handler=handler,
        backend=backend,
        config=cfg,
        job_file=job_file,
        poll_interval_s=0,
    )
    outcomes = job.results()
    elapsed = time.perf_counter() - t0
    if not all(o.ok for o in outcomes):
        raise RuntimeError("a benchmark question failed")
    return elapsed


def _overhead(ctx: BenchContext) -> tuple[list[Row], str]:
    n, rounds = (60, 2) if ctx.quick else (400, 5)
    questions, handler, backend = _workload(n)
    cfg = sr.RouteConfig(k=3)
    times: dict[str, list[float]] = {"online": [], "memory": [], "file": [], "resume": []}
    _online(questions, handler, cfg)  # warm up (tokenizer, caches) outside the measurement
    _batch(questions, handler, backend, cfg, None)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            path = Path(tmp) / f"job{r}.json"
            times["online"].append(_online(questions, handler, cfg))
            times["memory"].append(_batch(questions, handler, backend, cfg, None))
            times["file"].append(_batch(questions, handler, backend, cfg, path))
            submitted = len(backend.submitted)
            times["resume"].append(_batch(questions, handler, backend, cfg, path))
            if len(backend.submitted) != submitted:
                raise RuntimeError("resuming a finished job submitted a batch")
            size = path.stat().st_size
    per = {k: statistics.median(v) / n for k, v in times.items()}
    base = per["online"]
    rows = [
        ratio_row(
            "per question: batch driver, in memory",
            base,
            per["memory"],
            target=TARGET_RATIO,
            fmt=fmt_ms,
        ),
        ratio_row(
            "per question: batch driver, job file",
            base,
            per["file"],
            target=TARGET_RATIO,
            fmt=fmt_ms,
        ),
        ratio_row(
            "per question: resume a finished job (replay)",
            base,
            per["resume"],
            target=TARGET_RATIO,
            fmt=fmt_ms,
        ),
    ]
    note = (
        f"{n} questions, {rounds} interleaved rounds, medians; baseline: `run_flow` (online sync "
        f"driver) on the same questions; job file after the run: {size / 1024:.0f} KiB "
        f"({size / n:.0f} bytes per question)."
    )
    return rows, note


def cost_table(limit: int | None = None) -> sr.BatchCostReport:
    """The cost table of the oracle reader's batch run on the bundled SQuAD sample."""
    from selfroute.eval import OracleReader, load_sample
    from selfroute.eval._batch import evaluate_batch

    items = load_sample()
    items = items[:limit] if limit else items
    report = evaluate_batch(items, reader=OracleReader(), k=5, prices=PRICES)
    assert report.cost is not None
    return report.cost


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    result = BenchResult(KEY, TITLE)
    rows, note = _overhead(ctx)
    result.rows += rows
    result.notes.append(note)
    cost = cost_table(30 if ctx.quick else None)
    base = cost.always_lc_online or 0.0
    for label, money, _share in cost.rows()[1:]:
        result.rows.append(
            Row(
                f"cost: {label} (SQuAD sample, oracle)",
                f"${base:.4f}",
                f"${money or 0:.4f}",
                f"{(money or 0) / base:.3f}" if base else "n/a",
            )
        )
    result.details.append(
        "Cost on the SQuAD 2.0 sample, oracle reader, gpt-4o prices on both steps "
        f"(baseline column: always-LC online):\n\n{cost.to_markdown()}"
    )
    return result
