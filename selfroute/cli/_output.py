"""What the command line prints: results, index summaries, store facts, progress bars."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from selfroute._grounding import Citation, locate_quote
from selfroute._pricing import PriceTable
from selfroute._result import (
    Abstention,
    Passage,
    Reason,
    Route,
    RouteResult,
    RouteStats,
)
from selfroute.stores._store import IndexReport, StoreStats

__all__ = [
    "NOT_FOUND",
    "RETRACTED",
    "Progress",
    "budget_hint",
    "format_answer",
    "format_citations",
    "format_index_report",
    "format_result",
    "format_session",
    "format_sources",
    "format_stats",
    "printable",
    "short_path",
]

#: Which ``--max-lc-*`` setting a long-context budget refusal names (by the budget's reason text).
_BUDGET_LIMITS = (("long-context calls already made", "max_lc_calls"), ("tokens", "max_lc_tokens"))


def budget_hint(result: RouteResult) -> str | None:
    """What the long-context budget refused, which limit and how to raise it; ``None`` when the
    budget did not bite."""
    if result.reason is not Reason.OVER_BUDGET and result.abstention is not Abstention.OVER_BUDGET:
        return None
    from selfroute._flow._config import RouteConfig
    from selfroute._settings import cli_options

    error = str(result.error or "the long-context budget is spent")
    name = next((n for text, n in _BUDGET_LIMITS if text in error), "max_lc_calls")
    option = next(o for o in cli_options(RouteConfig) if o.name == name)
    return (
        f"the long-context call was not made: {error.removeprefix('long-context budget: ')}. "
        f"The limit is {option.flag}; raise it (or {option.env}, or {option.key} in "
        "selfroute.toml) to allow more long-context calls in one run"
    )


_REASONS = {
    Reason.ANSWERED: "answered from the retrieved chunks",
    Reason.DECLINED: "the model wrote 'unanswerable' for the retrieved chunks",
    Reason.REFUSED: "the model declined in its own words for the retrieved chunks",
    Reason.EMPTY_OUTPUT: "the RAG step wrote nothing usable",
    Reason.NO_CHUNKS: "retrieval found no chunks",
    Reason.RAG_ERROR: "the RAG-step call failed",
    Reason.RETRIEVAL_ERROR: "retrieval failed",
    Reason.OVER_BUDGET: "declined, but the long-context budget is spent; no LC call made",
    Reason.UNGROUNDED: "the RAG answer's quotes were not found in the retrieved chunks",
    Reason.GLOBAL_QUESTION: "pre-routed: a question about the whole document",
    Reason.WEAK_RETRIEVAL: "pre-routed: the best chunk scored under --min-top-score",
}

#: What ``ask`` and ``chat`` show instead of the answer when the result abstained.
NOT_FOUND = "not found in the documents"

#: What ``--stream`` prints when RAG text already shown is withdrawn. The RAG step either
#: declined after all or its call failed mid-stream (a connection reset); the report's route
#: line says which.
RETRACTED = (
    "[the text above is withdrawn: the chunks gave no final answer; "
    "answering from the whole document (the route line below says why)]"
)

_ABSTENTIONS = {
    Abstention.DECLINED: "the long-context model found no answer in the documents",
    Abstention.UNGROUNDED: "the answer's quotes were not found in the documents, so it is "
    "withheld (--json shows it as unverified_answer)",
    Abstention.OVER_BUDGET: "the long-context budget is spent, and the chunks held no answer",
}


# C0 controls but tab and newline, DEL, C1 controls (8-bit CSI), bidi overrides, lone surrogates.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print on a terminal: escape sequences, other control characters, bidi
    overrides and lone surrogates are shown as ``\\x1b``-style escapes instead of acting.

    Args:
        text: An answer, a file name, an error message.
        one_line: Escape newlines and tabs too (for file names and other one-line fields).

    Example:
        >>> printable("red \x1b[31mtext")
        'red \\\\x1b[31mtext'
    """
    return (_UNSAFE_LINE if one_line else _UNSAFE).sub(_escape, text)


