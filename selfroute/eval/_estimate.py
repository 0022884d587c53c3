"""``--dry-run``: the tokens and money an eval would cost, computed without any model call."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from selfroute._flow import RouteConfig, validate_question
from selfroute._pricing import PriceTable
from selfroute._usage import Usage
from selfroute.eval._cache import ResponseCache
from selfroute.eval._readers import Reader
from selfroute.eval._records import METHOD_LABELS
from selfroute.eval._runner import (
    DEFAULT_METHODS,
    FLOW_METHODS,
    BM25Retriever,
    DatasetLike,
    Retriever,
    as_items,
    lc_prompt,
    rag_only_prompt,
    resolve_cache,
)

__all__ = ["Estimate", "EstimateRow", "estimate"]


@dataclass(frozen=True)
class EstimateRow:
    """Planned spending of one method at one ``k``.

    Self-Route's long-context fallback runs only when the model declines, so its numbers are a
    range: ``*_min`` assumes every question is answered from the first rung's chunks, ``*_max``
    that every k-ladder rung runs and every question falls back (its fallback prompts equal the LC
    baseline's and are paid once when both run). Questions that pre-routing sends straight to
    long context (known before any call) cost exactly their long-context prompt.
    """

    method: str
    k: int | None
    calls_min: int
    calls_max: int
    cached_calls: int
    input_tokens_min: int
    input_tokens_max: int
    cost_min: float | None
    cost_max: float | None

    @property
    def label(self) -> str:
        """``LC``, ``RAG (k=5)``, ``Self-Route (k=5)``."""
        base = METHOD_LABELS[self.method]
        return base if self.k is None else f"{base} (k={self.k})"


@dataclass(frozen=True)
class Estimate:
    """What a run would send, before sending anything.

    Attributes:
        items: Items that would run.
        rows: One row per method and ``k``.
        output_tokens_per_call: The output length assumed for pricing.
        token_counter: The local counter used (``tiktoken:o200k_base`` or a heuristic).
        currency: Currency of the money columns.
    """

    items: int
    rows: list[EstimateRow]
    output_tokens_per_call: int
    token_counter: str
    currency: str

    @property
    def input_tokens_max(self) -> int:
        """Upper bound of input tokens over all methods, counting shared prompts once."""
        return sum(r.input_tokens_max for r in self.rows)

    @property
    def cost_max(self) -> float | None:
        """Upper bound of money, ``None`` without prices."""
        costs = [r.cost_max for r in self.rows if r.cost_max is not None]
        return sum(costs) if costs else None

    def to_text(self) -> str:
        """A plain-text table for the terminal."""
        head = (
            f"{'method':<20} {'calls':>11} {'free':>7} {'input tokens':>23} "
            f"{'money (' + self.currency + ')':>21}"
        )
        lines = [
            f"Dry run: {self.items} items, no model called. Tokens counted with "
            f"{self.token_counter}; money assumes {self.output_tokens_per_call} output tokens "
            "per call.",
            head,
            "-" * len(head),
        ]
        for r in self.rows:
            calls = (
                f"{r.calls_min}" if r.calls_min == r.calls_max else f"{r.calls_min}-{r.calls_max}"
            )
            toks = (
                f"{r.input_tokens_min:,}"
                if r.input_tokens_min == r.input_tokens_max
                else f"{r.input_tokens_min:,}-{r.input_tokens_max:,}"
            )
            if r.cost_max is None:
                money = "no price"
            elif r.cost_min == r.cost_max:
                money = f"{r.cost_max:.4f}"
            else:
                money = f"{r.cost_min or 0.0:.4f}-{r.cost_max:.4f}"
            lines.append(f"{r.label:<20} {calls:>11} {r.cached_calls:>7} {toks:>23} {money:>21}")
        total = self.cost_max
        lines.append(
            f"At most {self.input_tokens_max:,} input tokens"
            + ("" if total is None else f", at most {total:.4f} {self.currency}")
            + " (free: already cached, or the same prompt as an LC call)."
        )
        return "\n".join(lines)


class _Tally:
    def __init__(self, prices: PriceTable | None, model: str, out_tokens: int) -> None:
        self.prices, self.model, self.out = prices, model, out_tokens
        self.calls = self.cached = self.tokens = 0
        self.cost: float | None = None

    def add(self, tokens: int, cached: bool) -> None:
        self.calls += 1
        if cached:
            self.cached += 1
            return
        self.tokens += tokens
        if self.prices is not None:
            c = self.prices.cost(self.model, Usage.of(tokens, self.out))
            if c is not None:
                self.cost = (self.cost or 0.0) + c


def estimate(
    dataset: DatasetLike,
    *,
    reader: Reader,
    lc_reader: Reader | None = None,
    ks: Sequence[int] = (5,),
    methods: Sequence[str] = DEFAULT_METHODS,
    config: RouteConfig | None = None,
    prices: PriceTable | None = None,
    cache: ResponseCache | str | os.PathLike[str] | bool | None = True,
    limit: int | None = None,
    retriever: Retriever | None = None,
    output_tokens_per_call: int = 50,
) -> Estimate:
    """Count what :func:`~selfroute.eval.evaluate` would send, without calling any model.

    Prompts are built exactly as the run builds them (retrieval included) and counted with the
    config's token counter; prompts already in the cache are counted as free.
    """
    items = as_items(dataset)
    items = items[:limit] if limit else items
    lc_reader = lc_reader or reader
    cfg = config or RouteConfig()
    store = resolve_cache(cache)
    own = not isinstance(cache, ResponseCache)
    retrieve = retriever or BM25Retriever(chunk_words=cfg.chunk_words)
    counter = cfg.counter

    def is_cached(rd: Reader, prompt: str) -> bool:
        return bool(
            store is not None and rd.cacheable and store.contains(rd.cache_identity(), prompt)
        )

    lc_tally = _Tally(prices, lc_reader.model_name, output_tokens_per_call)
    flow_methods = [m for m in FLOW_METHODS if m in methods]
    tallies: dict[tuple[str, int], tuple[_Tally, _Tally | None, _Tally | None]] = {}
    for k in ks:
        tallies[("rag", k)] = (
            _Tally(prices, reader.model_name, output_tokens_per_call),
            None,
            None,
        )
        for method in flow_methods:
            tallies[(method, k)] = (
                _Tally(prices, reader.model_name, output_tokens_per_call),
                _Tally(prices, reader.model_name, output_tokens_per_call),
                _Tally(prices, lc_reader.model_name, output_tokens_per_call),
            )
    try:
        for item in items:
            q = validate_question(item.question)
            base_prompt, _ = lc_prompt(item, q, cfg)
            lc_tokens = counter.count(base_prompt)
            if "lc" in methods:
                lc_tally.add(lc_tokens, is_cached(lc_reader, base_prompt))
            for k in ks:
                if "rag" in methods:
                    passages = list(retrieve(item, k))[:k]
                    prompt, _ = rag_only_prompt(cfg.prompts, q, passages)
                    tallies[("rag", k)][0].add(counter.count(prompt), is_cached(reader, prompt))
                for method in flow_methods:
                    first, rungs, fallback = tallies[(method, k)]
                    assert rungs is not None and fallback is not None
                    mcfg = replace(cfg, k=k, grounded=cfg.grounded or method != "self_route")
                    ranked = list(retrieve(item, mcfg.rungs[-1]))[: mcfg.rungs[-1]]
                    texts = [p.text for p in ranked]
                    pre = (
                        mcfg.pre_route.check(q, ranked[:k])
                        if mcfg.pre_route is not None and ranked
                        else None
                    )
                    if pre is None and ranked:
                        for i, rung in enumerate(mcfg.rungs):
                            prompt = mcfg.prompts.rag_prompt(
                                q, texts[:rung], grounded=mcfg.grounded
                            )
                            tally = first if i == 0 else rungs
                            tally.add(counter.count(prompt), is_cached(reader, prompt))
                    sr_prompt, _ = lc_prompt(item, q, mcfg, texts[:k])
                    shared = sr_prompt == base_prompt and "lc" in methods
                    tally = first if pre is not None or not ranked else fallback
                    tally.add(
                        lc_tokens if shared else counter.count(sr_prompt),
                        shared or is_cached(lc_reader, sr_prompt),
                    )
    finally:
        if store is not None and own:
            store.close()
    rows: list[EstimateRow] = []
    if "lc" in methods:
        rows.append(_row("lc", None, lc_tally, None))
    for k in ks:
        for method in ("rag", *FLOW_METHODS):
            if method in methods:
                first, rungs, fallback = tallies[(method, k)]
                rows.append(_row(method, k, first, rungs, fallback))
    return Estimate(
        items=len(items),
        rows=rows,
        output_tokens_per_call=output_tokens_per_call,
        token_counter=counter.name,
        currency=prices.currency if prices is not None else "USD",
    )


def _add(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def _row(
    method: str,
    k: int | None,
    first: _Tally,
    rungs: _Tally | None = None,
    fallback: _Tally | None = None,
) -> EstimateRow:
    if fallback is None:
        return EstimateRow(
            method,
            k,
            first.calls,
            first.calls,
            first.cached,
            first.tokens,
            first.tokens,
            first.cost,
            first.cost,
        )
    more = rungs or _Tally(None, "", 0)
    return EstimateRow(
        method,
        k,
        calls_min=first.calls,
        calls_max=first.calls + more.calls + fallback.calls,
        cached_calls=first.cached + more.cached + fallback.cached,
        input_tokens_min=first.tokens,
        input_tokens_max=first.tokens + more.tokens + fallback.tokens,
        cost_min=first.cost,
        cost_max=_add(_add(first.cost, more.cost), fallback.cost),
    )
