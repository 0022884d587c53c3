"""Batch pricing: mark a result's steps as batched, and the cost table against the references."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from selfroute._flow._finish import long_context_cost
from selfroute._pricing import PriceTable
from selfroute._result import RouteResult

__all__ = ["BatchCostReport", "batch_cost_report", "mark_batch"]


def mark_batch(result: RouteResult, prices: PriceTable | None) -> RouteResult:
    """``result`` with every step marked ``batch=True`` and ``cost`` at the batch rate.

    ``long_context_cost`` (the always-LC counterfactual) stays at the online rate, as the flow
    priced it.
    """
    steps = tuple(replace(s, batch=True) for s in result.steps)
    cost = result.cost
    if prices is not None:
        known = [
            c for c in (prices.cost(s.model, s.usage, batch=True) for s in steps) if c is not None
        ]
        cost = sum(known) if known else None
    return replace(result, steps=steps, cost=cost)


def _always_lc(
    result: RouteResult, prices: PriceTable, lc_model: str | None
) -> tuple[float | None, float | None]:
    """(online, batch) cost of answering ``result``'s question with long context only (the
    counterfactual the flow prices)."""
    tokens = result.long_context_tokens
    if tokens is None:
        return None, None
    online = long_context_cost(result.steps, prices, tokens, lc_model)
    return online, long_context_cost(result.steps, prices, tokens, lc_model, batch=True)


def _add(total: float | None, value: float | None) -> float | None:
    if value is None:
        return total
    return (total or 0.0) + value


@dataclass(frozen=True)
class BatchCostReport:
    """What a batch run cost against the three references.

    Attributes:
        questions: Results priced.
        self_route_batch: Self-Route through the batch API (what was spent).
        self_route_online: The same calls at online prices.
        always_lc_online: Every question answered with long context, online.
        always_lc_batch: Every question answered with long context, through the batch API.
        currency: The price table's currency.
    """

    questions: int
    self_route_batch: float | None
    self_route_online: float | None
    always_lc_online: float | None
    always_lc_batch: float | None
    currency: str = "USD"

    def rows(self) -> list[tuple[str, float | None, float | None]]:
        """``(label, cost, share of always-LC online)`` per line of the table."""
        base = self.always_lc_online
        lines = [
            ("always long context, online", self.always_lc_online),
            ("always long context, batch", self.always_lc_batch),
            ("Self-Route, online", self.self_route_online),
            ("Self-Route, batch", self.self_route_batch),
        ]
        return [
            (label, cost, (cost / base) if cost is not None and base else None)
            for label, cost in lines
        ]

    def to_markdown(self) -> str:
        """The table as Markdown."""
        out = [
            f"| {self.questions} questions | cost ({self.currency}) | vs always-LC online |",
            "|---|---:|---:|",
        ]
        for label, cost, share in self.rows():
            money = f"{cost:.4f}" if cost is not None else "n/a"
            ratio = f"{share:.1%}" if share is not None else "n/a"
            out.append(f"| {label} | {money} | {ratio} |")
        return "\n".join(out)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "questions": self.questions,
            "currency": self.currency,
            "self_route_batch": self.self_route_batch,
            "self_route_online": self.self_route_online,
            "always_lc_online": self.always_lc_online,
            "always_lc_batch": self.always_lc_batch,
        }


def batch_cost_report(
    results: Iterable[RouteResult], prices: PriceTable, *, long_context_model: str | None = None
) -> BatchCostReport:
    """Price ``results`` (batch-run or online) at batch and online rates.

    Args:
        results: Route results (a failed question's partial result counts what it spent).
        prices: The price table (its ``batch`` prices or ``batch_discount``).
        long_context_model: Model that prices the always-LC counterfactual of questions no LC
            call answered (defaults to the RAG model, as the flow does).
    """
    batch = online = lc_online = lc_batch = None
    count = 0
    for r in results:
        count += 1
        for s in r.steps:
            online = _add(online, prices.cost(s.model, s.usage))
            batch = _add(batch, prices.cost(s.model, s.usage, batch=True))
        lc_on, lc_b = _always_lc(r, prices, long_context_model)
        lc_online, lc_batch = _add(lc_online, lc_on), _add(lc_batch, lc_b)
    return BatchCostReport(count, batch, online, lc_online, lc_batch, prices.currency)


def results_of(outcomes: Sequence[Any]) -> list[RouteResult]:
    """The route results (or partial results) of batch outcomes."""
    out = []
    for o in outcomes:
        r = o.result if o.result is not None else o.partial
        if r is not None:
            out.append(r)
    return out
