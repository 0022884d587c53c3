"""``selfroute verdicts``: what the decline detector says about *your* model's outputs.

Reads a JSON Lines or CSV file of model outputs (a log of RAG answers, an eval run's
``results.jsonl``, a labelling spreadsheet) and classifies each with :func:`selfroute.parse_verdict` as the flow would: with the question when
the row has one, the sentinel, ``--strict`` and ``--decline-pattern`` (flag, ``SELFROUTE_*`` or
``selfroute.toml``, like ``ask``). It prints how many outputs it reads as declines, of which kind,
and, when the rows carry your own labels (``declined: true/false``), precision and recall against
them with the outputs it got wrong -- so you can check, before you deploy, that it hears how your
model declines, and whether a ``--decline-pattern`` fixes what it misses.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from selfroute._errors import InvalidInputError
from selfroute._jsonl import jsonl_objects, open_text, read_jsonl
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict import (
    DeclineDetector,
    DeclinePattern,
    Verdict,
    VerdictKind,
    parse_verdict,
)

__all__ = [
    "Row",
    "Summary",
    "add_parser",
    "csv_objects",
    "read_rows",
    "run_verdicts",
    "summarise",
]

#: Fields tried, in order, for the output text and the question when none is named.
TEXT_FIELDS = ("prediction", "output", "answer", "response", "text", "rag_answer")
QUESTION_FIELDS = ("question", "query", "input")
LABEL_FIELD = "declined"
_SHOWN_CHARS = 160
#: How a CSV cell spells a label (case and surrounding spaces ignored); an empty cell is no label.
CSV_LABELS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


@dataclass(frozen=True)
class Row:
    """One output to classify.

    Attributes:
        line: Its line number in the file (from 1).
        text: What the model wrote.
        question: The question, if the row has one.
        label: Your label (``True``: the output declines), if the row has one.
    """

    line: int
    text: str
    question: str | None = None
    label: bool | None = None


def _pick(obj: dict[str, Any], named: str | None, candidates: Sequence[str]) -> str | None:
    if named is not None:
        return named if named in obj else None
    return next((f for f in candidates if f in obj), None)


def _label(value: Any, where: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise InvalidInputError(f"{where}: the label must be true, false or null, got {value!r}")


_EXTRA = "\x00extra"  # DictReader's key for cells past the header's columns


def csv_objects(
    stream: TextIO, source: str, *, label_field: str = LABEL_FIELD
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each record of a CSV file with a header row.

    The objects are what :func:`read_rows` takes: every cell a string (a record with fewer cells
    than the header ends in empty ones; an empty output is an empty output, an empty question no
    question), and the label column's ``true``/``yes``/``1`` and ``false``/``no``/``0`` (any case)
    booleans, an empty label cell ``None``. A record's line number is the line it ends on, so a
    quoted cell spanning lines counts them all.

    Raises:
        InvalidInputError: The file has no header row, is not valid CSV (an unclosed quote, a
            character after a closing quote), a record has more cells than the header, or a label
            cell is none of those words -- naming ``source:line``.
    """
    reader = csv.DictReader(stream, restkey=_EXTRA, restval="", strict=True)
    try:
        for record in reader:
            where = f"{source}:{reader.line_num}"
            if _EXTRA in record:
                raise InvalidInputError(
                    f"{where}: {len(reader.fieldnames or ()) + len(record[_EXTRA])} cells for "
                    f"{len(reader.fieldnames or ())} columns in the header"
                )
            obj: dict[str, Any] = dict(record)
            if label_field in obj:
                cell = obj[label_field].strip()
                obj[label_field] = CSV_LABELS.get(cell.lower()) if cell else None
                if cell and obj[label_field] is None:
                    raise InvalidInputError(
                        f"{where}: {label_field}: the label must be true or false "
                        f"(yes/no, 1/0) or empty, got {cell!r}"
                    )
            yield reader.line_num, obj
    except csv.Error as exc:
        # line_num counts the lines of complete records: the bad record starts on the next one
        where = f"{source}:{reader.line_num + 1}"
        raise InvalidInputError(f"{where}: not valid CSV ({exc})") from None
    if reader.fieldnames is None:
        raise InvalidInputError(
            f"{source}: empty: a CSV file needs a header row naming its columns"
        )


