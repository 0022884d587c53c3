"""Many identical files share one document record; indexing them and rerunning stays linear in
their number. The work measured is the JSON the run parses and writes for document records
(their ``files`` maps): n copies against 4n must cost about 4x, not 16x."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore, _records


class _Counter:
    """``json`` for :mod:`selfroute.stores._records`, counting the characters it parses and
    writes."""

    def __init__(self) -> None:
        self.chars = 0

    def loads(self, text: Any, **kwargs: Any) -> Any:
        self.chars += len(text)
        return json.loads(text, **kwargs)

    def dumps(self, value: Any, **kwargs: Any) -> str:
        out = json.dumps(value, **kwargs)
        self.chars += len(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)


def _work(tmp_path: Path, copies: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    kb = tmp_path / f"kb{copies}"
    kb.mkdir()
    for n in range(copies):
        (kb / f"copy{n:05d}.txt").write_text("The same handbook page.\n" * 5, encoding="utf-8")
    store = DocumentStore(tmp_path / f"store{copies}", embedding="offline")
    counts = []
    for _ in range(2):  # the first index, then a rerun with nothing changed
        counter = _Counter()
        with monkeypatch.context() as patch:
            patch.setattr(_records, "json", counter)
            report = store.index([kb])
        assert report.files == copies
        counts.append(counter.chars)
    assert store.stats().documents == 1
    return counts[0], counts[1]


def test_identical_files_index_and_rerun_linearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = _work(tmp_path, 100, monkeypatch)
    large = _work(tmp_path, 400, monkeypatch)
    for phase, s, n in zip(("index", "rerun"), small, large, strict=True):
        ratio = n / max(s, 1)
        # linear is ~4x (file names grow by a digit at most), quadratic ~16x
        assert ratio < 6, (phase, s, n, ratio)
