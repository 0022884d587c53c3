"""Writing an eval run to disk: results.jsonl, summary.json, report.md and the two figures."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute.eval._summary import FIG2, FIG3, Summary, figure_k, format_pct, render_markdown

__all__ = ["plot_k_curve", "plot_score_differences", "render_markdown", "write_outputs"]


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
        f"identical answers: {format_pct(comp.identical_share)} of {comp.items} questions",
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
    k = figure_k(summary)
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