def read_rows(
    objects: Iterable[tuple[int, dict[str, Any]]],
    *,
    source: str = "input",
    text_field: str | None = None,
    question_field: str | None = None,
    label_field: str = LABEL_FIELD,
    use_question: bool = True,
) -> Iterator[Row]:
    """The rows of ``(line number, object)`` pairs (from :func:`selfroute._jsonl.read_jsonl` or
    :func:`csv_objects`).

    Raises:
        InvalidInputError: An object with no text field (naming the fields it has), or whose text
            or label has the wrong type -- naming ``source:line``.
    """
    for number, obj in objects:
        where = f"{source}:{number}"
        field = _pick(obj, text_field, TEXT_FIELDS)
        if field is None:
            wanted = text_field or " or ".join(TEXT_FIELDS)
            raise InvalidInputError(
                f"{where}: no {wanted} field (it has {', '.join(sorted(obj)) or 'none'});"
                " name the output's field with --text-field"
            )
        text = obj[field]
        if text is not None and not isinstance(text, str):
            raise InvalidInputError(f"{where}: {field} must be a string, got {type(text).__name__}")
        question = None
        if use_question:
            qfield = _pick(obj, question_field, QUESTION_FIELDS)
            value = obj.get(qfield) if qfield is not None else None
            question = value if isinstance(value, str) and value.strip() else None
        label = _label(obj.get(label_field), f"{where}: {label_field}")
        yield Row(number, text or "", question, label)


@dataclass(frozen=True)
class Summary:
    """What the detector said about a file's outputs.

    Attributes:
        rows: Outputs read.
        kinds: Outputs by verdict kind.
        labelled: Outputs with a label.
        caught: Labelled declines it declined (true positives).
        false_declines: Labelled answers it declined.
        missed: Labelled declines it read as answers.
        errors: ``(row, verdict)`` of each labelled output it got wrong, in file order.
    """

    rows: int
    kinds: dict[str, int]
    labelled: int
    caught: int
    false_declines: int
    missed: int
    errors: tuple[tuple[Row, Verdict], ...]

    @property
    def declined(self) -> int:
        """Outputs it reads as declines (every kind but ``answered``)."""
        return self.rows - self.kinds.get(VerdictKind.ANSWERED.value, 0)

    @property
    def precision(self) -> float | None:
        """Of the labelled outputs it declined, the share you labelled declines."""
        called = self.caught + self.false_declines
        return self.caught / called if called else None

    @property
    def recall(self) -> float | None:
        """Of the outputs you labelled declines, the share it declined."""
        declines = self.caught + self.missed
        return self.caught / declines if declines else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the counts, precision, recall and the wrong outputs."""
        return {
            "rows": self.rows,
            "declined": self.declined,
            "kinds": dict(self.kinds),
            "labelled": self.labelled,
            "caught": self.caught,
            "false_declines": self.false_declines,
            "missed": self.missed,
            "precision": self.precision,
            "recall": self.recall,
            "errors": [
                {
                    "line": row.line,
                    "label": "declined" if row.label else "answered",
                    "kind": verdict.kind.value,
                    "matched": verdict.matched,
                    "text": row.text,
                    "question": row.question,
                }
                for row, verdict in self.errors
            ],
        }


def summarise(
    rows: Iterable[Row],
    *,
    sentinel: str = DEFAULT_SENTINEL,
    strict: bool = False,
    detector: DeclineDetector | None = None,
) -> Summary:
    """Classify every row as the flow's RAG step would, and count against the labels."""
    kinds: Counter[str] = Counter()
    n = labelled = caught = false_declines = missed = 0
    errors: list[tuple[Row, Verdict]] = []
    for row in rows:
        n += 1
        verdict = parse_verdict(
            row.text, sentinel=sentinel, strict=strict, question=row.question, detector=detector
        )
        kinds[verdict.kind.value] += 1
        if row.label is None:
            continue
        labelled += 1
        if verdict.declined and row.label:
            caught += 1
        elif verdict.declined:
            false_declines += 1
            errors.append((row, verdict))
        elif row.label:
            missed += 1
            errors.append((row, verdict))
    order = [k.value for k in VerdictKind]
    return Summary(
        rows=n,
        kinds={k: kinds[k] for k in order if kinds[k]},
        labelled=labelled,
        caught=caught,
        false_declines=false_declines,
        missed=missed,
        errors=tuple(errors),
    )


