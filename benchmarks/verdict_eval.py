"""Precision and recall of :func:`selfroute.parse_verdict` on hand-labelled model outputs.

Reads any labelled JSONL (one object per line with at least ``prediction`` and ``declined``;
optionally ``source``, ``model``, ``question``, ``partial``, ``split``) and reports, with declined as
the positive class, precision and recall per configuration -- default and strict mode, with and
without the question, with the default sentinel and with a configured one -- overall, by source,
by model and by split; plus a plain refusal regex as a baseline.

Usage::

    python -m benchmarks.verdict_eval FILE.jsonl [FILE.jsonl ...] [--sentinel TEXT] [--errors N]
    python -m benchmarks.verdict_eval tests/fixtures/refusals/*.jsonl --json

``python -m experiments.scope_model.measure eval FILE.jsonl`` prints the same tables with the
experimental learned scope model as one more setting (``experiments/README.md``): it calls
:func:`parser` and :func:`report` with its settings added.

It runs against whichever ``selfroute`` is importable, so the same script measures an older
checkout: run it *from* that checkout (``cd /path/to/old && python -m benchmarks.verdict_eval
/path/to/new/fixture.jsonl``). ``PYTHONPATH`` alone does not do it, because ``python -m`` puts
the working directory first on ``sys.path``. A ``parse_verdict`` without ``question`` is measured
without it. ``--by ambiguous`` splits the score into the rows a labeller marked as a hesitation
and the clear ones.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import selfroute as sr

__all__ = [
    "BASELINE",
    "Confusion",
    "Setting",
    "evaluate",
    "load",
    "main",
    "parser",
    "report",
    "settings",
    "takes_question",
]

Row = dict[str, Any]

#: A plain refusal regex: the baseline any structural detector should beat.
BASELINE = re.compile(
    r"\b(?:not (?:mention|provide|specif|state|contain|discuss|include|give)\w*|unable to|cannot|"
    r"can't|no information|unanswerable|i'm sorry|i apologi[sz]e|insufficient|not enough)",
    re.IGNORECASE,
)


@dataclass
class Confusion:
    """A 2x2 confusion matrix with declined as the positive class."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    errors: list[tuple[str, Row]] = field(default_factory=list)

    def add(self, predicted: bool, row: Row) -> None:
        """Count one prediction against the row's label."""
        gold = bool(row["declined"])
        if predicted and gold:
            self.tp += 1
        elif predicted:
            self.fp += 1
            self.errors.append(("FP", row))
        elif gold:
            self.fn += 1
            self.errors.append(("FN", row))
        else:
            self.tn += 1

    @property
    def n(self) -> int:
        """Cases counted."""
        return self.tp + self.fp + self.fn + self.tn

    @property
    def precision(self) -> float | None:
        """Share of predicted declines that are declines (None: nothing predicted)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        """Share of declines predicted (None: no declines)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    def summary(self, title: str, limit: int = 25) -> str:
        """One line of counts and rates, then up to ``limit`` misclassified outputs."""
        lines = [
            f"{title}: n={self.n} tp={self.tp} fp={self.fp} fn={self.fn} tn={self.tn} "
            f"precision={_rate(self.precision)} recall={_rate(self.recall)}"
        ]
        for kind, row in self.errors[:limit]:
            text = str(row["prediction"]).replace("\n", " ")[:110]
            lines.append(f"  {kind} [{row.get('model', '?')}] {text!r} -- {row.get('note', '')}")
        if len(self.errors) > limit:
            lines.append(f"  ... and {len(self.errors) - limit} more")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The counts and the two rates."""
        return {
            "n": self.n,
            "tp": self.tp,
            "fp": self.fp,
            "fn": self.fn,
            "tn": self.tn,
            "precision": self.precision,
            "recall": self.recall,
        }


@dataclass(frozen=True)
class Setting:
    """One detector configuration."""

    name: str
    predict: Callable[[Row], bool]


def load(paths: Iterable[Path]) -> list[Row]:
    """The rows of the labelled JSONL files (each must have ``prediction`` and ``declined``)."""
    rows: list[Row] = []
    for path in paths:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if "prediction" not in row or not isinstance(row.get("declined"), bool):
                raise ValueError(f"{path}:{i}: needs 'prediction' and a boolean 'declined'")
            row.setdefault("source", path.stem)
            rows.append(row)
    return rows


def takes_question() -> bool:
    """Whether the importable ``parse_verdict`` takes the question (an older one may not)."""
    return "question" in inspect.signature(sr.parse_verdict).parameters


def settings(sentinel: str | None = None, extra: Sequence[Setting] = ()) -> list[Setting]:
    """The configurations measured: default/strict x with/without question x sentinels.

    Args:
        sentinel: A configured sentinel measured beside the default one.
        extra: More configurations (an experiment's detector), measured last.

    Returns:
        The baseline regex first, then the detector's configurations, then ``extra``.
    """
    sentinels = [("default sentinel", sr.DEFAULT_SENTINEL)]
    if sentinel:
        sentinels.append((f"sentinel {sentinel!r}", sentinel))
    with_q = takes_question()
    out = [
        Setting("plain refusal regex (baseline)", lambda r: bool(BASELINE.search(r["prediction"])))
    ]
    for label, sent in sentinels:
        for strict in (False, True):
            mode = "strict" if strict else "default"
            out.append(Setting(f"{mode}, {label}", _predictor(sent, strict, question=False)))
            if with_q:
                out.append(
                    Setting(f"{mode}, {label}, with question", _predictor(sent, strict, True))
                )
    out.extend(extra)
    return out


def _predictor(sentinel: str, strict: bool, question: bool) -> Callable[[Row], bool]:
    def predict(row: Row) -> bool:
        kw: dict[str, Any] = {"sentinel": sentinel, "strict": strict}
        if question and row.get("question"):
            kw["question"] = row["question"]
        return sr.parse_verdict(row["prediction"], **kw).declined

    return predict


def evaluate(rows: Sequence[Row], setting: Setting, key: str | None = None) -> dict[str, Confusion]:
    """Confusion matrices for ``setting``: overall (key ``"all"``) or grouped by ``row[key]``."""
    out: dict[str, Confusion] = {}
    for row in rows:
        group = "all" if key is None else str(row.get(key, "?"))
        out.setdefault(group, Confusion()).add(setting.predict(row), row)
    return out


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _table(title: str, rows: Sequence[Row], sets: Sequence[Setting], key: str | None) -> str:
    lines = [f"### {title}", "", "| setting | group | cases | declined | precision | recall |"]
    lines.append("|---|---|---:|---:|---:|---:|")
    for s in sets:
        for group, c in sorted(evaluate(rows, s, key).items()):
            lines.append(
                f"| {s.name} | {group} | {c.n} | {c.tp + c.fn} | {_rate(c.precision)} | "
                f"{_rate(c.recall)} |"
            )
    return "\n".join(lines)


def _errors(rows: Sequence[Row], setting: Setting, limit: int) -> str:
    c = evaluate(rows, setting)["all"]
    out = [f"### errors of '{setting.name}' ({len(c.errors)})", ""]
    for kind, row in c.errors[:limit]:
        text = str(row["prediction"]).replace("\n", " ")[:160]
        q = str(row.get("question") or "")[:60]
        out.append(
            f"- {kind} [{row.get('model', '?')}] {text!r} (q: {q!r}) -- {row.get('note', '')}"
        )
    return "\n".join(out)


def parser() -> argparse.ArgumentParser:
    """The command line's options (an experiment adds its own to them)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--sentinel", help="also measure with this sentinel configured")
    ap.add_argument("--by", action="append", default=None, help="group by this field (repeat)")
    ap.add_argument("--errors", type=int, default=0, help="list up to N errors per setting")
    ap.add_argument("--json", action="store_true")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Print the tables (markdown) or, with ``--json``, the numbers."""
    return report(parser().parse_args(argv))


def report(args: argparse.Namespace, extra: Sequence[Setting] = ()) -> int:
    """Print the tables (or the JSON) of the parsed options, with ``extra`` settings measured last;
    returns the exit code."""
    rows = load(args.files)
    sets = settings(args.sentinel, extra)
    keys: list[str | None] = [None, *(args.by or ["source", "model"])]
    if args.json:
        report = {
            s.name: {
                str(k or "all"): {g: c.as_dict() for g, c in evaluate(rows, s, k).items()}
                for k in keys
            }
            for s in sets
        }
        print(json.dumps(report, indent=1))
        return 0
    declined = sum(bool(r["declined"]) for r in rows)
    print(f"{len(rows)} labelled outputs ({declined} declined) from {len(args.files)} file(s)\n")
    for k in keys:
        print(_table("all" if k is None else f"by {k}", rows, sets, k) + "\n")
    if args.errors:
        for s in sets[1:]:
            print(_errors(rows, s, args.errors) + "\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
