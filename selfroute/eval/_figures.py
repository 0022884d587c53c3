"""Drawing the eval figures off the run's hot path.

Importing matplotlib and drawing take longer than an oracle run's own work, so an eval run that
writes figures starts a worker process when it starts (this file, run as a script: it imports no
selfroute module). The worker imports matplotlib while the run goes on, then draws what it is sent
at the end. The figures are the same bytes as drawn in-process (same code, same backend); without
a worker (it could not start, or failed) they are drawn in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["FigureWorker", "draw", "start_figure_worker"]

_STYLES = {
    "rag": ("RAG", "#dd8452", "s"),
    "self_route": ("Self-Route", "#55a868", "o"),
    "self_route_grounded": ("Self-Route grounded", "#8172b3", "^"),
}


def _draw_differences(plt: Any, spec: dict[str, Any], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    bins = [(i - 0.5) / 10 for i in range(-10, 12)]  # one bar per 0.1, centred on it
    counts, _, bars = ax.hist(spec["differences"], bins=bins, color="#4c72b0", edgecolor="white")
    ax.bar_label(bars, labels=[str(int(c)) if c else "" for c in counts], fontsize=7)
    ax.set_xlim(-1.1, 1.1)
    ax.set_xlabel("RAG score − LC score (per question)")
    ax.set_ylabel("questions")
    ax.set_title(spec["title"], fontsize=9)
    ax.axvline(0, color="black", linewidth=0.8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _draw_k_curve(plt: Any, spec: dict[str, Any], path: Path) -> None:
    fig, (ax_s, ax_t) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=110)
    for method, (label, color, marker) in _STYLES.items():
        curve = spec["curves"].get(method)
        if not curve:
            continue
        ax_s.plot(curve["ks"], curve["scores"], marker=marker, color=color, label=label)
        ax_t.plot(curve["ks"], curve["ratios"], marker=marker, color=color, label=label)
    if spec["lc_score"] is not None:
        ax_s.axhline(spec["lc_score"], color="#4c72b0", linestyle="--", label="LC")
        ax_t.axhline(100, color="#4c72b0", linestyle="--", label="LC")
    ax_s.set_xlabel("k (retrieved chunks)")
    ax_s.set_ylabel("score")
    ax_t.set_xlabel("k (retrieved chunks)")
    ax_t.set_ylabel("input tokens, % of LC")
    for ax in (ax_s, ax_t):
        ax.set_xticks(spec["ks"])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(spec["title"], fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def draw(plt: Any, spec: dict[str, Any], path: Path) -> None:
    """Draw the figure ``spec`` describes (``kind``: ``differences`` or ``k_curve``) to ``path``."""
    if spec["kind"] == "differences":
        _draw_differences(plt, spec, path)
    else:
        _draw_k_curve(plt, spec, path)


class FigureWorker:
    """A worker process that imports matplotlib now and draws figures when asked."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._process = process

    def draw(self, jobs: list[tuple[dict[str, Any], Path]]) -> bool:
        """Draw ``(spec, path)`` jobs in the worker; ``False`` when it failed (draw them here)."""
        payload = json.dumps([{"spec": spec, "path": str(path)} for spec, path in jobs])
        try:
            out, _ = self._process.communicate(payload + "\n", timeout=300)
        except (OSError, ValueError, subprocess.SubprocessError):
            self.close()
            return False
        return self._process.returncode == 0 and (out or "").strip().endswith("ok")

    def close(self) -> None:
        """Stop the worker (nothing to draw)."""
        if self._process.poll() is None:
            try:
                self._process.communicate("", timeout=30)
            except (OSError, ValueError, subprocess.SubprocessError):
                self._process.kill()
                self._process.wait()


def start_figure_worker() -> FigureWorker | None:
    """A figure worker, or ``None`` when matplotlib is imported already (drawing here is then
    cheap) or the worker cannot start."""
    if "matplotlib.pyplot" in sys.modules:
        return None
    try:
        # run as a file, not as a module of the package: the worker imports matplotlib, not
        # selfroute (whose import would cost more than the drawing)
        code = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
        process = subprocess.Popen(
            [sys.executable, "-c", code, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
    except OSError:
        return None
    return FigureWorker(process)


def _main() -> int:
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        sys.stdin.read()
        print("missing matplotlib")
        return 1
    payload = sys.stdin.read()
    if not payload.strip():
        return 0
    for job in json.loads(payload):
        draw(plt, job["spec"], Path(job["path"]))
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
