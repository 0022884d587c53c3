"""``selfroute calibrate``: pick the pre-routing settings from a ``selfroute eval`` run.

Pre-routing skips the RAG attempt for questions where it is predictably futile: *global* questions
("summarise the whole ..."), and questions whose best retrieved chunk scores under
``min_top_score``. Whether that pays depends on the data, so the threshold is calibrated on an eval
run's ``results.jsonl``: for every plain Self-Route run it reads the top retrieval score, whether
the RAG step answered, and the RAG and long-context input tokens. Pre-routing a question costs its
long-context tokens; not pre-routing it costs the RAG tokens, plus the long-context tokens when the
RAG step declined. The threshold that minimises the total wins (ties: fewer answers from chunks
lost), and the global-question detector is enabled only if pre-routing the questions it matches
lowers their tokens. The result is written to the ``[pre_route]`` table of ``selfroute.toml``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError, InvalidInputError
from selfroute._preroute import DEFAULT_GLOBAL_PATTERNS, is_global_question
from selfroute.cli._config import CONFIG_FILE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "OBJECTIVES",
    "Calibration",
    "Candidate",
    "Question",
    "add_parser",
    "calibrate",
    "load_questions",
    "run_calibrate",
    "update_pre_route",
]

#: What the calibration minimises.
OBJECTIVES = ("tokens",)
#: The fields every line of an eval ``results.jsonl`` has.
_REQUIRED = ("item_id", "method", "question", "calls")
_PRE_ROUTED = ("global_question", "weak_retrieval")


@dataclass(frozen=True)
class Question:
    """What calibration needs to know about one plain Self-Route run.

    Attributes:
        question: The question (for the global-question detector).
        top_score: The best retrieval score (``None``: no scored chunk; never pre-routed by
            score).
        rag_answered: The RAG step answered from the chunks.
        rag_tokens: Input tokens of the RAG step (every k-ladder rung).
        lc_tokens: Input tokens of the long-context call (the LC baseline's prompt when the
            RAG step answered and no long-context call ran).
    """

    question: str
    top_score: float | None
    rag_answered: bool
    rag_tokens: int
    lc_tokens: int

    @property
    def plain_tokens(self) -> int:
        """Tokens without pre-routing: the RAG step, plus long context when it declined."""
        return self.rag_tokens + (0 if self.rag_answered else self.lc_tokens)


@dataclass(frozen=True)
class Candidate:
    """One ``min_top_score`` and what it would have done on the data.

    Attributes:
        threshold: The threshold (``None``: no threshold).
        pre_routed: Questions sent straight to long context (the global ones included when the
            detector is on).
        tokens: Total input tokens.
        lost: Questions the RAG step answered from the chunks that would be pre-routed.
    """

    threshold: float | None
    pre_routed: int
    tokens: int
    lost: int


@dataclass
class Calibration:
    """The outcome of :func:`calibrate`.

    Attributes:
        questions: Questions calibrated on.
        plain_tokens: Total input tokens of plain Self-Route on them.
        global_matched: Questions the global-question detector matches.
        global_plain_tokens: Their tokens without pre-routing.
        global_pre_tokens: Their tokens when pre-routed (their long-context tokens).
        global_lost: Of them, answered from the chunks (lost when pre-routed).
        global_questions: Whether the detector pays off (and is enabled).
        candidates: Every threshold considered, the "no threshold" one first.
        best: The chosen one.
        objective: What was minimised.
    """

    questions: int
    plain_tokens: int
    global_matched: int
    global_plain_tokens: int
    global_pre_tokens: int
    global_lost: int
    global_questions: bool
    candidates: list[Candidate]
    best: Candidate
    objective: str = "tokens"
    notes: list[str] = field(default_factory=list)

    @property
    def min_top_score(self) -> float | None:
        """The chosen threshold (``None``: no threshold lowers the total)."""
        return self.best.threshold

    def _shown(self) -> list[Candidate]:
        """The rows of the table: no threshold, a spread of thresholds, and the chosen one."""
        rest = self.candidates[1:]
        picks = {id(self.candidates[0]): self.candidates[0], id(self.best): self.best}
        n = max(1, self.questions)
        for share in (0.05, 0.1, 0.2, 0.3, 0.5):
            if rest:
                near = min(rest, key=lambda c: (abs(c.pre_routed / n - share), c.tokens))
                picks[id(near)] = near
        return sorted(
            picks.values(),
            key=lambda c: (c.threshold is not None, c.threshold or 0.0),
        )

    def table(self) -> str:
        """The table ``selfroute calibrate`` prints."""
        head = f"{'min_top_score':>14}  {'pre-routed':>16}  {'tokens vs plain':>16}  lost"
        lines = [
            f"{self.questions:,} questions, plain Self-Route: {self.plain_tokens:,} input tokens",
            "",
            head,
            "-" * (len(head) + 4),
        ]
        n = max(1, self.questions)
        plain = max(1, self.plain_tokens)
        for c in self._shown():
            label = "off" if c.threshold is None else f"{c.threshold:g}"
            mark = "  <- chosen" if c is self.best else ""
            lines.append(
                f"{label:>14}  {c.pre_routed:>5} ({c.pre_routed / n:6.1%})  "
                f"{c.tokens / plain:>15.1%}  {c.lost:>4}{mark}"
            )
        lines.append("")
        lines.append(
            "pre-routed: questions sent straight to long context; tokens vs plain: total input "
            "tokens / plain Self-Route's; lost: questions the chunks answered that would go to "
            "long context instead."
        )
        if self.global_matched:
            change = self.global_pre_tokens / max(1, self.global_plain_tokens)
            verdict = "enabled" if self.global_questions else "disabled (it does not pay)"
            lines.append(
                f"global questions: {self.global_matched} matched; pre-routing them costs "
                f"{change:.1%} of their plain tokens ({self.global_lost} answered from chunks "
                f"would be lost): {verdict}"
            )
        else:
            lines.append("global questions: none in the data; the detector stays disabled")
        lines += self.notes
        return "\n".join(lines)


def _fail(path: Path, why: str) -> InvalidInputError:
    return InvalidInputError(f"{path}: {why}")


def _records(path: Path) -> Iterable[tuple[int, dict[str, Any]]]:
    if not path.exists():
        raise _fail(path, "no such file (give the results.jsonl of a `selfroute eval` run)")
    if path.is_dir():
        if (path / "results.jsonl").is_file():
            path = path / "results.jsonl"
        else:
            raise _fail(path, "is a folder without results.jsonl")
    seen = False
    try:
        with path.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    raise _fail(
                        path, f"line {lineno} is not JSON: not a `selfroute eval` results.jsonl"
                    ) from None
                missing = [k for k in _REQUIRED if not isinstance(row, dict) or k not in row]
                if missing:
                    raise _fail(
                        path,
                        f"line {lineno} is not a `selfroute eval` results record (missing "
                        f"{', '.join(missing)})",
                    )
                seen = True
                yield lineno, row
    except (OSError, UnicodeDecodeError) as exc:
        raise _fail(path, f"cannot read it: {exc}") from None
    if not seen:
        raise _fail(path, "is empty: not a `selfroute eval` results.jsonl")


def _stage_tokens(row: dict[str, Any], stage: str) -> int:
    total = 0
    for call in row.get("calls") or []:
        if isinstance(call, dict) and call.get("stage") == stage:
            usage = call.get("usage") or {}
            total += int(usage.get("input_tokens") or 0)
    return total


def _top_score(row: dict[str, Any]) -> float | None:
    value = row.get("top_score")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    scores = [
        float(p["score"])
        for p in row.get("retrieved") or []
        if isinstance(p, dict) and isinstance(p.get("score"), (int, float))
    ]
    return max(scores) if scores else None


def load_questions(
    path: str | os.PathLike[str], *, k: int | None = None
) -> tuple[list[Question], int, list[str]]:
    """Read the plain Self-Route runs of an eval ``results.jsonl``.

    Args:
        path: The file (or the eval output folder holding it).
        k: Which retrieval depth's runs to use (default: the only one, else 5, else the
            smallest).

    Returns:
        The questions, the ``k`` used, and notes for the report.

    Raises:
        InvalidInputError: Not an eval results file, no plain Self-Route runs, runs that were
            pre-routed, or no retrieval scores -- each named in the message.
    """
    file = Path(path)
    by_k: dict[int, list[dict[str, Any]]] = {}
    for _, row in _records(file):
        if row.get("method") != "self_route":
            continue
        row_k = row.get("k")
        if isinstance(row_k, int):
            by_k.setdefault(row_k, []).append(row)
    if not by_k:
        raise _fail(
            file,
            "no plain Self-Route runs (method self_route) to calibrate on; run `selfroute eval` "
            "with --methods including self-route",
        )
    notes: list[str] = []
    ks = sorted(by_k)
    if k is None:
        k = ks[0] if len(ks) == 1 else (5 if 5 in by_k else ks[0])
        if len(ks) > 1:
            notes.append(f"used the k={k} runs (the file also has k={ks}; choose with --k)")
    elif k not in by_k:
        raise _fail(file, f"no Self-Route runs with k={k}; the file has k={ks}")
    rows = by_k[k]
    pre = [r for r in rows if r.get("reason") in _PRE_ROUTED]
    if pre:
        raise _fail(
            file,
            f"{len(pre)} of its Self-Route runs were pre-routed (the RAG step never ran), so "
            "there is nothing to calibrate against; use a run without --pre-route/--min-top-score",
        )
    questions: list[Question] = []
    failed = 0
    for r in rows:
        if r.get("error"):
            failed += 1
            continue
        rag_tokens = r.get("rag_input_tokens")
        if not isinstance(rag_tokens, int):
            rag_tokens = _stage_tokens(r, "rag")
        lc_tokens = r.get("lc_input_tokens")
        if not isinstance(lc_tokens, int):
            lc_tokens = _stage_tokens(r, "long_context")
        if not lc_tokens:
            lc_tokens = int(r.get("lc_reference_tokens") or 0)
        if not lc_tokens:
            failed += 1
            continue
        questions.append(
            Question(
                question=str(r.get("question") or ""),
                top_score=_top_score(r),
                rag_answered=bool(r.get("answered_from_chunks")),
                rag_tokens=rag_tokens,
                lc_tokens=lc_tokens,
            )
        )
    if failed:
        notes.append(f"skipped {failed} failed or unpriced run(s)")
    if not questions:
        raise _fail(file, "none of its Self-Route runs completed; nothing to calibrate on")
    if all(q.top_score is None for q in questions):
        raise _fail(
            file,
            "no retrieval scores in the records (top_score and retrieved[].score are empty): "
            "the retriever gave none, so min_top_score cannot be calibrated",
        )
    return questions, k, notes


def _between(lo: float, hi: float) -> float:
    """A short number ``x`` with ``lo < x <= hi`` (the threshold between two scores)."""
    for digits in range(0, 12):
        x = round((lo + hi) / 2, digits)
        if lo < x <= hi:
            return x
    return hi


def calibrate(
    questions: Sequence[Question],
    *,
    objective: str = "tokens",
    patterns: Sequence[str] = DEFAULT_GLOBAL_PATTERNS,
) -> Calibration:
    """Choose ``min_top_score`` and whether to pre-route global questions.

    Args:
        questions: From :func:`load_questions`.
        objective: ``tokens`` (total input tokens).
        patterns: The global-question patterns (the flow's defaults).

    Raises:
        ConfigurationError: Unknown objective, or no questions.
    """
    if objective not in OBJECTIVES:
        raise ConfigurationError(f"unknown objective {objective!r}; choose from {OBJECTIVES}")
    if not questions:
        raise ConfigurationError("no questions to calibrate on")
    plain = sum(q.plain_tokens for q in questions)
    matched = [q for q in questions if is_global_question(q.question, patterns)]
    g_plain = sum(q.plain_tokens for q in matched)
    g_pre = sum(q.lc_tokens for q in matched)
    use_global = bool(matched) and g_pre < g_plain
    rest = [q for q in questions if not (use_global and is_global_question(q.question, patterns))]
    base = plain - g_plain + g_pre if use_global else plain
    base_pre = len(matched) if use_global else 0
    base_lost = sum(q.rag_answered for q in matched) if use_global else 0

    off = Candidate(None, base_pre, base, base_lost)
    candidates = [off]
    scored = sorted((q for q in rest if q.top_score is not None), key=lambda q: q.top_score or 0.0)
    tokens, pre, lost = base, base_pre, base_lost
    i = 0
    while i < len(scored):
        score = scored[i].top_score
        assert score is not None
        while i < len(scored) and scored[i].top_score == score:  # equal scores move together
            q = scored[i]
            tokens += q.lc_tokens - q.plain_tokens
            pre += 1
            lost += q.rag_answered
            i += 1
        nxt = scored[i].top_score if i < len(scored) else None
        hi = nxt if nxt is not None else score + max(1e-6, abs(score) * 0.01)
        candidates.append(Candidate(_between(score, hi), pre, tokens, lost))
    best = min(candidates, key=lambda c: (c.tokens, c.lost, c.pre_routed))
    return Calibration(
        questions=len(questions),
        plain_tokens=plain,
        global_matched=len(matched),
        global_plain_tokens=g_plain,
        global_pre_tokens=g_pre,
        global_lost=sum(q.rag_answered for q in matched),
        global_questions=use_global,
        candidates=candidates,
        best=best,
        objective=objective,
    )


# -- writing the config -------------------------------------------------------------------------
_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(?:#.*)?$")
_TABLE = "pre_route"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = repr(value)
        return text if math.isfinite(value) else "0.0"
    return json.dumps(value)


def update_pre_route(text: str, values: dict[str, object | None]) -> str:
    """``text`` (a ``selfroute.toml``) with the keys of its ``[pre_route]`` table set to
    ``values`` (``None`` removes a key); everything else is kept as it was. The table is added
    at the end when there is none."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    start = None
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m and m.group(1).replace('"', "").replace(" ", "") in (_TABLE, f"selfroute.{_TABLE}"):
            start = i
            break
    if start is None:
        block = [f"{k} = {_toml_value(v)}\n" for k, v in values.items() if v is not None]
        if not block:
            return "".join(lines)
        sep = ["\n"] if lines and lines[-1].strip() else []
        return "".join([*lines, *sep, f"[{_TABLE}]\n", *block])
    end = next(
        (j for j in range(start + 1, len(lines)) if _HEADER.match(lines[j])),
        len(lines),
    )
    section = lines[start + 1 : end]
    for key, value in values.items():
        pattern = re.compile(rf"^\s*{key.replace('_', '[_-]')}\s*=")
        hits = [j for j, line in enumerate(section) if pattern.match(line)]
        new = None if value is None else f"{key} = {_toml_value(value)}\n"
        if hits:
            if new is None:
                section = [line for j, line in enumerate(section) if j not in hits]
            else:
                section[hits[0]] = new
                section = [line for j, line in enumerate(section) if j not in hits[1:]]
        elif new is not None:
            last = max((j for j, line in enumerate(section) if line.strip()), default=-1)
            section.insert(last + 1, new)
    return "".join([*lines[: start + 1], *section, *lines[end:]])


def _write(path: Path, values: dict[str, object | None]) -> None:
    old = ""
    if path.exists():
        try:
            old = path.read_text(encoding="utf-8")
            tomllib.loads(old)
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"cannot read config file {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"config file {path} is not valid TOML: {exc}") from exc
    new = update_pre_route(old, values)
    try:
        data = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(
            f"cannot add a [pre_route] table to {path} ({exc}); set pre_route there by hand"
        ) from exc
    table = data.get(_TABLE) or (data.get("selfroute") or {}).get(_TABLE) or {}
    for key, value in values.items():
        if value is not None and table.get(key) != value:
            raise ConfigurationError(
                f"{path} sets pre_route.{key} in another way; set it there by hand"
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(new)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def score_scale_of(results: str | os.PathLike[str]) -> str | None:
    """The retriever score scale of an eval run (its ``summary.json``): ``bm25`` for the eval's
    own retriever; ``None`` when the run does not say (a custom retriever, an older run)."""
    path = Path(results)
    folder = path if path.is_dir() else path.parent
    try:
        data = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    scale = data.get("score_scale") if isinstance(data, dict) else None
    return scale if isinstance(scale, str) and scale else None


# -- the command --------------------------------------------------------------------------------
def run_calibrate(args: argparse.Namespace) -> int:
    """``selfroute calibrate RESULTS``."""
    questions, k, notes = load_questions(args.results, k=args.k)
    result = calibrate(questions, objective=args.objective)
    result.notes += notes
    print(f"Calibrating pre-routing on {args.results} (Self-Route, k={k}; objective: tokens)")
    print(result.table())
    threshold = result.min_top_score
    scale = score_scale_of(args.results)
    values: dict[str, object | None] = {
        "global_questions": result.global_questions,
        "min_top_score": threshold,
        "score_scale": scale if threshold is not None else None,
    }
    print()
    if threshold is None:
        print("no threshold lowers the tokens: min_top_score stays unset")
    else:
        saved = 1 - result.best.tokens / max(1, result.plain_tokens)
        print(
            f"min_top_score = {threshold:g}: {result.best.pre_routed} of {result.questions} "
            f"questions pre-routed, {saved:.1%} fewer input tokens than plain Self-Route, "
            f"{result.best.lost} answer(s) from chunks lost"
        )
    where = {
        "bm25": "`selfroute ask --doc` (the same BM25 as eval's)",
        "bm25s": "the store's `--retrieval bm25`",
        "rrf": "the store's `--retrieval hybrid`",
        "cosine": "the store's `--retrieval dense`",
    }.get(scale or "", "a retriever with the same scores")
    print(
        f"note: the threshold is on the {scale or 'unrecorded'} score scale of the eval run's "
        f"retriever: it applies to {where}; `ask` refuses it with a retriever on another scale"
    )
    if args.no_write:
        return 0
    path = Path(args.config or CONFIG_FILE)
    _write(path, values)
    written = ", ".join(f"{k} = {_toml_value(v)}" for k, v in values.items() if v is not None)
    print(f"wrote [pre_route] {written} to {path}")
    return 0


def add_parser(sub: Any, parents: Sequence[argparse.ArgumentParser], epilog: str) -> None:
    """Register ``calibrate`` on the main CLI's subparsers."""
    parser = sub.add_parser(
        "calibrate",
        parents=list(parents),
        help="pick pre-routing settings (min_top_score, global questions) from an eval run",
        description="Pick the pre-routing settings from a `selfroute eval` run. Reads the "
        "results.jsonl of `selfroute eval` "
        "(a run without pre-routing), prints the trade-off and writes [pre_route] into the "
        "config file (--config, else ./selfroute.toml), keeping its other settings.",
        epilog=epilog,
    )
    parser.add_argument(
        "results", metavar="RESULTS", help="results.jsonl of a `selfroute eval` run (or its folder)"
    )
    parser.add_argument(
        "--objective",
        choices=OBJECTIVES,
        default="tokens",
        help="what to minimise (default: tokens: total input tokens)",
    )
    parser.add_argument(
        "--k",
        type=int,
        default=None,
        help="calibrate on the runs with this k (default: the only one, else 5, else the smallest)",
    )
    parser.add_argument(
        "--no-write", action="store_true", help="print the table, leave the config file alone"
    )
    parser.set_defaults(func=run_calibrate)
