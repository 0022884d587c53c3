"""Per-run records and the Table-1 style summary built from them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from selfroute._result import Passage, PriceTable, Stage
from selfroute._usage import Usage
from selfroute.eval._data import EvalItem
from selfroute.eval.metrics import normalize_answer

if TYPE_CHECKING:
    from selfroute._flow import RouteConfig

__all__ = [
    "CallRecord",
    "Comparison",
    "MethodSummary",
    "RunRecord",
    "Summary",
    "build_summary",
    "describe_policy",
    "policy_of",
]

METHOD_LABELS = {
    "lc": "LC",
    "rag": "RAG",
    "self_route": "Self-Route",
    "self_route_grounded": "Self-Route grounded",
}
#: Methods whose runs go through the Self-Route flow.
SELF_ROUTE_METHODS = ("self_route", "self_route_grounded")


def policy_of(config: RouteConfig) -> dict[str, Any]:
    """The Self-Route policy options of ``config`` as plain data (``summary.json``)."""
    pre = config.pre_route
    return {
        "k_ladder": list(config.k_ladder),
        "pre_route": None
        if pre is None
        else {"global_questions": pre.global_questions, "min_top_score": pre.min_top_score},
        "verdict": getattr(config.verdict, "value", str(config.verdict)),
        "grounded": config.grounded,
        "strict": config.strict,
        "speculate_below": getattr(config, "speculate_below", None),
    }


def describe_policy(policy: Mapping[str, Any]) -> str:
    """``plain`` or ``k-ladder 20; pre-route: global questions, top score < 3.1; ...``."""
    parts = []
    if policy.get("k_ladder"):
        parts.append("k-ladder k→" + "→".join(str(k) for k in policy["k_ladder"]))
    pre = policy.get("pre_route")
    if pre:
        what = []
        if pre.get("global_questions"):
            what.append("global questions")
        if pre.get("min_top_score") is not None:
            what.append(f"top retrieval score < {pre['min_top_score']:g}")
        parts.append("pre-route: " + (", ".join(what) or "nothing"))
    if policy.get("verdict", "sentinel") != "sentinel":
        parts.append(f"verdict {policy['verdict']}")
    if policy.get("grounded"):
        parts.append("grounded")
    if policy.get("strict"):
        parts.append("strict")
    if policy.get("speculate_below") is not None:
        parts.append(f"speculative long context below top score {policy['speculate_below']:g}")
    return "; ".join(parts) or "plain (the paper's)"


@dataclass(frozen=True)
class CallRecord:
    """One reader call.

    Attributes:
        method: ``lc``, ``rag`` or ``self_route``.
        stage: ``rag`` or ``long_context``.
        model: Model name reported by the provider (``oracle`` for the oracle reader).
        prompt_tokens: The prompt counted locally before the call.
        usage: Provider-reported usage (``usage.source`` says when it is an estimate).
        latency_s: Latency of the call (of the original call when served from the cache).
        cached: Served from the response cache or shared with an identical call of this run.
        output: What the reader wrote.
        cost: Money at the price table, ``None`` without a price for the model.
        k: For Self-Route's RAG steps, the chunks shown (the k-ladder rung).
        structured: The call asked for a structured verdict.
        speculative: A long-context call started alongside the RAG step (``speculate_below``);
            it overlaps the RAG calls in time, and its tokens count even when it was cancelled.
    """

    method: str
    stage: Stage
    model: str
    prompt_tokens: int
    usage: Usage
    latency_s: float
    cached: bool
    output: str
    cost: float | None = None
    k: int | None = None
    structured: bool = False
    speculative: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form."""
        return {
            "stage": self.stage.value,
            "k": self.k,
            "structured": self.structured,
            "speculative": self.speculative,
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "usage": self.usage.to_dict(),
            "latency_s": round(self.latency_s, 6),
            "cached": self.cached,
            "cost": self.cost,
            "output": self.output,
        }


