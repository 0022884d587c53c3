"""Blind set 2 of long long-context answers (issue #29 item 2): how it was drawn, and its score.

``tests/fixtures/refusals/long_answers_blind2.jsonl`` holds LongBench Qasper and InfiniteBench
predictions longer than 150 characters, in no other fixture, labelled by reading (``declined``:
did the final answer abstain?) without looking at the rules or running the parser. This script
draws the rows (``draw``, needs ``/work/shared/data``) and scores the frozen file (``score``, the
default) with :func:`selfroute.parse_verdict`: precision, recall and n per stratum and pooled,
default setting and with the question passed, and the ids of misses and false declines.

Usage::

    python -m benchmarks.verdict_blind2 [score] [--file FILE] [--all]
    python -m benchmarks.verdict_blind2 draw OUT.jsonl

``--all`` also scores the rows labelled ``ambiguous`` (excluded by default). Run it from the
checkout whose parser you want to measure (``python -m`` puts the working directory first on
``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REFUSALS = ROOT / "tests" / "fixtures" / "refusals"
FIXTURE = REFUSALS / "long_answers_blind2.jsonl"
SHARED = Path("/work/shared/data/refusals")
POOL_FILES = ("longbench_qasper_predictions.jsonl", "infinitebench_predictions.jsonl")
SEED = 20261202
MIN_CHARS = 150
RANDOM_N = 150
ENRICH_N = 150
STRATA = ("random", "enriched", "rest")

Row = dict[str, Any]

#: The enrichment filter: a negation within eight words of a word about the source or its content.
#: Written before any row was read, from the brief alone; it knows nothing of the parser's rules.
_NEG = r"(?:not|no|none|nor|neither|never|unclear|unknown|cannot|\w+n't|nowhere|nothing)"
_NEAR = (
    r"(?:mention\w*|stat\w*|specif\w*|provid\w*|information|document\w*|text\w*|paper\w*|"
    r"passage\w*|article\w*|discuss\w*|given|book\w*|stor(?:y|ies)|novel\w*|context\w*)"
)
_GAP = r"(?:\W+\w+){0,8}?\W+"
ENRICH = re.compile(rf"\b{_NEG}\b{_GAP}{_NEAR}\b|\b{_NEAR}\b{_GAP}{_NEG}\b", re.IGNORECASE)


def norm(text: str) -> str:
    """Whitespace-collapsed, lower-cased text: what 'the same output' means for exclusion."""
    return re.sub(r"\s+", " ", text).strip().lower()


def _jsonl(path: Path) -> list[Row]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _held_elsewhere() -> set[str]:
    """Normalised predictions of every other fixture under tests/fixtures/refusals/."""
    seen: set[str] = set()
    for path in sorted(REFUSALS.rglob("*.jsonl")):
        if path.name != FIXTURE.name:
            seen.update(norm(str(r.get("prediction", ""))) for r in _jsonl(path))
    return seen


def pool() -> list[Row]:
    """Long predictions of both sources, in no other fixture, first occurrence of each text."""
    seen = _held_elsewhere()
    rows: list[Row] = []
    for name in POOL_FILES:
        short = "lb" if name.startswith("longbench") else "ib"
        for line, r in enumerate(_jsonl(SHARED / name), start=1):
            text = str(r["prediction"])
            key = norm(text)
            if len(text.strip()) <= MIN_CHARS or key in seen:
                continue
            seen.add(key)
            source = "longbench-qasper" if short == "lb" else "infinitebench"
            rid = f"{short}-{line}"
            meta = {"id": rid, "source": source, "model": r["model"], "task": r["task"]}
            rows.append({**meta, "prediction": text})
    return rows


def draw() -> list[Row]:
    """The whole pool, in three strata: ``random`` (``RANDOM_N`` rows, each model's share of the
    pool), ``enriched`` (up to ``ENRICH_N`` of the other rows the :data:`ENRICH` filter matches)
    and ``rest`` (every row left: the pool is smaller than the two samples the brief asked for, so
    it is labelled whole)."""
    rng = random.Random(SEED)
    rows = pool()
    by_model: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_model[str(r["model"])].append(r)
    picked: list[Row] = []
    for model in sorted(by_model):
        group = by_model[model]
        k = min(len(group), round(RANDOM_N * len(group) / len(rows)))
        picked += [{**r, "stratum": "random"} for r in rng.sample(group, k)]
    taken = {r["id"] for r in picked}
    matches = [r for r in rows if r["id"] not in taken and ENRICH.search(str(r["prediction"]))]
    enriched = rng.sample(matches, min(ENRICH_N, len(matches)))
    taken |= {r["id"] for r in enriched}
    rest = [r for r in rows if r["id"] not in taken]
    rest = rng.sample(rest, len(rest))
    return (
        picked
        + [{**r, "stratum": "enriched"} for r in enriched]
        + [{**r, "stratum": "rest"} for r in rest]
    )


def _prf(pairs: Sequence[tuple[bool, bool]]) -> tuple[int, float | None, float | None, int]:
    tp = sum(p and g for p, g in pairs)
    fp = sum(p and not g for p, g in pairs)
    fn = sum(g and not p for p, g in pairs)
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    return len(pairs), precision, recall, tp + fn


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


def _group(row: Row) -> str:
    """The row's stratum (blind set 2) or, in a set without strata, its kind (blind set 3)."""
    return str(row.get("stratum") or row.get("kind") or "all")


