"""Train (and cross-validate) the experimental learned scope model of the verdict parser.

The model (:mod:`experiments.scope_model.model`; not part of ``selfroute``) is a logistic regression over
hashed binary features of the candidate decline sentence the rules found (or the first decline cue
of an answer), its neighbours, its position and the question; the rules' own verdict is one of its
features. It is trained on the vendored hand-labelled outputs of ``tests/fixtures/refusals/`` only,
each output twice: without the question and with it (when the row has one). No weights are
vendored: training takes a few seconds, so :func:`train_model` trains them in the process that
needs them (:mod:`experiments.scope_model.measure`), and ``--write`` saves them for
``--scope-weights PATH``.

Usage::

    python -m experiments.scope_model.train --cv            # leave-one-set-out table + set 5
    python -m experiments.scope_model.train --write [PATH]  # save the weights (default: a file
                                                             # in the temporary directory)
    python -m experiments.scope_model.train --check PATH    # exit 1 if PATH differs from a
                                                             # fresh training

Variants (``--cv`` only): ``--extra`` adds labelled.jsonl to every training fold (the trained
model is trained with it), ``--l2 A B ...`` several regularisations, ``--threshold T``,
``--zone`` (judge only candidates after some content), ``--drop PREFIX ...`` (leave features out,
e.g. ``--drop k= kq= kpos= kov= ksh= kask=`` for a model without the rules' verdict).

Everything is deterministic (full-batch gradient descent from zero weights, a fixed number of
steps, weights rounded to six significant digits): two trainings give the same weights. (Another
numpy build may round differently in the last digit, so weights are compared within one install.)
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks._common import REPO_ROOT
from benchmarks.verdict_eval import Confusion
from experiments.scope_model import model as scope_model
from experiments.scope_model.model import ScopeModel, model_from_json, scope_candidate
from selfroute import parse_verdict

__all__ = [
    "DEFAULT_PATH",
    "SETS",
    "TRAIN_FILES",
    "Example",
    "examples",
    "fit",
    "main",
    "model_json",
    "scores",
    "train_model",
    "trained_json",
]

FIXTURES = REPO_ROOT / "tests" / "fixtures" / "refusals"
#: The RAGTruth sets in the order they were labelled; the CV folds are the first four.
SETS = (
    "ragtruth_labelled.jsonl",
    "ragtruth_holdout2.jsonl",
    "ragtruth_holdout3.jsonl",
    "ragtruth_holdout4.jsonl",
    "ragtruth_holdout5.jsonl",
)
#: LongBench Qasper + InfiniteBench (the rules' first tuning sources).
OTHER = "labelled.jsonl"
#: The trained model's files.
TRAIN_FILES = (*SETS, OTHER)
#: Where ``--write`` saves the weights without a path.
DEFAULT_PATH = Path(tempfile.gettempdir()) / "selfroute" / scope_model.MODEL_FILE
BITS = 12
L2 = 0.03
STEPS = 3000
RATE = 2.0
THRESHOLD = 0.5
#: Feature-name prefixes left out (experiments only).
DROP: tuple[str, ...] = ()
#: Whether the model judges only candidates after some content (experiments only).
ZONE = False


@dataclass(frozen=True)
class Example:
    """One output read once (with or without its question)."""

    file: str
    with_question: bool
    label: bool
    rules: bool
    indices: tuple[int, ...] | None  # hashed features; None: the model has nothing to judge


def examples(files: Sequence[str], bits: int = BITS) -> list[Example]:
    """The examples of the fixture ``files``: each row without, then with, its question."""
    out: list[Example] = []
    for name in files:
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            questions: list[str | None] = [None]
            if row.get("question"):
                questions.append(str(row["question"]))
            for q in questions:
                verdict = parse_verdict(row["prediction"], question=q)
                found = scope_candidate(verdict, q)
                idx = None
                if found is not None and ZONE and found.focus == 0:
                    found = None  # --zone: leave candidates with nothing before them to the rules
                if found is not None:
                    names = scope_model.feature_names(found)
                    names = [n for n in names if not n.startswith(DROP)] if DROP else names
                    idx = tuple(scope_model.hashed(names, bits))
                out.append(
                    Example(name, q is not None, bool(row["declined"]), verdict.declined, idx)
                )
    return out


def fit(train: Sequence[Example], bits: int = BITS, l2: float = L2) -> np.ndarray:
    """Logistic-regression weights (full-batch gradient descent, deterministic)."""
    rows = [e for e in train if e.indices is not None]
    flat = np.array([i for e in rows for i in e.indices or ()], dtype=np.int64)
    owner = np.repeat(np.arange(len(rows)), [len(e.indices or ()) for e in rows])
    y = np.array([e.label for e in rows], dtype=np.float64)
    w = np.zeros(1 << bits)
    n = max(len(rows), 1)
    for _ in range(STEPS):
        z = np.bincount(owner, weights=w[flat], minlength=len(rows))
        p = 1.0 / (1.0 + np.exp(-z))
        grad = np.bincount(flat, weights=(p - y)[owner], minlength=w.size) / n + l2 * w
        w -= RATE * grad
    return w


def rounded(w: np.ndarray) -> list[float]:
    """The weights as saved (six significant digits)."""
    return [float(f"{x:.6g}") for x in w]


def scores(w: Sequence[float] | np.ndarray, rows: Sequence[Example]) -> np.ndarray:
    """Training-side log-odds of the judged examples (numpy)."""
    arr = np.asarray(w, dtype=np.float64)
    return np.array([arr[list(e.indices or ())].sum() for e in rows])


def predict(w: np.ndarray, e: Example, threshold: float | None = None) -> bool:
    """The rules+model verdict of one example."""
    threshold = THRESHOLD if threshold is None else threshold
    if e.indices is None:
        return e.rules
    z = float(w[list(e.indices)].sum())
    return bool(1.0 / (1.0 + np.exp(-z)) >= threshold)


def _confusion(pairs: Sequence[tuple[bool, bool]]) -> Confusion:
    """``verdict_eval``'s confusion counts of ``(predicted, labelled)`` declines."""
    c = Confusion()
    for predicted, declined in pairs:
        c.add(predicted, {"declined": declined})
    return c


