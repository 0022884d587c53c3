"""Writing an eval run to disk: results.jsonl, summary.json, report.md and the two figures."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute.eval._figures import FigureWorker, draw
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


def differences_spec(summary: Summary, k: int) -> dict[str, Any]:
    """What figure 2 shows: the per-question RAG minus LC scores, and its title."""
    comp = summary.comparisons[k]
    who = "oracle reader" if summary.oracle else summary.reader
    title = (
        f"{_short(summary.dataset)} — RAG (k={k}) minus LC, {who}\n"
        f"identical answers: {format_pct(comp.identical_share)} of {comp.items} questions"
    )
    return {"kind": "differences", "differences": list(comp.differences), "title": title}


def k_curve_spec(summary: Summary) -> dict[str, Any]:
    """What figure 3 shows: score and token ratio of each method against k, LC's score."""
    curves: dict[str, dict[str, list[Any]]] = {}
    for method in ("rag", "self_route", "self_route_grounded"):
        rows = sorted((r for r in summary.rows if r.method == method), key=lambda r: r.k or 0)
        if rows:
            curves[method] = {
                "ks": [r.k for r in rows],
                "scores": [r.score for r in rows],
                "ratios": [100 * (r.token_ratio or 0.0) for r in rows],
            }
    lc = [r for r in summary.rows if r.method == "lc"]
    title = f"{_short(summary.dataset)} ({'oracle reader' if summary.oracle else summary.reader})"
    return {
        "kind": "k_curve",
        "curves": curves,
        "lc_score": lc[0].score if lc else None,
        "ks": list(summary.ks),
        "title": title,
    }


def plot_score_differences(summary: Summary, path: Path, k: int) -> None:
    """Figure 2: histogram of per-question RAG score minus LC score."""
    draw(_pyplot(), differences_spec(summary, k), path)


def plot_k_curve(summary: Summary, path: Path) -> None:
    """Figure 3: score and token ratio of RAG and Self-Route against k (LC as a reference)."""
    draw(_pyplot(), k_curve_spec(summary), path)


def _figures(summary: Summary, out: Path, worker: FigureWorker | None) -> dict[str, str]:
    """Draw the figures the run has (in ``worker`` when given), returning them by kind."""
    jobs: list[tuple[str, dict[str, Any], Path]] = []
    k = figure_k(summary)
    if k is not None and summary.comparisons[k].items:
        jobs.append(("fig2", differences_spec(summary, k), out / FIG2))
    if len(summary.ks) > 1 and any(r.method != "lc" for r in summary.rows):
        jobs.append(("fig3", k_curve_spec(summary), out / FIG3))
    if worker is not None:
        if not jobs:
            worker.close()
        elif worker.draw([(spec, path) for _, spec, path in jobs]):
            return {name: path.name for name, _, path in jobs}
    if jobs:
        plt = _pyplot()
        for _, spec, path in jobs:
            draw(plt, spec, path)
    return {name: path.name for name, _, path in jobs}


def write_outputs(
    summary: Summary, out: Path, *, figure_worker: FigureWorker | None = None
) -> dict[str, str]:
    """Write every output file into ``out`` (created if needed); returns them by kind.

    ``figure_worker`` (from :func:`~selfroute.eval._figures.start_figure_worker`) draws the figures
    in its own process; without one, or when it fails, they are drawn here.
    """
    out.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    try:
        files.update(_figures(summary, out, figure_worker))
    except MissingDependencyError as exc:  # the results matter more than the pictures
        summary.notes.append(f"Figures skipped: {exc}")
    files.update(results="results.jsonl", summary="summary.json", report="report.md")
    summary.files = files
    # one encoder for every line (what json.dumps(..., ensure_ascii=False) builds per call); the
    # records are trees of fresh dicts and lists, so the circular-reference check is moot
    encode = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode
    _atomic_write(
        out / "results.jsonl", "".join([encode(r.to_dict()) + "\n" for r in summary.records])
    )
    _atomic_write(out / "summary.json", json.dumps(summary.to_dict(), indent=2) + "\n")
    _atomic_write(out / "report.md", render_markdown(summary))
    return files
