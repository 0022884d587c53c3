"""The BM25 retriever searches once per question: RAG and Self-Route at every k share it."""

from __future__ import annotations

from typing import Any

import pytest

from selfroute import RouteConfig
from selfroute._simple import LexicalIndex
from selfroute.eval import OracleReader, evaluate
from selfroute.eval._runner import BM25Retriever
from tests.unit.selfroute.eval._fakes import ITEMS


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    searches: list[int] = []
    original = LexicalIndex.search

    def search(self: LexicalIndex, query: str, k: int) -> Any:
        searches.append(k)
        return original(self, query, k)

    monkeypatch.setattr(LexicalIndex, "search", search)
    return searches


def test_one_search_per_question_and_k_not_per_method(monkeypatch: pytest.MonkeyPatch) -> None:
    searches = _counting(monkeypatch)
    cfg = RouteConfig(chunk_words=20)
    evaluate(ITEMS, reader=OracleReader(), ks=[1], config=cfg, cache=False)
    assert len(searches) == len(ITEMS)  # RAG and Self-Route share the search
    searches.clear()
    evaluate(ITEMS, reader=OracleReader(), ks=[3, 1], config=cfg, cache=False)
    assert len(searches) == 2 * len(ITEMS)  # k=1, then deeper once: k=3 for both methods


def test_a_shallower_k_is_the_prefix_of_the_deeper_search() -> None:
    item = ITEMS[0]
    shared = BM25Retriever(chunk_words=20)
    deep = shared(item, 5)
    fresh = BM25Retriever(chunk_words=20)
    for k in (1, 2, 3, 5):
        assert [p.text for p in shared(item, k)] == [
            p.text for p in fresh.index(item).search(item.question, k)
        ]
    assert [p.text for p in shared(item, 5)] == [p.text for p in deep]
    shared(item, 1).clear()  # callers get their own list
    assert len(shared(item, 3)) == min(3, len(deep))
