"""Issue 16, findings 2, 15 and 16: the store under a missing root, other writers, read-only
media and broken databases -- through ``selfroute`` and ``DocumentStore``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentStore
from tests.integration.cli.scripted import copy_docs
from tests.support._loopback import prompt_text
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[3]


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


# -- finding 15: a long-lived reader sees what another process indexed -------------------------
VOLCANO = "The volcano Zentharia erupted with purple ash in the spring of that year. " * 30
LIGHTHOUSE = "The lighthouse keeper Mara lit the lamp every night at nine o'clock. " * 30


def _index_in_another_process(store: Path, folder: Path) -> None:
    code = (
        "from selfroute.stores import DocumentStore; "
        f"DocumentStore({str(store)!r}, embedding='offline').index([{str(folder)!r}], prune=True)"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=300)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_long_lived_retriever_sees_another_process_index(tmp_path: Path, mode: str) -> None:
    from selfroute.stores import HybridRetriever

    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "lighthouse.txt").write_text(LIGHTHOUSE)
    (b / "volcano.txt").write_text(VOLCANO)
    store = DocumentStore(tmp_path / "store", embedding="offline")
    store.index([a])
    retriever = HybridRetriever(store, mode=mode, k=1)
    assert retriever.retrieve("Which volcano erupted with purple ash?")[0].text.startswith("The l")
    _index_in_another_process(tmp_path / "store", b)  # another process adds a document
    (top,) = retriever.retrieve("Which volcano erupted with purple ash?")
    assert Path(top.metadata["source"]).name == "volcano.txt"
    # ... and rewrites it: the new text is served, never the old one.
    (b / "volcano.txt").write_text(VOLCANO.replace("purple", "golden"))
    _index_in_another_process(tmp_path / "store", b)
    (top,) = retriever.retrieve("Which volcano erupted with golden ash?")
    assert "golden" in top.text and "purple" not in top.text
    assert [d.text for d in retriever.long_context([top])] == [VOLCANO.replace("purple", "golden")]


def test_chat_sees_documents_indexed_while_it_runs(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    openai_server: ScriptedOpenAIServer,
) -> None:
    """``selfroute chat`` (dense retrieval): between two questions another process indexes a
    document; the second question's RAG prompt holds it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-000000000000000000000")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lighthouse.txt").write_text(LIGHTHOUSE)
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "volcano.txt").write_text(VOLCANO)
    assert run(capsys, "index", "docs", "--embedding", "offline", "--progress", "never")[0] == 0
    questions = iter(["Who lit the lamp?\n", "Which volcano erupted with purple ash?\n", ""])

    class Stdin:
        calls = 0

        def isatty(self) -> bool:
            return False

        def readline(self) -> str:
            Stdin.calls += 1
            if Stdin.calls == 2:
                _index_in_another_process(tmp_path / ".selfroute", tmp_path / "more")
            return next(questions)

    monkeypatch.setattr("sys.stdin", Stdin())
    openai_server.responder = lambda body: "An answer."
    argv = ["chat", "--retrieval", "dense", "--k", "1", "--model", "m"]
    assert run(capsys, *argv, "--base-url", openai_server.base_url)[0] == 0
    second = prompt_text(openai_server.requests[1])
    assert "Zentharia" in second