def format_answer(result: RouteResult) -> str:
    """The answer to show: the model's answer, or :data:`NOT_FOUND` when the result abstained."""
    if result.abstained:
        return NOT_FOUND
    return result.answer or ""


def short_path(path: str | os.PathLike[str] | None) -> str:
    """``path`` relative to the working directory when it is inside it."""
    if path is None:
        return "?"
    p = Path(path)
    try:
        shown = str(p.relative_to(Path.cwd()))
    except ValueError:
        shown = str(p)
    return printable(shown, one_line=True)


def _n(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _money(value: float, currency: str) -> str:
    symbol = "$" if currency == "USD" else f"{currency} "
    return f"{symbol}{value:.6f}".rstrip("0").rstrip(".") if value else f"{symbol}0"


def unpriced_models(result: RouteResult, prices: PriceTable) -> list[str]:
    """The models of ``result``'s steps that ``prices`` has no price for (``(unnamed)`` for a
    step whose model reported no name)."""
    return sorted({s.model or "(unnamed)" for s in result.steps if not prices.knows(s.model)})


def _price_note(result: RouteResult, prices: PriceTable | None) -> str | None:
    """Why the cost line is missing or partial, naming the models without a price."""
    if prices is None:
        return None
    missing = unpriced_models(result, prices)
    if not missing:
        return None
    what = "not shown" if result.cost is None else "partial (priced steps only)"
    names = ", ".join(repr(m) for m in missing)
    known = ", ".join(sorted(prices.prices)) or "nothing"
    return (
        f"cost        {what}: no price for {names} (--prices has {known}); "
        "add NAME=IN/OUT to --prices"
    )


def format_result(
    result: RouteResult, *, currency: str = "USD", prices: PriceTable | None = None
) -> str:
    """The report under an answer: route, reason, tokens per step, always-LC, ratio, cost,
    latency. With ``prices``, a model without a price is named instead of a silent gap."""
    why = _REASONS.get(result.reason, "")
    lines = [f"route       {result.route.value}  [{result.reason.value}] {why}".rstrip()]
    if result.abstention is not None:
        lines.append(
            f"abstained   [{result.abstention.value}] "
            f"{_ABSTENTIONS.get(result.abstention, '')}".rstrip()
        )
    elif result.verified is not None:
        lines.append(
            "grounded    verified: every quote was found in the text the model was given"
            if result.verified
            else "grounded    NOT verified"
        )
    elif result.disputed:
        lines.append(
            "disputed    the chunks did not answer but the whole document did; nothing verified "
            "it (--grounded checks quotes)"
        )
    names = [
        _step_name(s.stage.value, s.k if s.stage.value == "rag" else None) for s in result.steps
    ]
    width = max([len(n) for n in names] + [5])
    first = True
    for step, name in zip(result.steps, names, strict=True):
        u = step.usage
        note = "" if not u.is_estimate else f"  [{u.source} estimate]"
        model = f"  {step.model}" if step.model else ""
        failed = f"  FAILED: {step.error}" if step.error else ""
        label = "tokens" if first else ""
        lines.append(
            f"{label:<11} {name:<{width}}  {_n(u.input_tokens):>9} in  "
            f"{_n(u.output_tokens):>6} out{model}  {step.latency_s:.2f} s{note}{failed}"
        )
        first = False
    if len(result.steps) > 1:
        total = result.usage
        lines.append(
            f"{'':<11} {'total':<{width}}  {_n(total.input_tokens):>9} in  "
            f"{_n(total.output_tokens):>6} out"
        )
    if not result.steps:
        lines.append("tokens      no model call was made")
    lc = result.long_context_tokens
    if lc:
        spent = result.usage.input_tokens
        ratio = result.token_ratio or 0.0
        source = result.long_context_tokens_source or "estimate"
        label = _lc_source_label(result, source)
        count = (result.context or {}).get("documents") or 1
        what = "the whole document" if count == 1 else f"the {count} whole documents"
        lines.append(f"always-LC   {lc:,} input tokens to send {what} ({label})")
        rag_ran = any(s.stage.value == "rag" for s in result.steps)
        if not rag_ran:
            lines.append(
                f"ratio       {ratio:.1%} of always-LC input tokens (no RAG attempt: the "
                "question went straight to the long context)"
            )
        elif spent < lc:
            lines.append(
                f"ratio       {ratio:.1%} of always-LC input tokens; saved {lc - spent:,} "
                f"({1 - ratio:.0%})"
            )
        else:
            lines.append(
                f"ratio       {ratio:.1%} of always-LC input tokens ({spent - lc:,} more: the RAG "
                "attempt came first)"
            )
    else:
        lines.append("always-LC   unknown (no long context to count)")
    if result.cost is not None:
        money = f"cost        {_money(result.cost, currency)}"
        if result.long_context_cost is not None:
            money += f"  (always-LC: {_money(result.long_context_cost, currency)})"
        lines.append(money)
    price_note = _price_note(result, prices)
    if price_note is not None:
        lines.append(price_note)
    lines.append(f"latency     {result.latency_s:.2f} s")
    if result.error:
        lines.append(f"note        {result.error}")
    return "\n".join(lines)


def _lc_source_label(result: RouteResult, source: str) -> str:
    """How the always-LC count was made, for the report line."""
    if source == "provider":
        return "reported by the provider"
    if source == "provider_scaled":
        from selfroute._flow._counterfactual import provider_ratio

        ratio = provider_ratio(result.steps)
        scale = f" × {ratio:.2f}" if ratio is not None else ""
        return (
            f"tokenizer count{scale}: the provider/tokenizer ratio of this call's RAG prompt, "
            "so both sides are the provider's tokens"
        )
    return f"{source} count"


def _step_name(stage: str, k: int | None) -> str:
    return stage if k is None else f"{stage} k={k}"


def _snippet(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _where(passage: Passage) -> str:
    meta = passage.metadata
    where = short_path(meta.get("source") or meta.get("path") or passage.doc_id)
    chunk = meta.get("chunk_index")
    return where + (f" chunk {chunk}" if chunk is not None else "")


def _citation_source(result: RouteResult, citation: Citation) -> str:
    """Where a found quote came from: the retrieved chunk (RAG route, or a long-context quote
    that a retrieved chunk also holds), else its offsets in the long context."""
    sources = result.sources
    index = citation.source_index
    if result.route is Route.RAG and index is not None and 0 <= index < len(sources):
        return _where(sources[index])
    for passage in sources:
        if locate_quote(citation.quote, passage.text) is not None:
            return _where(passage)
    if citation.start is not None:
        return f"long context, characters {citation.start:,}-{citation.end:,}"
    return "long context"


def format_citations(result: RouteResult, *, width: int = 100) -> str:
    """Grounded mode: each quote of the answer, where it was found, shortened (empty when the
    result has no citations)."""
    if not result.citations:
        return ""
    lines = ["citations"]
    for i, c in enumerate(result.citations, 1):
        where = _citation_source(result, c) if c.found else f"NOT FOUND ({c.reason})"
        lines.append(f'  [{i}] {where}: "{_snippet(c.quote, width)}"')
    return "\n".join(lines)


def _ranks(meta: Mapping[str, Any]) -> str:
    parts = []
    if meta.get("dense_rank") is not None:
        parts.append(f"dense #{meta['dense_rank']}")
    if meta.get("bm25_rank") is not None:
        parts.append(f"bm25 #{meta['bm25_rank']}")
    return ", ".join(parts)


def format_sources(sources: tuple[Passage, ...] | list[Passage]) -> str:
    """The retrieved chunks: where each came from, its score and ranks, and a snippet."""
    if not sources:
        return "sources     none retrieved"
    lines = ["sources"]
    for i, p in enumerate(sources, 1):
        meta = p.metadata
        where = short_path(meta.get("source") or meta.get("path"))
        chunk = meta.get("chunk_index")
        score = f"score {p.score:.4g}" if p.score is not None else ""
        extra = ", ".join(x for x in (score, _ranks(meta)) if x)
        lines.append(
            f"  [{i}] {where}"
            + (f"  chunk {chunk}" if chunk is not None else "")
            + (f"  ({extra})" if extra else "")
        )
        lines.append(f"      {_snippet(p.text)}")
    return "\n".join(lines)


def format_embedding(info: Mapping[str, Any]) -> str:
    """The line on what a hosted embedding did (``IndexReport.embedding``)."""
    text = (
        f"embedded {info['inputs']:,} chunks ({info['tokens']:,} tokens) in "
        f"{info['requests']:,} requests, {info['seconds']:.1f} s: "
        f"{info['chunks_per_s']:,.0f} chunks/s, {info['tokens_per_s']:,.0f} tokens/s"
    )
    if info.get("retries"):
        text += f"; {info['retries']:,} retried (rate limit or server error)"
    if info.get("truncated"):
        text += f"; {info['truncated']:,} cut to the provider's input limit"
    return text


def format_index_report(report: IndexReport, stats: StoreStats | None) -> str:
    """The summary ``selfroute index`` prints."""
    lines = [
        f"indexed {report.indexed:,} of {report.files:,} files in {report.seconds:.1f} s: "
        f"{len(report.added):,} new, {len(report.replaced):,} changed, "
        f"{report.unchanged:,} unchanged"
        + (f", {len(report.removed):,} removed" if report.removed else "")
    ]
    if report.chunks:
        rate = report.chunks / report.seconds if report.seconds > 0 else 0.0
        lines.append(
            f"wrote {report.chunks:,} chunks ({report.words:,} words, {rate:,.0f} chunks/s)"
        )
    if report.embedding:
        lines.append(format_embedding(report.embedding))
    if report.orphan_chunks_removed:
        lines.append(
            f"cleaned up {report.orphan_chunks_removed:,} chunks left by an interrupted run"
        )
    for path in report.removed:
        lines.append(f"removed     {short_path(path)}")
    for path in report.not_pruned:
        lines.append(f"not pruned  {short_path(path)}: missing or unreadable, nothing removed")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped):,}:")
        for s in report.skipped:
            lines.append(f"  {short_path(s.path)}: {s.reason}")
    if stats is not None:
        lines.append(
            f"store {stats.location} [{stats.collection}]: {stats.documents:,} documents, "
            f"{stats.chunks:,} chunks, {stats.words:,} words ({stats.embedding})"
        )
    return "\n".join(lines)


