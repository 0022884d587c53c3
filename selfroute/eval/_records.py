"""Per-run records of an eval (lines of ``results.jsonl``) and the policy they ran under."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from selfroute._result import Passage, Stage
from selfroute._usage import Usage
from selfroute._verdict import detector_name
from selfroute.eval._data import EvalItem

if TYPE_CHECKING:
    from selfroute._flow import RouteConfig

__all__ = [
    "METHOD_LABELS",
    "SELF_ROUTE_METHODS",
    "CallRecord",
    "RunRecord",
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
    detector = config.decline_detector
    return {
        "k_ladder": list(config.k_ladder),
        "pre_route": None
        if pre is None
        else {"global_questions": pre.global_questions, "min_top_score": pre.min_top_score},
        "verdict": getattr(config.verdict, "value", str(config.verdict)),
        "grounded": config.grounded,
        "strict": config.strict,
        "speculate_below": getattr(config, "speculate_below", None),
        "decline_detector": None if detector is None else detector_name(detector),
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
    if policy.get("decline_detector"):
        parts.append(f"own decline detector {policy['decline_detector']}")
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