def score(rows: Iterable[Row], *, include_ambiguous: bool = False) -> dict[str, Any]:
    """Per stratum and pooled precision / recall / n, default and with the question passed."""
    import selfroute as sr

    kept = [r for r in rows if include_ambiguous or not r.get("ambiguous", False)]
    stratified = any("stratum" in r for r in kept)
    groups = STRATA if stratified else tuple(dict.fromkeys(_group(r) for r in kept))
    out: dict[str, Any] = {}
    for setting in ("default", "question"):
        verdicts: dict[str, bool] = {}
        for r in kept:
            q = r.get("question") if setting == "question" else None
            verdicts[r["id"]] = sr.parse_verdict(str(r["prediction"]), question=q).declined
        table: dict[str, Any] = {}
        for stratum in (*groups, "pooled"):
            sel = [r for r in kept if stratum in ("pooled", _group(r))]
            pairs = [(verdicts[r["id"]], bool(r["declined"])) for r in sel]
            n, p, rec, pos = _prf(pairs)
            misses = [r["id"] for r in sel if r["declined"] and not verdicts[r["id"]]]
            false = [r["id"] for r in sel if verdicts[r["id"]] and not r["declined"]]
            table[stratum] = {"n": n, "positives": pos, "precision": p, "recall": rec}
            table[stratum] |= {"misses": misses, "false_declines": false}
        out[setting] = table
    return out


def _print(result: dict[str, Any], with_question: int) -> None:
    for setting, table in result.items():
        note = f" ({with_question} rows carry a question)" if setting == "question" else ""
        print(f"\n{setting}{note}")
        print(f"  {'stratum':9} {'n':>4} {'pos':>4} {'precision':>9} {'recall':>7}")
        for stratum, t in table.items():
            print(
                f"  {stratum:9} {t['n']:4} {t['positives']:4} {_fmt(t['precision']):>9} "
                f"{_fmt(t['recall']):>7}"
            )
        pooled = table["pooled"]
        print(f"  misses: {' '.join(pooled['misses']) or '-'}")
        print(f"  false declines: {' '.join(pooled['false_declines']) or '-'}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    sc = sub.add_parser("score", help="score the labelled file (default)")
    sc.add_argument("--file", type=Path, default=FIXTURE)
    sc.add_argument("--all", action="store_true", help="also score rows labelled ambiguous")
    dr = sub.add_parser("draw", help="draw the unlabelled rows again (needs /work/shared)")
    dr.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "draw":
        rows = draw()
        with args.out.open("w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        counts = Counter((r["stratum"], r["model"]) for r in rows)
        for key in sorted(counts):
            print(*key, counts[key])
        print("pool", len(pool()), "drawn", len(rows))
        return 0
    path = getattr(args, "file", FIXTURE)
    rows = _jsonl(path)
    flagged = sum(bool(r.get("ambiguous", False)) for r in rows)
    include = bool(getattr(args, "all", False))
    print(f"{path.name}: {len(rows)} rows, {flagged} ambiguous ({'in' if include else 'ex'}cluded)")
    _print(score(rows, include_ambiguous=include), sum(bool(r.get("question")) for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