def evaluate(w: np.ndarray | None, test: Sequence[Example]) -> dict[str, Confusion]:
    """Confusions of rules alone and rules+model, without and with the question."""
    out: dict[str, Confusion] = {}
    for with_q in (False, True):
        part = [e for e in test if e.with_question == with_q]
        tag = "question" if with_q else "default"
        out[f"rules/{tag}"] = _confusion([(e.rules, e.label) for e in part])
        if w is not None:
            out[f"model/{tag}"] = _confusion([(predict(w, e), e.label) for e in part])
    return out


def _short(name: str) -> str:
    return (
        "531" if name == SETS[0] else name.removeprefix("ragtruth_holdout").removesuffix(".jsonl")
    )


def _fmt(c: Confusion) -> str:
    p, r = c.precision, c.recall
    ps = "-" if p is None else f"{p:.3f}"
    rs = "-" if r is None else f"{r:.3f}"
    return f"{ps}/{rs} (fp {c.fp}, fn {c.fn})"


def cross_validate(l2: float, extra: bool) -> str:
    """The leave-one-set-out table over the first four RAGTruth sets, then set 5 (counts only)."""
    data = {name: examples([name]) for name in (*SETS, OTHER)}
    lines = [
        f"l2={l2} threshold={THRESHOLD} extra={'labelled.jsonl' if extra else 'none'}",
        "| scored | trained on | rules default | model default | rules question | model question |",
        "|---|---|---|---|---|---|",
    ]
    folds = [(name, [s for s in SETS[:4] if s != name]) for name in SETS[:4]]
    folds.append((SETS[4], list(SETS[:4])))
    pooled: dict[str, list[Confusion]] = {}
    for test, train_names in folds:
        train = [e for n in train_names for e in data[n]] + (data[OTHER] if extra else [])
        w = np.array(rounded(fit(train, l2=l2)))
        res = evaluate(w, data[test])
        if test != SETS[4]:
            for k, v in res.items():
                pooled.setdefault(k, []).append(v)
        cells = [_fmt(res[k]) for k in ("rules/default", "model/default")]
        cells += [_fmt(res[k]) for k in ("rules/question", "model/question")]
        lines.append(
            f"| {_short(test)} | {'+'.join(_short(n) for n in train_names)} | "
            + " | ".join(cells)
            + " |"
        )
    sums = {
        k: Confusion(
            tp=sum(v.tp for v in vs),
            fp=sum(v.fp for v in vs),
            fn=sum(v.fn for v in vs),
            tn=sum(v.tn for v in vs),
        )
        for k, vs in pooled.items()
    }
    cells = [
        _fmt(sums[k])
        for k in ("rules/default", "model/default", "rules/question", "model/question")
    ]
    lines.append("| CV pooled (4 folds) | | " + " | ".join(cells) + " |")
    w_all = np.array(rounded(fit([e for n in (*SETS, OTHER) for e in data[n]], l2=l2)))
    lab = evaluate(w_all, data[OTHER])
    lines.append(
        f"labelled.jsonl, model trained on all six files: {_fmt(lab['rules/default'])} -> {_fmt(lab['model/default'])}"
    )
    return "\n".join(lines)


