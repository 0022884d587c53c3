"""Writing an eval run to disk: results.jsonl, summary.json, report.md and the two figures."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from selfroute._errors import MissingDependencyError

if TYPE_CHECKING:
    from selfroute.eval._summary import Summary

__all__ = ["plot_k_curve", "plot_score_differences", "render_markdown", "write_outputs"]

FIG2 = "fig2_rag_minus_lc.png"
FIG3 = "fig3_k.png"


def _pct(value: float | None) -> str:
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


def _figure_k(summary: Summary) -> int | None:
    if not summary.comparisons:
        return None
    return 5 if 5 in summary.comparisons else summary.ks[0]


def _counter(summary: Summary) -> str:
    """The local token counter, named (``tiktoken:o200k_base``)."""
    return f"`{summary.token_counter}`" if summary.token_counter else "a local counter"


def render_markdown(summary: Summary) -> str:
    """The Table-1 style report as Markdown."""
    from selfroute.eval._summary import describe_policy

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
            f"| {r.label} | {r.score:.2f} | {_pct(r.answerable_ratio)} | {r.input_tokens:,} | "
            f"{_pct(r.token_ratio)} | {_money(r.cost, r.cost_complete, summary.currency)} | "
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
                f"{_pct(r.correct_decline_rate)} | "
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
    k = _figure_k(summary)
    if k is not None:
        comp = summary.comparisons[k]
        lines += [
            "",
            f"## RAG versus LC per question (k={k})",
            "",
            f"Identical answers: {_pct(comp.identical_share)} of {comp.items} questions; "
            f"RAG better on {comp.rag_better}, LC better on {comp.lc_better}.",
        ]
        if "fig2" in summary.files:
            lines += ["", f"![RAG minus LC score per question]({FIG2})"]
    if "fig3" in summary.files:
        lines += ["", "## Score and token ratio against k", "", f"![Score and tokens vs k]({FIG3})"]
    return "\n".join(lines) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError("matplotlib", "eval") from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _short(text: str, width: int = 48) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def plot_score_differences(summary: Summary, path: Path, k: int) -> None:
    """Figure 2: histogram of per-question RAG score minus LC score."""
    plt = _pyplot()
    comp = summary.comparisons[k]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    bins = [(i - 0.5) / 10 for i in range(-10, 12)]  # one bar per 0.1, centred on it
    counts, _, bars = ax.hist(comp.differences, bins=bins, color="#4c72b0", edgecolor="white")
    ax.bar_label(bars, labels=[str(int(c)) if c else "" for c in counts], fontsize=7)
    ax.set_xlim(-1.1, 1.1)
    ax.set_xlabel("RAG score − LC score (per question)")
    ax.set_ylabel("questions")
    who = "oracle reader" if summary.oracle else summary.reader
    ax.set_title(
        f"{_short(summary.dataset)} — RAG (k={k}) minus LC, {who}\n"
        f"identical answers: {_pct(comp.identical_share)} of {comp.items} questions",
        fontsize=9,
    )
    ax.axvline(0, color="black", linewidth=0.8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_k_curve(summary: Summary, path: Path) -> None:
    """Figure 3: score and token ratio of RAG and Self-Route against k (LC as a reference)."""
    plt = _pyplot()
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=110)
    styles = {
        "rag": ("RAG", "#dd8452", "s"),
        "self_route": ("Self-Route", "#55a868", "o"),
        "self_route_grounded": ("Self-Route grounded", "#8172b3", "^"),
    }
    for method, (label, color, marker) in styles.items():
        rows = sorted((r for r in summary.rows if r.method == method), key=lambda r: r.k or 0)
        if not rows:
            continue
        ks = [r.k for r in rows]
        ax_s.plot(ks, [r.score for r in rows], marker=marker, color=color, label=label)
        ax_t.plot(
            ks,
            [100 * (r.token_ratio or 0.0) for r in rows],
            marker=marker,
            color=color,
            label=label,
        )
    lc = [r for r in summary.rows if r.method == "lc"]
    if lc:
        ax_s.axhline(lc[0].score, color="#4c72b0", linestyle="--", label="LC")
        ax_t.axhline(100, color="#4c72b0", linestyle="--", label="LC")
    ax_s.set_xlabel("k (retrieved chunks)")
    ax_s.set_ylabel("score")
    ax_t.set_xlabel("k (retrieved chunks)")
    ax_t.set_ylabel("input tokens, % of LC")
    for ax in (ax_s, ax_t):
        ax.set_xticks(summary.ks)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    title = f"{_short(summary.dataset)} ({'oracle reader' if summary.oracle else summary.reader})"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_outputs(summary: Summary, out: Path) -> dict[str, str]:
    """Write every output file into ``out`` (created if needed); returns them by kind."""
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    k = _figure_k(summary)
    try:
        if k is not None and summary.comparisons[k].items:
            plot_score_differences(summary, out / FIG2, k)
            files["fig2"] = FIG2
        if len(summary.ks) > 1 and any(r.method != "lc" for r in summary.rows):
            plot_k_curve(summary, out / FIG3)
            files["fig3"] = FIG3
    except MissingDependencyError as exc:  # the results matter more than the pictures
        summary.notes.append(f"Figures skipped: {exc}")
    files.update(results="results.jsonl", summary="summary.json", report="report.md")
    summary.files = files
    _atomic_write(
        out / "results.jsonl",
        "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in summary.records),
    )
    _atomic_write(out / "summary.json", json.dumps(summary.to_dict(), indent=2) + "\n")
    _atomic_write(out / "report.md", render_markdown(summary))
    return files
