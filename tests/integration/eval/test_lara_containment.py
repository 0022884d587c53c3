"""Issue 16, finding 4: a LaRA query row's ``file`` never reads outside the documents folder.

Before the fix ``"file": "../../private/id_rsa"`` (or an absolute path) was read, sent to the model
and written into results.jsonl. Now such a row is refused before any model call, through the
``selfroute eval`` command with a real ``ChatOpenAI`` on the loopback server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from selfroute import InvalidInputError
from selfroute.eval import load_lara
from selfroute.eval.cli import main
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA secret-key-material"
STORY = "The lighthouse keeper Mara lit the lamp every night at nine. " * 40


def _tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    docs = tmp_path / "data" / "docs"
    (docs / "32k" / "book").mkdir(parents=True)
    (docs / "32k" / "book" / "story.txt").write_text(STORY)
    private = tmp_path / "private"
    private.mkdir()
    secret = private / "id_rsa"
    secret.write_text(SECRET)
    return docs, secret, tmp_path / "data" / "q.jsonl"


def _rows(path: Path, *files: str, **extra: str) -> None:
    path.write_text(
        "".join(
            json.dumps({"question": "Who lit the lamp?", "answer": "Mara", "file": f, **extra})
            + "\n"
            for f in files
        )
    )


@pytest.mark.parametrize(
    "row",
    [
        {"file": "../../private/id_rsa"},
        {"file": "id_rsa", "type": "../../private"},
        {"file": "id_rsa", "length": "../../..", "type": "private"},
        {"absolute": "yes"},
        {"file": "link.txt"},
    ],
)
def test_rows_naming_a_file_outside_the_folder_are_refused(tmp_path: Path, row: dict) -> None:
    docs, secret, queries = _tree(tmp_path)
    (docs / "link.txt").symlink_to(secret)
    if row.pop("absolute", None):
        row = {"file": str(secret)}
    _rows(queries, row.pop("file"), **row)
    with pytest.raises(InvalidInputError, match="outside the documents folder"):
        load_lara(queries, docs)


def test_documents_inside_the_folder_still_load(tmp_path: Path) -> None:
    docs, _, queries = _tree(tmp_path)
    (docs / "inner-link.txt").symlink_to(docs / "32k" / "book" / "story.txt")
    queries.write_text(
        json.dumps(
            {
                "question": "q?",
                "answer": "Mara",
                "file": "story.txt",
                "length": "32k",
                "type": "book",
            }
        )
        + "\n"
        + json.dumps({"question": "q?", "answer": "Mara", "file": "inner-link.txt"})
        + "\n"
        + json.dumps({"question": "q?", "answer": "Mara", "file": "book/story.txt"})
        + "\n"
    )
    items = load_lara(queries, docs)
    assert [it.document for it in items] == [STORY] * 3


def test_eval_command_never_sends_an_outside_file(
    openai_server: ScriptedOpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs, _, queries = _tree(tmp_path)
    _rows(queries, "story.txt", "../../private/id_rsa")
    out = tmp_path / "out"
    argv = [
        str(queries),
        "--format",
        "lara",
        "--documents",
        str(docs),
        "--model",
        "loopback-model",
        "--base-url",
        openai_server.base_url,
        "--out",
        str(out),
        "--no-progress",
    ]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy-for-the-loopback-server-000")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "outside the documents folder" in err and SECRET not in err
    assert openai_server.calls == 0
    written = "".join(p.read_text() for p in out.rglob("*") if p.is_file()) if out.exists() else ""
    assert SECRET not in written