@dataclass
class RunRecord:
    """One method run on one item (a line of ``results.jsonl``).

    Besides the prediction and its score: ``abstained`` (the final answer declines: the
    result's ``abstained`` for Self-Route, :func:`selfroute.parse_verdict` on the answer for the
    baselines) and ``abstention`` (why); ``top_score`` (the best retrieval score, what
    ``min_top_score`` pre-routing and ``selfroute calibrate`` look at); ``rungs`` (the k of each
    RAG step that ran: one per k-ladder rung, none when pre-routed); ``verified`` (grounded mode:
    the final answer's quotes were found), ``disputed`` and ``unverified_answer`` as on
    :class:`~selfroute.RouteResult`.
    """

    item: EvalItem
    method: str
    k: int | None
    calls: list[CallRecord]
    prediction: str | None = None
    score: float = 0.0
    route: str | None = None
    reason: str | None = None
    answered_from_chunks: bool | None = None
    retrieved: list[Passage] = field(default_factory=list)
    lc_reference_tokens: int | None = None
    lc_reference_source: str | None = None
    error: str | None = None
    flow_error: str | None = None
    abstained: bool | None = None
    abstention: str | None = None
    top_score: float | None = None
    rungs: list[int] = field(default_factory=list)
    verified: bool | None = None
    disputed: bool | None = None
    unverified_answer: str | None = None

    def _stage_tokens(self, stage: Stage) -> int:
        return sum(c.usage.input_tokens for c in self.calls if c.stage is stage)

    @property
    def rag_input_tokens(self) -> int:
        """Input tokens of the RAG-stage calls (every k-ladder rung)."""
        return self._stage_tokens(Stage.RAG)

    @property
    def lc_input_tokens(self) -> int:
        """Input tokens of the long-context calls."""
        return self._stage_tokens(Stage.LONG_CONTEXT)

    @property
    def input_tokens(self) -> int:
        """Input tokens over the run's calls."""
        return sum(c.usage.input_tokens for c in self.calls)

    @property
    def output_tokens(self) -> int:
        """Output tokens over the run's calls."""
        return sum(c.usage.output_tokens for c in self.calls)

    @property
    def latency_s(self) -> float:
        """Sum of the calls' latencies; a speculative long-context call overlaps the RAG calls
        (it counts only when it was the answer, and then as ``max(RAG calls, LC call)``)."""
        plain = sum(c.latency_s for c in self.calls if not c.speculative)
        spec = [c.latency_s for c in self.calls if c.speculative]
        if spec and self.route == "long_context":
            return max(plain, sum(spec))
        return plain

    @property
    def cost(self) -> float | None:
        """Money over the priced calls, ``None`` when none was priced."""
        known = [c.cost for c in self.calls if c.cost is not None]
        return sum(known) if known else None

    @property
    def token_ratio(self) -> float | None:
        """Input tokens divided by the LC baseline's input tokens for this item."""
        if not self.lc_reference_tokens:
            return None
        return self.input_tokens / self.lc_reference_tokens

    def to_dict(self) -> dict[str, Any]:
        """The ``results.jsonl`` line."""
        return {
            "item_id": self.item.id,
            "dataset": self.item.dataset,
            "doc_id": self.item.doc_id,
            "method": self.method,
            "k": self.k,
            "question": self.item.question,
            "gold": list(self.item.answers),
            "unanswerable": self.item.unanswerable,
            "prediction": self.prediction,
            "score": self.score,
            "abstained": self.abstained,
            "abstention": self.abstention,
            "route": self.route,
            "reason": self.reason,
            "answered_from_chunks": self.answered_from_chunks,
            "top_score": self.top_score,
            "rungs": list(self.rungs),
            "verified": self.verified,
            "disputed": self.disputed,
            "unverified_answer": self.unverified_answer,
            "input_tokens": self.input_tokens,
            "rag_input_tokens": self.rag_input_tokens,
            "lc_input_tokens": self.lc_input_tokens,
            "output_tokens": self.output_tokens,
            "lc_reference_tokens": self.lc_reference_tokens,
            "lc_reference_source": self.lc_reference_source,
            "token_ratio": self.token_ratio,
            "cost": self.cost,
            "latency_s": round(self.latency_s, 6),
            "retrieved": [
                {"chunk_index": p.metadata.get("chunk_index"), "score": p.score}
                for p in self.retrieved
            ],
            "calls": [c.to_dict() for c in self.calls],
            "error": self.error,
            "flow_error": self.flow_error,
        }


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
        from selfroute.eval._report import render_markdown

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