def _wilson(hits: int, n: int) -> str:
    """The 95% Wilson interval of ``hits / n``."""
    if not n:
        return ""
    z = 1.96
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f" (95% interval {max(0.0, centre - half):.3f}-{min(1.0, centre + half):.3f})"


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SHOWN_CHARS else flat[: _SHOWN_CHARS - 3] + "..."


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def format_summary(summary: Summary, *, source: str, show: int) -> str:
    """The report ``selfroute verdicts`` prints."""
    lines = [f"{_n(summary.rows, 'output')} in {source}: {summary.declined} read as declines"]
    lines += [f"  {kind:<9} {count}" for kind, count in summary.kinds.items()]
    if not summary.labelled:
        lines.append(f"no labels (a '{LABEL_FIELD}: true/false' field): no precision or recall")
        return "\n".join(lines)
    called = summary.caught + summary.false_declines
    declines = summary.caught + summary.missed
    precision = "-" if summary.precision is None else f"{summary.precision:.3f}"
    recall = "-" if summary.recall is None else f"{summary.recall:.3f}"
    lines += [
        f"against your labels ({_n(summary.labelled, 'output')}, {_n(declines, 'decline')}):",
        f"  precision {precision}{_wilson(summary.caught, called)}: "
        f"{_n(summary.false_declines, 'answer')} read as "
        + ("a decline" if summary.false_declines == 1 else "declines"),
        f"  recall    {recall}{_wilson(summary.caught, declines)}: "
        f"{_n(summary.missed, 'decline')} read as "
        + ("an answer" if summary.missed == 1 else "answers")
        + " (served)",
    ]
    for row, verdict in summary.errors[:show]:
        if row.label:
            what = "missed decline"
        elif verdict.matched:
            what = f"false decline ({verdict.kind.value}: {verdict.matched!r})"
        else:
            what = f"false decline ({verdict.kind.value})"
        lines.append(f"  line {row.line}: {what}: {_shorten(row.text)}")
    if len(summary.errors) > show:
        lines.append(f"  ... {len(summary.errors) - show} more (--show N, or --json)")
    return "\n".join(lines)


def run_verdicts(args: argparse.Namespace) -> int:
    """``selfroute verdicts FILE``."""
    from selfroute.cli._commands import settings_for
    from selfroute.cli._output import printable

    settings = settings_for(args, "verdicts")
    source = "stdin" if args.file == "-" else args.file
    rows = read_rows(
        _objects(args.file, source, args.format, args.label_field),
        source=source,
        text_field=args.text_field,
        question_field=args.question_field,
        label_field=args.label_field,
        use_question=not args.no_question,
    )
    pattern = settings.decline_pattern
    summary = summarise(
        rows,
        sentinel=args.sentinel,
        strict=bool(settings.strict),
        detector=DeclinePattern(pattern) if pattern else None,
    )
    if args.json:
        sys.stdout.write(json.dumps(summary.to_dict(), ensure_ascii=False) + "\n")
    else:
        print(printable(format_summary(summary, source=source, show=args.show)))
    return 0


def _objects(
    file: str, source: str, fmt: str | None, label_field: str
) -> Iterator[tuple[int, dict[str, Any]]]:
    """The file's (or stdin's) objects, as JSON Lines or CSV (by ``--format``, else the suffix)."""
    if (fmt or ("csv" if file.lower().endswith(".csv") else "jsonl")) == "jsonl":
        yield from jsonl_objects(sys.stdin, source) if file == "-" else read_jsonl(Path(file))
        return
    if file == "-":
        yield from csv_objects(sys.stdin, source, label_field=label_field)
        return
    # utf-8-sig: a spreadsheet's "CSV UTF-8" export starts with a byte-order mark
    with open_text(Path(file), encoding="utf-8-sig", newline="") as fh:
        yield from csv_objects(fh, source, label_field=label_field)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def add_parser(sub: Any, parents: Sequence[argparse.ArgumentParser], epilog: str) -> None:
    """Register ``verdicts`` on the main CLI's subparsers."""
    from selfroute.cli._config import add_settings

    parser = sub.add_parser(
        "verdicts",
        parents=list(parents),
        help="what the decline detector says about your model's outputs (JSON Lines or CSV), "
        "and its precision and recall against your labels",
        description="Classify each output of a JSON Lines or CSV file as the RAG step would (with the "
        "row's question, the sentinel, --strict and --decline-pattern), count the declines by "
        "kind, and, where rows carry 'declined: true/false', report precision and recall "
        "against those labels with the outputs it got wrong.",
        epilog=epilog,
    )
    parser.add_argument(
        "file", metavar="FILE", help="JSON Lines or CSV (with a header row) of outputs ('-': stdin)"
    )
    parser.add_argument(
        "--format",
        choices=("jsonl", "csv"),
        help="how FILE is written (default: csv for a name ending .csv, else jsonl)",
    )
    parser.add_argument(
        "--text-field",
        metavar="NAME",
        help=f"the output's field (default: the first of {', '.join(TEXT_FIELDS)})",
    )
    parser.add_argument(
        "--question-field",
        metavar="NAME",
        help=f"the question's field (default: the first of {', '.join(QUESTION_FIELDS)})",
    )
    parser.add_argument(
        "--label-field",
        metavar="NAME",
        default=LABEL_FIELD,
        help=f"your label's field, true for a decline (default: {LABEL_FIELD})",
    )
    parser.add_argument("--no-question", action="store_true", help="classify without the questions")
    parser.add_argument(
        "--sentinel",
        default=DEFAULT_SENTINEL,
        help=f"the decline word your prompt asks for (default: {DEFAULT_SENTINEL})",
    )
    parser.add_argument(
        "--show",
        type=_count,
        default=10,
        metavar="N",
        help="wrong outputs to list (default: 10)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_settings(parser, "verdicts")
    parser.set_defaults(func=run_verdicts)
