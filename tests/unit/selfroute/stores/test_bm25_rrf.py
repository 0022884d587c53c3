"""The bm25s-backed index (build, search, persistence) and reciprocal rank fusion."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfroute import ConfigurationError
from selfroute.stores import BM25Index, rrf_fuse
from selfroute.stores._bm25 import fingerprint

TEXTS = [
    "The lighthouse keeper Mara Holt kept the lamp at Grey Point.",
    "The supply boat could not land for six weeks during the storm.",
    "The passkey for the vault is 7401-ZQ and nobody else knows it.",
    "Mara retired to Dunmore after the lamp became electric.",
]
IDS = ["d1:0", "d1:1", "d2:0", "d2:1"]


def test_search_ranks_by_bm25_and_drops_non_matches() -> None:
    index = BM25Index.build(IDS, TEXTS, "fp")
    hits = index.search("Who kept the lamp at Grey Point?", 10)
    assert hits[0][0] == "d1:0"
    assert {h[0] for h in hits} == {"d1:0", "d2:1"}  # only chunks sharing a term
    assert all(score > 0 for _, score in hits)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert [cid for cid, _ in index.search("passkey vault", 1)] == ["d2:0"]


def test_unknown_terms_and_empty_index_return_nothing() -> None:
    index = BM25Index.build(IDS, TEXTS, "fp")
    assert index.search("zebra quantum", 5) == []
    assert index.search("the of and", 5) == []  # stop words only
    assert index.search("lamp", 0) == []
    empty = BM25Index.build([], [], "fp0")
    assert len(empty) == 0 and empty.search("lamp", 5) == []
    with pytest.raises(ValueError):
        BM25Index.build(["a"], [], "x")


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    index = BM25Index.build(IDS, TEXTS, "fp1")
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path, "fp1")
    assert loaded is not None and loaded.ids == IDS
    for query in ("storm supply boat", "passkey 7401", "Mara Dunmore"):
        assert loaded.search(query, 3) == index.search(query, 3)
    assert BM25Index.load(tmp_path, "other") is None  # stale fingerprint: rebuild needed


def test_saving_a_new_fingerprint_replaces_the_old_one(tmp_path: Path) -> None:
    BM25Index.build(IDS, TEXTS, "old").save(tmp_path)
    BM25Index.build(IDS[:2], TEXTS[:2], "new").save(tmp_path)
    assert BM25Index.saved_fingerprints(tmp_path) == ["new"]
    BM25Index.build([], [], "empty").save(tmp_path)
    reopened = BM25Index.load(tmp_path, "empty")
    assert reopened is not None and len(reopened) == 0


def test_a_corrupt_index_is_treated_as_missing(tmp_path: Path) -> None:
    BM25Index.build(IDS, TEXTS, "fp").save(tmp_path)
    (tmp_path / "fp" / "selfroute-ids.json").write_text("{not json", encoding="utf-8")
    assert BM25Index.load(tmp_path, "fp") is None


def test_fingerprint_depends_on_the_set_not_the_order() -> None:
    assert fingerprint(["b", "a"], 300) == fingerprint(["a", "b"], 300)
    assert fingerprint(["a", "b"], 300) != fingerprint(["a"], 300)
    assert fingerprint(["a"], 300) != fingerprint(["a"], 200)


def test_rrf_scores_are_the_sum_of_reciprocal_ranks() -> None:
    fused = rrf_fuse([["a", "b", "c"], ["c", "a", "d"]], k=60)
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(1 / 63)
    assert [i for i, _ in fused] == ["a", "c", "b", "d"]


def test_rrf_ties_break_by_best_rank_then_id_and_duplicates_count_once() -> None:
    fused = rrf_fuse([["x", "y"], ["y", "x"], ["z", "z"]], k=0)
    assert [i for i, _ in fused] == ["x", "y", "z"]  # x,y tie at 1+1/2; z=1
    assert dict(fused)["z"] == pytest.approx(1.0)
    assert rrf_fuse([]) == []
    with pytest.raises(ConfigurationError):
        rrf_fuse([["a"]], k=-1)
