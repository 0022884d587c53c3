"""Loaders for LongBench, LaRA and SQuAD-2.0-style files, and the bundled sample."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfroute import ConfigurationError, InvalidInputError
from selfroute.eval import (
    EvalItem,
    load_dataset,
    load_lara,
    load_longbench,
    load_sample,
    load_squad,
)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_longbench_metric_from_file_name(tmp_path: Path) -> None:
    p = _jsonl(
        tmp_path / "qasper.jsonl",
        [{"input": "Q?", "context": "Doc text.", "answers": ["A"], "_id": "x1", "length": 3}],
    )
    (item,) = load_longbench(p)
    assert item.id == "x1" and item.dataset == "qasper" and item.metric == "qa_f1"
    assert item.answers == ("A",) and item.metadata["length"] == 3


def test_longbench_trec_keeps_classes_and_metric_override(tmp_path: Path) -> None:
    row = {"input": "Q?", "context": "D.", "answers": ["Human"], "all_classes": ["Human", "Loc"]}
    (item,) = load_longbench(_jsonl(tmp_path / "trec.jsonl", [row]))
    assert item.metric == "classification" and item.all_classes == ("Human", "Loc")
    (other,) = load_longbench(_jsonl(tmp_path / "mine.jsonl", [row]), metric="exact_match")
    assert other.metric == "exact_match" and other.dataset is None


def test_longbench_errors_name_the_line(tmp_path: Path) -> None:
    p = tmp_path / "qasper.jsonl"
    p.write_text('{"input": "Q", "context": "D", "answers": ["A"]}\n{"input": "Q"}\n')
    with pytest.raises(InvalidInputError, match=r"qasper.jsonl:2: missing field"):
        load_longbench(p)
    p.write_text("not json\n")
    with pytest.raises(InvalidInputError, match=r"qasper.jsonl:1: not valid JSON"):
        load_longbench(p)
    unknown = _jsonl(tmp_path / "unknown.jsonl", [{"input": "Q", "context": "D", "answers": ["A"]}])
    with pytest.raises(ConfigurationError, match="not a LongBench dataset"):
        load_longbench(unknown)


def test_lara_documents_and_hallu(tmp_path: Path) -> None:
    docs = tmp_path / "docs" / "32k" / "book"
    docs.mkdir(parents=True)
    (docs / "Tale.txt").write_text("Hartman lived in Dunmore.", encoding="utf-8")
    q = tmp_path / "query"
    q.mkdir()
    # LaRA files sometimes lack the final newline
    (q / "32k_book_location.jsonl").write_text(
        json.dumps(
            {
                "type": "book",
                "level": "location",
                "length": "32k",
                "file": "Tale.txt",
                "question": "Where did Hartman live?",
                "answer": "Dunmore",
            }
        ),
        encoding="utf-8",
    )
    _jsonl(
        q / "32k_book_hallu.jsonl",
        [
            {
                "type": "book",
                "level": "hallu",
                "length": "32k",
                "file": "Tale.txt",
                "question": "What was his horse called?",
                "answer": "The text does not mention a horse.",
            }
        ],
    )
    items = load_lara(q, tmp_path / "docs")
    by_level = {i.metadata["level"]: i for i in items}
    assert by_level["location"].answers == ("Dunmore",)
    assert by_level["location"].document == "Hartman lived in Dunmore."
    assert by_level["hallu"].unanswerable and by_level["hallu"].answers == ()
    assert by_level["hallu"].doc_id == by_level["location"].doc_id == "Tale.txt"
    assert load_dataset(q, documents=tmp_path / "docs") == items
    with pytest.raises(ConfigurationError, match="document folder"):
        load_dataset(q)
    with pytest.raises(InvalidInputError, match="not found"):
        load_lara(q, tmp_path / "query")


def _articles(tmp_path: Path) -> Path:
    return _jsonl(
        tmp_path / "articles.jsonl",
        [
            {
                "title": "A",
                "document": "Alpha text about Rome.",
                "questions": [
                    {
                        "id": "a1",
                        "question": "What city?",
                        "answers": ["Rome"],
                        "is_impossible": False,
                    },
                    {
                        "id": "a2",
                        "question": "What river?",
                        "answers": [],
                        "is_impossible": True,
                        "plausible_answers": ["Tiber"],
                    },
                ],
            },
            {
                "title": "B",
                "document": "Beta text about Oslo.",
                "questions": [
                    {
                        "id": "b1",
                        "question": "Which capital?",
                        "answers": ["Oslo"],
                        "is_impossible": False,
                    },
                ],
            },
        ],
    )


def test_squad_articles_and_haystack(tmp_path: Path) -> None:
    p = _articles(tmp_path)
    items = load_squad(p)
    assert [i.doc_id for i in items] == ["A", "A", "B"]
    assert items[1].unanswerable and items[1].metadata["plausible_answers"] == ["Tiber"]
    hay = load_squad(p, haystack=True)
    assert {i.doc_id for i in hay} == {"haystack"}
    assert hay[0].document == "Alpha text about Rome.\n\nBeta text about Oslo."
    assert load_dataset(p, haystack=True) == hay


def test_autodetect_rejects_unknown_rows(tmp_path: Path) -> None:
    p = _jsonl(tmp_path / "x.jsonl", [{"foo": 1}])
    with pytest.raises(InvalidInputError, match="cannot tell the format"):
        load_dataset(p)
    with pytest.raises(InvalidInputError, match="no such file"):
        load_dataset(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigurationError, match="unknown format"):
        load_dataset(p, format="csv")


def test_item_validation() -> None:
    with pytest.raises(InvalidInputError, match="question"):
        EvalItem(id="x", question=" ", document="d", answers=("a",))
    with pytest.raises(InvalidInputError, match="no gold answers"):
        EvalItem(id="x", question="q", document="d")
    with pytest.raises(InvalidInputError, match="list of strings"):
        EvalItem(id="x", question="q", document="d", answers="abc")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unknown metric"):
        EvalItem(id="x", question="q", document="d", answers=("a",), metric="bleu")
    assert EvalItem(id="x", question="q", document="d", answers=["a"]).doc_id  # type: ignore[arg-type]


def test_bundled_sample() -> None:
    items = load_sample()
    assert len(items) == 120
    assert sum(i.unanswerable for i in items) == 60
    assert {i.doc_id for i in items} == {"haystack"}
    assert len(items[0].document.split()) > 10_000
    per_article = load_sample(haystack=False)
    assert {i.doc_id for i in per_article} == {"Normans", "1973_oil_crisis", "Harvard_University"}
