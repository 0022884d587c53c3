"""The Table-1 style summary of an eval, built from its per-run records, and its Markdown report."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from selfroute._pricing import PriceTable
from selfroute._result import Stage
from selfroute._usage import Usage
from selfroute.eval._records import (
    METHOD_LABELS,
    SELF_ROUTE_METHODS,
    CallRecord,
    RunRecord,
    describe_policy,
    policy_of,
)
from selfroute.eval.metrics import normalize_answer

__all__ = [
    "CallRecord",
    "Comparison",
    "MethodSummary",
    "RunRecord",
    "Summary",
    "build_summary",
    "describe_policy",
    "figure_k",
    "format_pct",
    "policy_of",
    "render_markdown",
]


@dataclass(frozen=True)
class MethodSummary:
    """One row of the Table-1 style report.

    Attributes:
        method: ``lc``, ``rag`` or ``self_route``.
        k: Retrieval depth (``None`` for LC).
        items: Items run.
        score: ``round(100 * mean score, 2)`` (LongBench's convention).
        answerable_ratio: Self-Route only: share answered from the retrieved chunks.
        input_tokens: Input tokens over all items.
        output_tokens: Output tokens over all items.
        token_ratio: ``input_tokens`` / the LC baseline's input tokens (same items).
        cost: Money at the price table (``None`` when no call was priced).
        cost_complete: Every call had a price.
        latency_s: Mean model latency per item.
        calls: Reader calls.
        cached_calls: Of which served from the cache or shared within the run.
        errors: Runs that failed (scored 0).
        usage_source: ``provider``, ``tokenizer``, ``heuristic`` or ``mixed``.
        lc_calls: Self-Route only: long-context fallbacks.
        score_answerable: Score over the answerable items only (``None`` if there are none).
        score_unanswerable: Score over the unanswerable items only (``None`` if none).
        unanswerable_items: Items whose gold says the document does not answer.
        correct_declines: Of those, how many the method's final answer declined.
        declined_answerable: Answerable items the method declined (the price of declining).
        rag_calls: Self-Route only: RAG-step calls (more than ``items`` with a k-ladder, fewer
            with pre-routing).
        pre_routed: Self-Route only: items sent straight to long context by pre-routing.
    """

    method: str
    k: int | None
    items: int
    score: float
    answerable_ratio: float | None
    input_tokens: int
    output_tokens: int
    token_ratio: float | None
    cost: float | None
    cost_complete: bool
    latency_s: float
    calls: int
    cached_calls: int
    errors: int
    usage_source: str
    lc_calls: int | None = None
    score_answerable: float | None = None
    score_unanswerable: float | None = None
    unanswerable_items: int = 0
    correct_declines: int = 0
    declined_answerable: int = 0
    rag_calls: int | None = None
    pre_routed: int | None = None

    @property
    def label(self) -> str:
        """``LC``, ``RAG (k=5)``, ``Self-Route (k=5)``."""
        base = METHOD_LABELS.get(self.method, self.method)
        return base if self.k is None else f"{base} (k={self.k})"

    @property
    def correct_decline_rate(self) -> float | None:
        """Share of the unanswerable items whose final answer declined (``None``: none)."""
        if not self.unanswerable_items:
            return None
        return self.correct_declines / self.unanswerable_items

    @property
    def answerable_items(self) -> int:
        """Items with a gold answer."""
        return self.items - self.unanswerable_items

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "method": self.method,
            "label": self.label,
            "k": self.k,
            "items": self.items,
            "score": self.score,
            "answerable_ratio": self.answerable_ratio,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "token_ratio": self.token_ratio,
            "cost": self.cost,
            "cost_complete": self.cost_complete,
            "latency_s": self.latency_s,
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "errors": self.errors,
            "usage_source": self.usage_source,
            "lc_calls": self.lc_calls,
            "score_answerable": self.score_answerable,
            "score_unanswerable": self.score_unanswerable,
            "unanswerable_items": self.unanswerable_items,
            "correct_declines": self.correct_declines,
            "correct_decline_rate": self.correct_decline_rate,
            "declined_answerable": self.declined_answerable,
            "rag_calls": self.rag_calls,
            "pre_routed": self.pre_routed,
        }


@dataclass(frozen=True)
class Comparison:
    """RAG versus LC per question (the paper's Figure 2) at one ``k``.

    Attributes:
        k: Retrieval depth of the RAG run.
        items: Items where both ran without error.
        identical_share: Share whose normalised predictions are identical.
        rag_better: Items where RAG scored higher.
        lc_better: Items where LC scored higher.
        differences: Per-item RAG score minus LC score (item order).
    """

    k: int
    items: int
    identical_share: float | None
    rag_better: int
    lc_better: int
    differences: tuple[float, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (without the per-item differences)."""
        return {
            "k": self.k,
            "items": self.items,
            "identical_share": self.identical_share,
            "rag_better": self.rag_better,
            "lc_better": self.lc_better,
        }


@dataclass
class Summary:
    """What an eval run produced: the table rows, the comparisons and every run's record.

    Attributes:
        dataset: Dataset name.
        items: Items evaluated.
        ks: Retrieval depths.
        reader: Reader name (``oracle`` for the oracle).
        lc_reader: Long-context reader name.
        oracle: Whether an oracle reader produced the answers (no model was called).
        rows: One :class:`MethodSummary` per method and ``k``.
        comparisons: RAG-vs-LC comparison per ``k``.
        model_calls: Calls actually sent to a model in this run (not served from the cache).
        wall_time_s: Wall time of the run.
        currency: Currency of the money columns.
        records: Every run (one per item, method and ``k``).
        files: Output files written, by kind.
        notes: Remarks for the report (for example figures skipped for a missing package).
        policy: Self-Route's policy options (k-ladder, pre-routing, verdict, grounded).
        latency_model: Description of the simulated latency model, when the readers have one
            (latency columns are then simulated, not measured).
        token_counter: The local counter of every token count the provider did not report
            (``tiktoken:o200k_base``, or a ``heuristic:...`` estimate).
        score_scale: The retriever's score scale (``bm25`` for the default retriever; ``None``
            for a retriever that does not say), which ``selfroute calibrate`` records.
    """

    dataset: str
    items: int
    ks: list[int]
    reader: str
    lc_reader: str
    oracle: bool
    rows: list[MethodSummary]
    comparisons: dict[int, Comparison]
    model_calls: int
    wall_time_s: float
    currency: str = "USD"
    records: list[RunRecord] = field(default_factory=list, repr=False)
    files: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
    latency_model: str | None = None
    token_counter: str | None = None
    score_scale: str | None = None

    def abstention(self) -> list[dict[str, Any]]:
        """Per row: unanswerable items, correct declines and their rate, answerable declined."""
        return [
            {
                "method": r.method,
                "label": r.label,
                "k": r.k,
                "unanswerable_items": r.unanswerable_items,
                "correct_declines": r.correct_declines,
                "correct_decline_rate": r.correct_decline_rate,
                "answerable_items": r.answerable_items,
                "declined_answerable": r.declined_answerable,
            }
            for r in self.rows
        ]

    def row(self, method: str, k: int | None = None) -> MethodSummary:
        """The row of ``method`` at ``k`` (``k`` defaults to the only or first ``k``).

        Raises:
            KeyError: No such row.
        """
        for r in self.rows:
            if r.method == method and (r.k == k or k is None or r.method == "lc"):
                return r
        raise KeyError(f"no row for method={method!r} k={k!r}")

    def to_dict(self) -> dict[str, Any]:
        """The ``summary.json`` content."""
        return {
            "dataset": self.dataset,
            "items": self.items,
            "ks": self.ks,
            "reader": self.reader,
            "lc_reader": self.lc_reader,
            "oracle": self.oracle,
            "rows": [r.to_dict() for r in self.rows],
            "comparisons": {str(k): c.to_dict() for k, c in self.comparisons.items()},
            "model_calls": self.model_calls,
            "wall_time_s": self.wall_time_s,
            "currency": self.currency,
            "files": dict(self.files),
            "notes": list(self.notes),
            "policy": dict(self.policy),
            "policy_description": describe_policy(self.policy),
            "latency_model": self.latency_model,
            "token_counter": self.token_counter,
            "score_scale": self.score_scale,
            "latency_simulated": self.latency_model is not None,
            "abstention": self.abstention(),
        }

    def to_markdown(self) -> str:
        """The report (``report.md``)."""
        return render_markdown(self)


def _source(usages: Iterable[Usage]) -> str:
    total = Usage.zero()
    for u in usages:
        total = total + u
    return total.source


def _score(runs: Sequence[RunRecord]) -> float | None:
    """``round(100 * mean, 2)``, summed in order like LongBench; ``None`` for no runs."""
    if not runs:
        return None
    total = 0.0
    for r in runs:
        total += r.score
    return round(100 * total / len(runs), 2)


def _method_row(method: str, k: int | None, runs: Sequence[RunRecord]) -> MethodSummary:
    calls = [c for r in runs for c in r.calls]
    priced = [c.cost for c in calls if c.cost is not None]
    inputs = sum(r.input_tokens for r in runs)
    reference = sum(r.lc_reference_tokens or 0 for r in runs)
    is_sr = method in SELF_ROUTE_METHODS
    unanswerable = [r for r in runs if r.item.unanswerable]
    return MethodSummary(
        method=method,
        k=k,
        items=len(runs),
        score=_score(runs) or 0.0,
        score_answerable=_score([r for r in runs if not r.item.unanswerable]),
        score_unanswerable=_score([r for r in runs if r.item.unanswerable]),
        answerable_ratio=(sum(bool(r.answered_from_chunks) for r in runs) / len(runs))
        if is_sr and runs
        else None,
        input_tokens=inputs,
        output_tokens=sum(r.output_tokens for r in runs),
        token_ratio=inputs / reference if reference else None,
        cost=sum(priced) if priced else None,
        cost_complete=bool(calls) and len(priced) == len(calls),
        latency_s=sum(r.latency_s for r in runs) / len(runs) if runs else 0.0,
        calls=len(calls),
        cached_calls=sum(c.cached for c in calls),
        errors=sum(r.error is not None for r in runs),
        usage_source=_source(c.usage for c in calls),
        lc_calls=sum(c.stage is Stage.LONG_CONTEXT for c in calls) if is_sr else None,
        unanswerable_items=len(unanswerable),
        correct_declines=sum(bool(r.abstained) and r.error is None for r in unanswerable),
        declined_answerable=sum(bool(r.abstained) for r in runs if not r.item.unanswerable),
        rag_calls=sum(c.stage is Stage.RAG for c in calls) if is_sr else None,
        pre_routed=sum(r.reason in _PRE_ROUTE_REASONS for r in runs) if is_sr else None,
    )


_PRE_ROUTE_REASONS = ("global_question", "weak_retrieval")


def _compare(k: int, records: Sequence[RunRecord]) -> Comparison:
    lc = {r.item.id: r for r in records if r.method == "lc" and r.error is None}
    diffs: list[float] = []
    identical = rag_better = lc_better = 0
    for r in records:
        if r.method != "rag" or r.k != k or r.error is not None or r.item.id not in lc:
            continue
        other = lc[r.item.id]
        d = r.score - other.score
        diffs.append(d)
        rag_better += d > 0
        lc_better += d < 0
        identical += normalize_answer(r.prediction or "") == normalize_answer(
            other.prediction or ""
        )
    return Comparison(
        k=k,
        items=len(diffs),
        identical_share=identical / len(diffs) if diffs else None,
        rag_better=rag_better,
        lc_better=lc_better,
        differences=tuple(diffs),
    )


def build_summary(
    records: Sequence[RunRecord],
    *,
    dataset: str,
    items: int,
    ks: Sequence[int],
    methods: Sequence[str],
    reader: Any,
    lc_reader: Any,
    prices: PriceTable | None,
    model_calls: int,
    wall_time_s: float,
    policy: Mapping[str, Any] | None = None,
    latency_model: str | None = None,
    token_counter: str | None = None,
    score_scale: str | None = None,
) -> Summary:
    """Aggregate run records into a :class:`Summary`."""
    rows: list[MethodSummary] = []
    for method in methods:
        for k in [None] if method == "lc" else list(ks):
            runs = [r for r in records if r.method == method and r.k == k]
            rows.append(_method_row(method, k, runs))
    comparisons = {k: _compare(k, records) for k in ks} if {"lc", "rag"} <= set(methods) else {}
    return Summary(
        dataset=dataset,
        items=items,
        ks=list(ks),
        reader=reader.name,
        lc_reader=lc_reader.name,
        oracle=bool(reader.is_oracle or lc_reader.is_oracle),
        rows=rows,
        comparisons=comparisons,
        model_calls=model_calls,
        wall_time_s=wall_time_s,
        currency=prices.currency if prices is not None else "USD",
        records=list(records),
        policy=dict(policy or {}),
        latency_model=latency_model,
        token_counter=token_counter,
        score_scale=score_scale,
    )


FIG2 = "fig2_rag_minus_lc.png"
FIG3 = "fig3_k.png"


# -- the Markdown report ------------------------------------------------------------------------
def format_pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _money(value: float | None, complete: bool, currency: str) -> str:
    if value is None:
        return "—"
    mark = "" if complete else " (partial)"
    return f"{value:.4f} {currency}{mark}"


def _declines(correct: int, total: int) -> str:
    return "—" if not total else f"{correct}/{total} ({100 * correct / total:.1f}%)"


def figure_k(summary: Summary) -> int | None:
    if not summary.comparisons:
        return None
    return 5 if 5 in summary.comparisons else summary.ks[0]


def _counter(summary: Summary) -> str:
    """The local token counter, named (``tiktoken:o200k_base``)."""
    return f"`{summary.token_counter}`" if summary.token_counter else "a local counter"


def render_markdown(summary: Summary) -> str:
    """The Table-1 style report as Markdown."""
    lines = [f"# Self-Route evaluation: {summary.dataset}", ""]
    if summary.oracle:
        lines += [
            "> **Reader: oracle** — not a model. It answers exactly when a gold answer appears in "
            "the text it is shown and declines otherwise, so these numbers measure retrieval "
            "(the answerable ratio and token ratio a perfectly calibrated model would reach), not "
            f"a model's quality. Token counts are local estimates ({_counter(summary)}).",
            "",
        ]
        if "fabricating" in summary.reader or "fabricating" in summary.lc_reader:
            lines += [
                "> **Scripted hallucination**: in the long-context call on a question whose "
                "answer is not in the document, the fabricating oracle invents an answer (with an "
                "invented or an irrelevant quote in grounded mode). The abstention table shows "
                "which method still declines.",
                "",
            ]
    latency_head = "Latency / item"
    if summary.latency_model is not None:
        latency_head = "Latency / item (simulated)"
    lines += [
        f"- Items: {summary.items}",
        f"- RAG reader: `{summary.reader}`; long-context reader: `{summary.lc_reader}`",
        f"- Retrieval: BM25 over 300-word chunks of each item's document; k = "
        f"{', '.join(map(str, summary.ks))}",
        "- Model calls made in this run: none (oracle reader)"
        if summary.oracle and summary.reader == summary.lc_reader
        else f"- Model calls made in this run: {summary.model_calls} (the rest came from the "
        "cache or were shared between methods)",
    ]
    if summary.policy:
        lines.append(f"- Self-Route policy: {describe_policy(summary.policy)}")
    if summary.latency_model is not None:
        lines.append(f"- Latency is **simulated**, not measured: {summary.latency_model} per call")
    lines += [
        "",
        "| Method | Score | Answerable ratio | Input tokens | Token ratio vs LC | Money | "
        f"{latency_head} | Correct declines |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in summary.rows:
        lines.append(
            f"| {r.label} | {r.score:.2f} | {format_pct(r.answerable_ratio)} | {r.input_tokens:,} | "
            f"{format_pct(r.token_ratio)} | {_money(r.cost, r.cost_complete, summary.currency)} | "
            f"{r.latency_s:.3f} s | {_declines(r.correct_declines, r.unanswerable_items)} |"
        )
    lines.append("")
    lines.append(
        "Score: mean per-item score × 100 (token F1 after LongBench normalisation, max over gold "
        "answers; unanswerable questions score 1 when the final answer declines). Answerable "
        "ratio: share of questions Self-Route answered from the chunks. Token ratio: input "
        "tokens divided by the LC baseline's input tokens on the same items. Correct declines: "
        "unanswerable questions whose final answer declined."
    )
    split = [r for r in summary.rows if r.score_unanswerable is not None]
    if split and any(r.score_answerable is not None for r in split):
        lines += [
            "",
            "| Method | Score, answerable | Score, unanswerable |",
            "|---|---:|---:|",
        ]
        lines += [
            f"| {r.label} | {_num(r.score_answerable)} | {_num(r.score_unanswerable)} |"
            for r in split
        ]
    if any(r.unanswerable_items for r in summary.rows):
        lines += [
            "",
            "## Abstention: questions the document does not answer",
            "",
            "| Method | Unanswerable | Declined correctly | Rate | Answerable questions declined |",
            "|---|---:|---:|---:|---:|",
        ]
        for r in summary.rows:
            lines.append(
                f"| {r.label} | {r.unanswerable_items} | {r.correct_declines} | "
                f"{format_pct(r.correct_decline_rate)} | "
                f"{_declines(r.declined_answerable, r.answerable_items)} |"
            )
        lines += [
            "",
            "A final answer declines when Self-Route abstained (`RouteResult.abstained`: the "
            "long-context model declined, or in grounded mode its quotes were not found in the "
            "document) or, for the LC and RAG baselines, when `selfroute.parse_verdict` reads "
            "the answer as a decline (the sentinel, a refusal, or no usable answer). The last "
            "column is the price: answerable questions that got no answer.",
        ]
    for note in summary.notes:
        lines += ["", note]
    errors = sum(r.errors for r in summary.rows)
    if errors:
        lines += ["", f"**{errors} runs failed** and scored 0; see `error` in results.jsonl."]
    sources = sorted({r.usage_source for r in summary.rows if r.usage_source != "none"})
    if any(s != "provider" for s in sources):
        lines += [
            "",
            f"Token counts source: {', '.join(sources)} (not all provider-reported; counted "
            f"locally with {_counter(summary)}).",
        ]
    k = figure_k(summary)
    if k is not None:
        comp = summary.comparisons[k]
        lines += [
            "",
            f"## RAG versus LC per question (k={k})",
            "",
            f"Identical answers: {format_pct(comp.identical_share)} of {comp.items} questions; "
            f"RAG better on {comp.rag_better}, LC better on {comp.lc_better}.",
        ]
        if "fig2" in summary.files:
            lines += ["", f"![RAG minus LC score per question]({FIG2})"]
    if "fig3" in summary.files:
        lines += ["", "## Score and token ratio against k", "", f"![Score and tokens vs k]({FIG3})"]
    return "\n".join(lines) + "\n"