def format_stats(stats: StoreStats) -> str:
    """What ``selfroute stats`` prints."""
    formats = ", ".join(f"{k} {v}" for k, v in sorted(stats.formats.items()))
    bm25 = stats.bm25 + (
        f" ({stats.bm25_chunks:,} chunks)" if stats.bm25_chunks is not None else ""
    )
    if stats.bm25 == "stale":
        bm25 += "; rebuilt on the next query or index"
    lines = [
        f"store        {stats.location}",
        f"collection   {stats.collection}",
        f"documents    {stats.documents:,}" + (f"  ({formats})" if formats else ""),
        f"chunks       {stats.chunks:,}",
        f"words        {stats.words:,}",
        f"embedding    {stats.embedding}",
        f"chunk words  {stats.chunk_words}",
        f"bm25 index   {bm25}",
    ]
    if stats.orphan_chunks:
        lines.append(
            f"incomplete   {stats.orphan_chunks:,} chunks of an interrupted index run (not "
            "served; the next `selfroute index` removes them)"
        )
    for doc in stats.document_list:
        others = len(doc["paths"]) - 1
        more = f" (+{others} identical)" if others > 0 else ""
        lines.append(
            f"  {short_path(doc['path'])}{more}  {doc['format']}  {doc['words']:,} words  "
            f"{doc['chunks']:,} chunks  [{doc['doc_id']}]"
        )
    return "\n".join(lines)


