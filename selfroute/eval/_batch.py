"""``selfroute eval --batch``: Self-Route on a labelled set through a batch job, priced.

The Self-Route method runs as one :class:`~selfroute.BatchJob` (one batch per phase) with the
harness's BM25 retrieval and long context. Readers that call no model (the oracle readers)
answer through :class:`~selfroute.LocalBatchBackend` -- a batch provider simulated in this
process, so the run prices a batch job offline; a chat-model reader goes through its provider's
batch API (OpenAI or Gemini). The report scores the answers as the harness does and prices the
run against always-LC online, always-LC batch and Self-Route online.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from selfroute._batch import (
    BatchCostReport,
    BatchEvent,
    BatchItem,
    BatchJob,
    BatchOutcome,
    BatchRequest,
    LocalBatchBackend,
    batch_cost_report,
)
from selfroute._batch._ledger import results_of
from selfroute._flow import RouteConfig, validate_question
from selfroute._pricing import PriceTable
from selfroute._result import Route
from selfroute.eval._data import EvalItem
from selfroute.eval._readers import Reader
from selfroute.eval._records import RunRecord
from selfroute.eval._runner import BM25Retriever
from selfroute.eval._session import FlowHandler, Session, score_record

__all__ = ["BatchEvalReport", "evaluate_batch", "run_batch_eval"]


@dataclass(frozen=True)
class BatchEvalReport:
    """What a batch evaluation came to.

    Attributes:
        outcomes: One per item, in order.
        score: Mean score over the items (failed items score 0).
        answerable_ratio: Share of items answered from the chunks.
        batches: Batches submitted.
        cost: The cost table (``None`` without prices).
    """

    outcomes: tuple[BatchOutcome, ...]
    score: float
    answerable_ratio: float
    batches: int
    cost: BatchCostReport | None

    def to_text(self) -> str:
        """A short report (Markdown table included)."""
        failed = sum(1 for o in self.outcomes if not o.ok)
        lines = [
            f"Self-Route through a batch job: {len(self.outcomes)} questions, {self.batches} "
            f"batches, {failed} failed",
            f"score {100 * self.score:.1f}, answerable ratio {self.answerable_ratio:.1%}",
        ]
        if self.cost is not None:
            lines += ["", self.cost.to_markdown()]
        return "\n".join(lines)


def _reader_backend(handlers: dict[str, FlowHandler], reader: Reader) -> LocalBatchBackend:
    async def answer(request: BatchRequest) -> Any:
        item_id = request.key.rpartition("#")[0]
        return await handlers[item_id].agenerate(request.step)

    return LocalBatchBackend(answer, model=reader.model_name, name="local")


def evaluate_batch(
    items: Sequence[EvalItem],
    *,
    reader: Reader,
    lc_reader: Reader | None = None,
    k: int = 5,
    config: RouteConfig | None = None,
    prices: PriceTable | None = None,
    backend: Any = None,
    job_file: str | os.PathLike[str] | None = None,
    poll_interval_s: float | None = 0.0,
    on_event: Callable[[BatchEvent], None] | None = None,
) -> BatchEvalReport:
    """Run Self-Route on ``items`` as one batch job and score and price it.

    Args:
        items: The labelled items.
        reader: The RAG-step reader; ``lc_reader`` the long-context one (default ``reader``).
        k: Chunks per RAG step.
        config: Flow settings (``k`` and ``prices`` are set from the arguments).
        prices: Price table for the cost table.
        backend: A batch backend; default: the in-process one answering with the readers.
        job_file: Job state file (resumable).
        poll_interval_s: Pause between polls (``None``: ``SELFROUTE_BATCH_POLL_S``, else 30 s).
        on_event: Progress callback.
    """
    lc_reader = lc_reader or reader
    cfg = replace(config or RouteConfig(), k=k, prices=prices)
    session = Session(
        reader, lc_reader, cfg, BM25Retriever(chunk_words=cfg.chunk_words), None, prices, "record"
    )
    by_id: dict[str, EvalItem] = {}
    batch_items = []
    for i, item in enumerate(items):
        ident = f"{i}:{item.id}" if getattr(item, "id", None) else str(i)
        by_id[ident] = item
        batch_items.append(BatchItem(ident, item.question, item))
    handlers = {  # the question as the online harness passes it (validated, stripped)
        ident: FlowHandler(session, item, validate_question(item.question), [], "self_route")
        for ident, item in by_id.items()
    }
    chosen = backend if backend is not None else _reader_backend(handlers, reader)
    job = BatchJob(
        batch_items,
        handler=lambda it: handlers[it.id],
        backend=chosen,
        config=cfg,
        job_file=job_file,
        poll_interval_s=poll_interval_s,
        on_event=on_event,
    )
    outcomes = asyncio.run(job.aresults())
    scores, from_chunks = [], 0
    for outcome in outcomes:
        item = by_id[outcome.id]
        record = RunRecord(item=item, method="self_route", k=k, calls=[])
        if outcome.result is not None:
            record.prediction = outcome.result.answer
            record.abstained = outcome.result.abstained
            from_chunks += outcome.result.route is Route.RAG and outcome.result.answered_from_chunks
        scores.append(score_record(item, record, cfg.prompts))
    cost = None
    if prices is not None:
        cost = batch_cost_report(
            results_of(outcomes), prices, long_context_model=lc_reader.model_name
        )
    submitted = getattr(chosen, "submitted", None)
    return BatchEvalReport(
        outcomes=tuple(outcomes),
        score=sum(scores) / len(scores) if scores else 0.0,
        answerable_ratio=from_chunks / len(outcomes) if outcomes else 0.0,
        batches=len(submitted) if submitted is not None else job.status().phase,
        cost=cost,
    )


def _model_backend(reader: Reader, lc_reader: Reader) -> Any:
    """The provider batch backend of chat-model readers (through the LangChain adapter)."""
    from langchain_selfroute._batch import batch_backend_for

    return batch_backend_for(getattr(reader, "model", None), getattr(lc_reader, "model", None))


def run_batch_eval(
    items: Sequence[EvalItem],
    args: Any,
    reader: Reader,
    lc_reader: Reader,
    config: RouteConfig,
    prices: PriceTable | None,
) -> int:
    """``selfroute eval --batch``: print the report, write it to ``--out``; the exit code."""
    import json
    import sys
    from pathlib import Path

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    backend = None
    if getattr(reader, "cacheable", False) and hasattr(reader, "model"):
        backend = _model_backend(reader, lc_reader)
    items = list(items)[: args.limit] if args.limit else list(items)

    def progress(event: BatchEvent) -> None:
        if event.kind != "polled" and not args.no_progress:
            print(f"[batch] {event.message}", file=sys.stderr, flush=True)

    report = evaluate_batch(
        items,
        reader=reader,
        lc_reader=lc_reader,
        k=args.k[0],
        config=config,
        prices=prices,
        backend=backend,
        job_file=out / "batch-job.json",
        poll_interval_s=0.0 if backend is None else None,  # a provider: SELFROUTE_BATCH_POLL_S
        on_event=progress,
    )
    print(report.to_text())
    data = {
        "score": report.score,
        "answerable_ratio": report.answerable_ratio,
        "batches": report.batches,
        "cost": report.cost.to_dict() if report.cost is not None else None,
        "outcomes": [o.to_dict() for o in report.outcomes],
    }
    path = out / "batch-report.json"
    path.write_text(json.dumps(data, indent=1, default=str), encoding="utf-8")
    print(f"Wrote: {path}")
    return 0
