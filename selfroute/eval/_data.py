"""Eval items and the loaders for LongBench-, LaRA- and SQuAD-2.0-style files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from selfroute._chunking import document_id
from selfroute._errors import ConfigurationError, InvalidInputError
from selfroute._jsonl import read_jsonl
from selfroute.eval.metrics import METRICS, metric_for_longbench

__all__ = [
    "UNANSWERABLE_GOLD",
    "EvalItem",
    "is_unanswerable_gold",
    "load_dataset",
    "load_lara",
    "load_longbench",
    "load_sample",
    "load_squad",
]

#: Separator placed between articles when they are concatenated into one haystack.
HAYSTACK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class EvalItem:
    """One labelled question over one document.

    Attributes:
        id: Stable identifier (from the file, else ``<file>:<line>``).
        question: The question.
        document: The whole document the question is asked over (the long context).
        answers: Gold answers (the best match counts). Empty for unanswerable questions.
        doc_id: Identifier of the document; items sharing it share one retrieval index.
        unanswerable: The document does not answer the question; declining is correct.
        metric: How answers are scored (see :data:`selfroute.eval.metrics.METRICS`).
        dataset: Dataset name (LongBench names select the official scoring rules).
        all_classes: Label set for classification tasks.
        choices: Option texts for multiple-choice questions (``A`` first).
        metadata: Anything else from the source row.
    """

    id: str
    question: str
    document: str
    answers: tuple[str, ...] = ()
    doc_id: str = ""
    unanswerable: bool = False
    metric: str = "qa_f1"
    dataset: str | None = None
    all_classes: tuple[str, ...] | None = None
    choices: tuple[str, ...] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        where = f"eval item {self.id!r}"
        for name in ("question", "document"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise InvalidInputError(f"{where}: {name} must be a non-empty string")
        if isinstance(self.answers, str) or not all(isinstance(a, str) for a in self.answers):
            raise InvalidInputError(f"{where}: answers must be a list of strings")
        object.__setattr__(self, "answers", tuple(self.answers))
        if not self.answers and not self.unanswerable:
            raise InvalidInputError(
                f"{where}: no gold answers; mark it unanswerable or give answers"
            )
        if self.metric not in METRICS:
            raise ConfigurationError(
                f"{where}: unknown metric {self.metric!r}; use one of {sorted(METRICS)}"
            )
        if not self.doc_id:
            object.__setattr__(self, "doc_id", document_id(self.document))


def _require(row: Mapping[str, Any], keys: Sequence[str], where: str) -> None:
    missing = [k for k in keys if k not in row]
    if missing:
        raise InvalidInputError(f"{where}: missing field(s) {missing}; found {sorted(row)}")


def _str_list(value: Any, where: str, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInputError(f"{where}: {name} must be a string or a list of strings")
    return tuple(value)


#: LongBench's gold answer for a question the article does not answer (Qasper).
UNANSWERABLE_GOLD = "unanswerable"


def is_unanswerable_gold(answers: Sequence[str]) -> bool:
    """Whether every gold answer is LongBench's ``"Unanswerable"`` (case and punctuation
    ignored). A question where some annotators wrote an answer stays answerable."""
    return bool(answers) and all(
        " ".join(a.lower().strip(" .!\"'").split()) == UNANSWERABLE_GOLD for a in answers
    )


def load_longbench(
    path: str | Path, *, dataset: str | None = None, metric: str | None = None
) -> list[EvalItem]:
    """Load a LongBench-style JSONL file.

    Each line has ``input`` (the question), ``context`` (the document) and ``answers``; optional
    ``all_classes``, ``dataset``, ``length`` and ``_id``. The dataset name (``dataset`` argument,
    else the row's ``dataset``, else the file name: ``qasper.jsonl`` -> ``qasper``) selects
    LongBench's official metric unless ``metric`` is given. A row whose every gold answer is
    ``"Unanswerable"`` (Qasper) is marked unanswerable: the harness scores it by whether the
    answer declines (see :func:`is_unanswerable_gold`).
    """
    p = Path(path)
    items = []
    for lineno, row in read_jsonl(p):
        where = f"{p}:{lineno}"
        _require(row, ("input", "context", "answers"), where)
        name = dataset or row.get("dataset") or p.stem.split(".")[0]
        if metric is not None:
            chosen, ds = metric, None
        else:
            try:
                chosen, ds = metric_for_longbench(name), name
            except ConfigurationError as exc:
                raise ConfigurationError(f"{where}: {exc} (or pass metric=)") from None
        classes = row.get("all_classes")
        answers = _str_list(row["answers"], where, "answers")
        items.append(
            EvalItem(
                id=str(row.get("_id") or f"{p.name}:{lineno}"),
                question=row["input"],
                document=row["context"],
                answers=answers,
                unanswerable=is_unanswerable_gold(answers),
                metric=chosen,
                dataset=ds,
                all_classes=tuple(classes) if classes else None,
                metadata={"length": row.get("length"), "source": str(p)},
            )
        )
    return items


def _inside(root: Path, path: Path) -> bool:
    """Whether ``path``, with every link resolved, lies inside the resolved ``root``."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a link loop
        return False


def _find_document(root: Path, row: Mapping[str, Any], where: str = "") -> Path:
    """The document file a LaRA query row names, always inside ``root``.

    The row's ``file`` (and its ``length``/``type`` folders) come from a data file, which may be
    hostile: an absolute path, ``..`` or a link out of the folder is refused, so an eval run
    never reads (and sends to a model, and writes into its outputs) a file outside ``root``.
    """
    name = str(row["file"])
    parts = [name, str(row.get("length", "")), str(row.get("type", ""))]
    label = f"{where}: " if where else ""
    for part in parts:
        if Path(part).is_absolute() or ".." in Path(part).parts or "\x00" in part:
            raise InvalidInputError(
                f"{label}document file {name!r} is outside the documents folder {root}"
            )
    top = root.resolve()
    candidates = [
        root / parts[1] / parts[2] / name,
        root / parts[2] / name,
        root / name,
    ]
    for c in candidates:
        if c.is_file():
            if not _inside(top, c):
                raise InvalidInputError(
                    f"{label}document file {name!r} leads outside the documents folder {root}"
                )
            return c
    found = sorted(f for f in root.rglob(name) if _inside(top, f))
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        raise InvalidInputError(
            f"document {name!r} is ambiguous under {root}: {[str(f) for f in found[:4]]}"
        )
    raise InvalidInputError(f"document {name!r} not found under {root}")


def load_lara(queries: str | Path, documents: str | Path) -> list[EvalItem]:
    """Load LaRA-style query files plus their document folder.

    Args:
        queries: A query JSONL file, or a folder of them (``32k_book_location.jsonl`` ...). Each
            line has ``question``, ``answer`` and ``file`` (the document's file name); ``level ==
            "hallu"`` marks a question the document does not answer.
        documents: Folder holding the documents (searched as ``<length>/<type>/<file>``, then
            ``<type>/<file>``, ``<file>``, then anywhere below).
    """
    qpath, root = Path(queries), Path(documents)
    if not root.is_dir():
        raise InvalidInputError(f"LaRA documents folder {root} does not exist")
    files = sorted(qpath.glob("*.jsonl")) if qpath.is_dir() else [qpath]
    if not files:
        raise InvalidInputError(f"no .jsonl query files in {qpath}")
    texts: dict[Path, str] = {}
    items = []
    for f in files:
        for lineno, row in read_jsonl(f):
            where = f"{f}:{lineno}"
            _require(row, ("question", "answer", "file"), where)
            doc_path = _find_document(root, row, where)
            if doc_path not in texts:
                texts[doc_path] = doc_path.read_text(encoding="utf-8")
            hallu = str(row.get("level", "")).lower() == "hallu"
            items.append(
                EvalItem(
                    id=f"{f.stem}:{lineno}",
                    question=row["question"],
                    document=texts[doc_path],
                    answers=() if hallu else _str_list(row["answer"], where, "answer"),
                    doc_id=doc_path.name,
                    unanswerable=hallu,
                    dataset=f"lara-{row.get('type', '')}-{row.get('level', '')}".rstrip("-"),
                    metadata={"reference": row["answer"], "level": row.get("level")},
                )
            )
    return items


def load_squad(path: str | Path, *, haystack: bool = False) -> list[EvalItem]:
    """Load SQuAD-2.0-style article files (``articles_as_documents.jsonl``).

    Each line is an article: ``title``, ``document`` and ``questions`` (``id``, ``question``,
    ``answers``, ``is_impossible``). Impossible questions are unanswerable.

    Args:
        path: The JSONL file.
        haystack: Concatenate all articles into one document and ask every question over it (a
            longer context, closer to the paper's setting).
    """
    p = Path(path)
    articles = []
    for lineno, row in read_jsonl(p):
        _require(row, ("document", "questions"), f"{p}:{lineno}")
        articles.append((lineno, row))
    if not articles:
        raise InvalidInputError(f"{p}: no articles")
    hay = HAYSTACK_SEPARATOR.join(r["document"].strip() for _, r in articles) if haystack else ""
    items = []
    for lineno, row in articles:
        title = str(row.get("title") or f"article-{lineno}")
        for qi, q in enumerate(row["questions"]):
            where = f"{p}:{lineno} question {qi}"
            _require(q, ("question",), where)
            impossible = bool(q.get("is_impossible", False))
            items.append(
                EvalItem(
                    id=str(q.get("id") or f"{title}:{qi}"),
                    question=q["question"],
                    document=hay or row["document"],
                    answers=() if impossible else _str_list(q.get("answers", []), where, "answers"),
                    doc_id="haystack" if haystack else title,
                    unanswerable=impossible,
                    dataset="squad_v2",
                    metadata={
                        "title": title,
                        "plausible_answers": q.get("plausible_answers") or [],
                    },
                )
            )
    return items


def _detect(path: Path) -> str:
    probe = next(iter(sorted(path.glob("*.jsonl")))) if path.is_dir() else path
    for _, row in read_jsonl(probe):
        if {"input", "context", "answers"} <= row.keys():
            return "longbench"
        if {"document", "questions"} <= row.keys():
            return "squad"
        if {"question", "answer", "file"} <= row.keys():
            return "lara"
        raise InvalidInputError(
            f"{probe}: cannot tell the format from the fields {sorted(row)}; expected LongBench "
            "(input, context, answers), SQuAD articles (document, questions) or LaRA "
            "(question, answer, file)"
        )
    raise InvalidInputError(f"{probe}: empty file")


def load_dataset(
    path: str | Path,
    *,
    format: str = "auto",
    documents: str | Path | None = None,
    haystack: bool = False,
    metric: str | None = None,
) -> list[EvalItem]:
    """Load any supported file, detecting the format from the first row.

    Args:
        path: The data file (or LaRA query folder).
        format: ``auto``, ``longbench``, ``lara`` or ``squad``.
        documents: LaRA's document folder.
        haystack: SQuAD: concatenate the articles into one document.
        metric: LongBench: override the metric.
    """
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"{p}: no such file or folder")
    kind = _detect(p) if format == "auto" else format
    if kind == "longbench":
        return load_longbench(p, metric=metric)
    if kind == "squad":
        return load_squad(p, haystack=haystack)
    if kind == "lara":
        if documents is None:
            raise ConfigurationError("LaRA data needs the document folder (documents=/--documents)")
        return load_lara(p, documents)
    raise ConfigurationError(f"unknown format {format!r}; use auto, longbench, lara or squad")


SAMPLE_FILE = "squad_sample.jsonl"


def load_sample(*, haystack: bool = True) -> list[EvalItem]:
    """The bundled sample: three SQuAD 2.0 articles with 40 questions each (CC BY-SA 4.0).

    By default the articles form one haystack (about 10,600 words), so every question is asked
    over all three. Used by ``selfroute eval --sample`` for a keyless first run.
    """
    ref = resources.files("selfroute.eval").joinpath("data").joinpath(SAMPLE_FILE)
    with resources.as_file(ref) as path:
        return load_squad(path, haystack=haystack)
