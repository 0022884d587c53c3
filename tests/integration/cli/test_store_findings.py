"""Issue 16, findings 2, 15 and 16: the store under a missing root, other writers, read-only
media and broken databases -- through ``selfroute`` and ``DocumentStore``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentStore
from tests.integration.cli.scripted import copy_docs

pytestmark = pytest.mark.integration


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- finding 2: --prune on a root that is gone --------------------------------------------------
def test_prune_on_a_missing_folder_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    copy_docs(tmp_path / "docs")
    assert run(capsys, "index", "docs", "--embedding", "offline", "--progress", "never")[0] == 0
    before = json.loads(run(capsys, "stats", "--json")[1])["documents"]
    assert before > 0
    shutil.move(tmp_path / "docs", tmp_path / "moved")  # an unmounted share, a moved folder
    code, out, err = run(capsys, "index", "docs", "--prune", "--progress", "never")
    assert code == 1 and "no such file or directory" in out + err
    assert "not pruned  docs: missing or unreadable, nothing removed" in out
    assert json.loads(run(capsys, "stats", "--json")[1])["documents"] == before
    # JSON report says the same.
    code, out, _ = run(capsys, "index", "docs", "--prune", "--json", "--progress", "never")
    report = json.loads(out)["report"]
    assert report["removed"] == [] and report["not_pruned"] == [str(tmp_path / "docs")]


def test_prune_with_one_root_missing_still_prunes_the_others(tmp_path: Path) -> None:
    a, b = copy_docs(tmp_path / "a"), copy_docs(tmp_path / "b")
    store = DocumentStore(tmp_path / "store", embedding="offline")
    store.index([a, b])
    (a / "packet_switching.pdf").unlink()
    shutil.rmtree(b)
    report = DocumentStore(tmp_path / "store", embedding="offline").index([a, b], prune=True)
    assert [Path(p).name for p in report.removed] == ["packet_switching.pdf"]
    assert report.not_pruned == [str(b)]
    assert not any(str(b) in p for p in report.removed)
