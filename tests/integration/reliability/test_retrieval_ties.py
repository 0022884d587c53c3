"""Retrieval ties are broken the same way in every process (dense, BM25, hybrid)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfroute.stores import DocumentStore
from selfroute.stores._ties import chunk_order

pytestmark = pytest.mark.integration

_PROBE = """
import json, sys
from selfroute.stores._retriever import HybridRetriever
out = {}
for mode in ("dense", "bm25", "hybrid"):
    r = HybridRetriever.open(sys.argv[1], embedding="offline", mode=mode, k=int(sys.argv[3]))
    out[mode] = [[str(p.source), p.score] for p in r.retrieve(sys.argv[2])]
print(json.dumps(out))
"""


def _store(tmp_path: Path) -> Path:
    kb = tmp_path / "kb"
    kb.mkdir()
    for n in range(12):  # one chunk each, equal length, "ledger" once: equal BM25 scores
        words = " ".join(f"w{n}x{i}" for i in range(30))
        (kb / f"note{n:02d}.txt").write_text(f"ledger {words}\n", encoding="utf-8")
    DocumentStore(tmp_path / "store", embedding="offline").index([kb])
    return tmp_path / "store"


def _probe(store: Path, question: str, k: int) -> dict[str, list[list[object]]]:
    env = dict(os.environ, PYTHONHASHSEED="random")
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(store), question, str(k)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, list[list[object]]] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("question", ["ledger", "photosynthesis of quasars"])
def test_the_same_question_gets_the_same_chunks_in_every_process(
    tmp_path: Path, question: str
) -> None:
    store = _store(tmp_path)
    runs = [_probe(store, question, 3) for _ in range(3)]
    assert runs[0] == runs[1] == runs[2]
    for mode, rows in runs[0].items():
        if mode == "bm25" and question != "ledger":
            assert rows == []  # no word in common: BM25 has nothing
            continue
        assert len(rows) == 3, mode
        if mode != "hybrid":  # every chunk ties: the first three in (document id, chunk index)
            keys = [(-float(str(score)), chunk_order(str(cid))) for cid, score in rows]
            assert keys == sorted(keys), mode
    # the cut keeps the smallest keys of the tied run, whichever Chroma returned first
    dense_ids = [cid for cid, _ in runs[0]["dense"]]
    everything = _probe(store, question, 12)["dense"]
    tied = [cid for cid, score in everything if score == runs[0]["dense"][-1][1]]
    assert dense_ids[-1] == min(
        (c for c in map(str, tied) if c not in dense_ids[:-1]), key=chunk_order
    )
