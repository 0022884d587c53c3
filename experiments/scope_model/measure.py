"""The learned scope model measured by the verdict benchmarks, as one more setting.

Usage::

    python -m experiments.scope_model.measure eval FILE.jsonl [...]   # benchmarks.verdict_eval
    python -m experiments.scope_model.measure speed [FILE.jsonl ...]  # benchmarks.verdict_speed

Each takes the options of its benchmark, prints the benchmark's table with the scope model's
rows added last, and trains the model in this process on the vendored fixtures first (seconds,
numpy) unless ``--scope-weights PATH`` names a file ``python -m experiments.scope_model.train
--write PATH`` saved.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks import verdict_eval, verdict_speed
from experiments.scope_model.model import ScopeModel, load_model, model_verdict

__all__ = ["main", "requested_model", "settings", "variants"]


def requested_model(weights: Path | None) -> ScopeModel:
    """The model of the weights file ``weights``, else one trained in this process.

    Args:
        weights: A saved weights file, or ``None`` to train (numpy, seconds).
    """
    if weights is not None:
        return load_model(weights)
    from experiments.scope_model.train import train_model  # numpy: only to train

    return train_model()


def settings(model: ScopeModel) -> list[verdict_eval.Setting]:
    """The scope model's rows of ``verdict_eval``: without, then (if supported) with the question."""

    def predictor(question: bool) -> verdict_eval.Setting:
        def predict(row: verdict_eval.Row) -> bool:
            q = row.get("question") if question else None
            return model_verdict(row["prediction"], model, question=q or None).declined

        name = "scope model (experimental)" + (", with question" if question else "")
        return verdict_eval.Setting(name, predict)

    out = [predictor(False)]
    if verdict_eval.takes_question():
        out.append(predictor(True))
    return out


def variants(model: ScopeModel) -> dict[str, verdict_speed.Variant]:
    """The scope model's rows of ``verdict_speed``."""
    return {
        "scope model default": lambda t, q: model_verdict(t, model),
        "scope model with question": lambda t, q: model_verdict(
            t, model, question=q or "What is it?"
        ),
    }


def _with_weights(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--scope-weights", type=Path, metavar="PATH", help="saved weights (default: train now)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``eval`` or ``speed`` with the scope model; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in ("eval", "speed"):
        print("usage: python -m experiments.scope_model.measure {eval,speed} ...", file=sys.stderr)
        return 2
    command, rest = args[0], args[1:]
    if command == "eval":
        parsed = _with_weights(verdict_eval.parser()).parse_args(rest)
        return verdict_eval.report(parsed, settings(requested_model(parsed.scope_weights)))
    parsed = _with_weights(verdict_speed.parser()).parse_args(rest)
    return verdict_speed.report(parsed, variants(requested_model(parsed.scope_weights)))


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