def format_session(stats: RouteStats, *, failed: int = 0) -> str:
    """The summary at the end of ``selfroute chat``.

    Args:
        stats: The results, including the partial results of questions that failed after a
            paid RAG step.
        failed: Questions that ended in an error.
    """
    s = stats.summary()
    if not s["calls"] and not failed:
        return "no questions asked"
    asked = max(s["calls"], failed)
    text = (
        f"{asked} question(s): {s['answered_from_chunks']} answered from chunks, "
        f"{s['calls'] - s['answered_from_chunks']} needed the long context"
    )
    if failed:
        usage = stats.usage
        text += (
            f", {failed} failed ({usage.input_tokens:,} input and {usage.output_tokens:,} output "
            "tokens were spent in all)"
        )
    if s.get("abstained"):
        text += f", {s['abstained']} not found in the documents"
    if s["token_ratio"] is not None:
        text += f"; {s['token_ratio']:.1%} of always-LC input tokens"
    return text


class Progress:
    """Progress on stderr wherever a user waits: finding files, the per-file bar (with chunks and
    rate), the BM25 update, and page-by-page scans (``stats``, ``migrate``) -- or nothing.

    Args:
        mode: ``auto`` (only when stderr is a terminal), ``always`` or ``never``.
        stream: Where to draw (default ``sys.stderr``).
    """

    def __init__(self, mode: str = "auto", stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = mode == "always" or (mode == "auto" and bool(isatty()))
        self._bar: Any = None
        self._counters: dict[str, Any] = {}
        self._chunks = 0
        self._embedding: Mapping[str, Any] | None = None
        self._started = time.perf_counter()

    def _tqdm(self, **kwargs: Any) -> Any:
        from tqdm import tqdm

        return tqdm(file=self.stream, dynamic_ncols=True, **kwargs)

    def status(self, text: str) -> None:
        """A one-line status (``finding files...``), replaced by what comes next."""
        if self.enabled:
            self.stream.write(f"\r\x1b[2K{text}")
            self.stream.flush()

    def __call__(self, event: str, info: Mapping[str, Any]) -> None:
        """The ``progress`` callback of :meth:`DocumentStore.index`."""
        if not self.enabled:
            return
        if event == "discover":
            self.status("selfroute: finding files...")
        elif event == "files":
            self.status("")
            self._bar = self._tqdm(total=int(info["total"]), unit="file")
        elif event == "bm25":
            self.close()
            count = int(info["chunks"])
            self.status(
                "selfroute: rebuilding the BM25 index from every chunk..."
                if count < 0
                else f"selfroute: adding {count:,} chunks to the BM25 index..."
            )
        elif self._bar is None:
            return
        elif event == "chunks":
            self._chunks += int(info["count"])
            self._postfix()
        elif event == "embedding":
            self._embedding = dict(info)
            self._postfix()
        elif event == "file":
            self._bar.update(1)
            self._postfix()

    def count(self, kind: str, n: int) -> None:
        """Count ``n`` more ``kind`` (records scanned or copied) on a bar of its own."""
        if not self.enabled:
            return
        bar = self._counters.get(kind)
        if bar is None:
            bar = self._counters[kind] = self._tqdm(unit=f" {kind}", desc=kind)
        bar.update(n)

    def _postfix(self) -> None:
        elapsed = max(time.perf_counter() - self._started, 1e-9)
        # refresh=False: tqdm redraws at most every 0.1 s (a redraw per file cost a 10^6-file
        # run a formatted line per file)
        text = f"{self._chunks:,} chunks, {self._chunks / elapsed:,.1f} chunks/s"
        info = self._embedding
        if info is not None:  # a hosted embedding: its own throughput
            text += (
                f", embedding {info['chunks_per_s']:,.0f} chunks/s "
                f"({info['tokens_per_s']:,.0f} tokens/s)"
            )
        self._bar.set_postfix_str(text, refresh=False)

    def close(self) -> None:
        """Remove the bars and the status line."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        for bar in self._counters.values():
            bar.close()
        self._counters.clear()
        self.status("")