def model_json(files: Sequence[str] = TRAIN_FILES) -> str:
    """The weights file of a model trained on the fixture ``files``, as text."""
    data = [e for name in files for e in examples([name])]
    w = rounded(fit(data))
    meta = {
        "trained_on": {
            name: hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() for name in files
        },
        "examples": sum(e.indices is not None for e in data),
        "l2": L2,
        "steps": STEPS,
        "rate": RATE,
        "script": "experiments/scope_model/train.py",
    }
    doc = {"bits": BITS, "threshold": THRESHOLD, "meta": meta, "weights": w}
    return json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"


def trained_json(files: Sequence[str] = TRAIN_FILES) -> str:
    """:func:`model_json`, trained once per process for the same files and settings."""
    return _trained_json(tuple(files), DROP, ZONE, THRESHOLD)


def train_model(files: Sequence[str] = TRAIN_FILES) -> ScopeModel:
    """A model trained on the fixture ``files`` in this process (once per process; seconds).

    Args:
        files: Fixture file names under ``tests/fixtures/refusals/`` (default: all six).

    Returns:
        The model, with the weights a ``--write`` file of the same files and settings holds.
    """
    return _train_model(tuple(files), DROP, ZONE, THRESHOLD)


@functools.lru_cache(maxsize=8)
def _trained_json(files: tuple[str, ...], drop: object, zone: object, threshold: object) -> str:
    # the settings are globals read while training; they are part of the cache key
    return model_json(files)


@functools.lru_cache(maxsize=8)
def _train_model(
    files: tuple[str, ...], drop: object, zone: object, threshold: object
) -> ScopeModel:
    return model_from_json(_trained_json(files, drop, zone, threshold))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line."""
    global DROP, THRESHOLD, ZONE
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", action="store_true", help="print the leave-one-set-out table")
    ap.add_argument("--l2", type=float, nargs="*", default=[L2])
    ap.add_argument("--extra", action="store_true", help="CV: also train on labelled.jsonl")
    ap.add_argument(
        "--write",
        type=Path,
        nargs="?",
        const=DEFAULT_PATH,
        metavar="PATH",
        help=f"train and save the weights (default {DEFAULT_PATH})",
    )
    ap.add_argument("--check", type=Path, metavar="PATH", help="fail if PATH differs from training")
    ap.add_argument("--threshold", type=float, default=THRESHOLD, help="decision threshold")
    ap.add_argument("--zone", action="store_true", help="CV: only candidates after content")
    ap.add_argument("--drop", nargs="*", default=[], help="CV: leave out features by prefix")
    args = ap.parse_args(argv)
    DROP = tuple(args.drop)
    ZONE = args.zone
    THRESHOLD = args.threshold
    if args.cv:
        for l2 in args.l2:
            print(cross_validate(l2, args.extra) + "\n")
    if args.write or args.check:
        text = trained_json()
        if args.write:
            args.write.parent.mkdir(parents=True, exist_ok=True)
            args.write.write_text(text, encoding="utf-8")
            print(f"wrote {args.write} ({len(text.encode())} bytes)")
        if args.check:
            if not args.check.is_file() or args.check.read_text(encoding="utf-8") != text:
                print(f"{args.check} differs from what the script trains", file=sys.stderr)
                return 1
            print(f"{args.check} is what the script trains")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
