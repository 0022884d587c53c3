"""The blind-set-2 scorer (benchmarks/verdict_blind2.py) counts, filters and names rows correctly.

The parser is replaced by a stand-in here, so these tests pin the scoring arithmetic, not the rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import selfroute as sr
from benchmarks import verdict_blind2


class _Verdict:
    def __init__(self, declined: bool) -> None:
        self.declined = declined


def _row(rid: str, stratum: str, text: str, declined: bool, **extra: Any) -> dict[str, Any]:
    base = {"id": rid, "stratum": stratum, "prediction": text, "declined": declined}
    return {**base, "ambiguous": False, **extra}


ROWS = [
    _row("a", "random", "DECLINE", True),  # tp
    _row("b", "random", "answer", True),  # miss
    _row("c", "random", "DECLINE", False),  # false decline
    _row("d", "enriched", "answer", False),  # tn
    _row("e", "enriched", "ask", True, question="Q?"),  # tp only with the question
    _row("f", "rest", "DECLINE", False, ambiguous=True),  # excluded unless --all
]


@pytest.fixture(autouse=True)
def _stand_in_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(text: str, *, question: str | None = None, **_: Any) -> _Verdict:
        return _Verdict(text == "DECLINE" or (text == "ask" and question is not None))

    monkeypatch.setattr(sr, "parse_verdict", fake)


def test_per_stratum_and_pooled_counts() -> None:
    result = verdict_blind2.score(ROWS)
    pooled = result["default"]["pooled"]
    assert (pooled["n"], pooled["positives"]) == (5, 3)
    assert pooled["precision"] == pytest.approx(1 / 2)
    assert pooled["recall"] == pytest.approx(1 / 3)
    assert pooled["misses"] == ["b", "e"] and pooled["false_declines"] == ["c"]
    random = result["default"]["random"]
    assert (random["n"], random["precision"], random["recall"]) == (3, 0.5, 0.5)
    assert result["default"]["rest"]["n"] == 0 and result["default"]["rest"]["precision"] is None
    asked = result["question"]["pooled"]
    assert asked["misses"] == ["b"] and asked["recall"] == pytest.approx(2 / 3)


def test_rows_without_strata_are_grouped_by_kind() -> None:
    rows = [
        {"id": "s1", "kind": "abstain-plain", "prediction": "DECLINE", "declined": True},
        {"id": "s2", "kind": "answer-with-gap", "prediction": "DECLINE", "declined": False},
        {"id": "s3", "kind": "abstain-plain", "prediction": "answer", "declined": True},
    ]
    table = verdict_blind2.score(rows)["default"]
    assert list(table) == ["abstain-plain", "answer-with-gap", "pooled"]
    assert (table["abstain-plain"]["n"], table["abstain-plain"]["recall"]) == (2, 0.5)
    assert table["answer-with-gap"]["false_declines"] == ["s2"]


def test_ambiguous_rows_only_with_all() -> None:
    pooled = verdict_blind2.score(ROWS, include_ambiguous=True)["default"]["pooled"]
    assert pooled["n"] == 6 and pooled["false_declines"] == ["c", "f"]


def test_main_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert verdict_blind2.main(["score", "--file", str(path)]) == 0
    out = capsys.readouterr().out
    assert "6 rows, 1 ambiguous (excluded)" in out
    assert "  pooled       5    3     0.500   0.333" in out
    assert "misses: b e" in out and "false declines: c" in out
    assert "(1 rows carry a question)" in out


def test_enrichment_filter_is_broad_and_local() -> None:
    assert verdict_blind2.ENRICH.search("The paper does not say which corpus was used.")
    assert verdict_blind2.ENRICH.search("No such information is given in the passage.")
    far = "The paper uses BERT with a large batch and a long warm-up schedule; it is not tuned."
    assert not verdict_blind2.ENRICH.search(far)
