"""The command line in-process: exit codes and messages of the paths that call no model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from selfroute.cli import build_parser, main

FIXTURE_DOCS = Path(__file__).parents[3] / "fixtures" / "docs"
KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in an empty folder with no keys and no SELFROUTE_* settings."""
    monkeypatch.chdir(tmp_path)
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    import os

    for name in list(os.environ):
        if name.startswith("SELFROUTE_"):
            monkeypatch.delenv(name)


def _index(*extra: str, paths: tuple[str, ...] = ()) -> int:
    shutil.copytree(FIXTURE_DOCS, "docs", dirs_exist_ok=True)
    return main(["index", "docs", *paths, "--embedding", "offline", "--progress", "never", *extra])


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "index" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out.startswith("selfroute ")


def test_eval_is_registered_when_available() -> None:
    pytest.importorskip("selfroute.eval.cli")
    assert "eval" in build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]


@pytest.mark.parametrize("argv", [["ask"], ["ask", "   "], ["ask", ""]])
def test_empty_question(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "the question is empty" in err and "selfroute ask" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "variable"),
    [
        (["ask", "Who?"], "OPENAI_API_KEY"),
        (["ask", "Who?", "--model", "google:gemini-2.5-flash"], "GOOGLE_API_KEY"),
        (
            ["ask", "Who?", "--base-url", "http://127.0.0.1:9/v1", "--lc-model", "openai:gpt-4.1"],
            "OPENAI_API_KEY",
        ),
    ],
)
def test_missing_key_is_one_line_and_exit_2(
    argv: list[str], variable: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert variable in err and "--base-url" in err and "Traceback" not in err


def test_ask_before_index_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "Who?", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]) == 1
    err = capsys.readouterr().err
    assert "selfroute index" in err
    assert not Path(".selfroute").exists()


def test_ask_with_a_missing_doc(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "Who?", "--doc", "nope.txt", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "--doc nope.txt: no such file" in capsys.readouterr().err


def test_index_reports_every_bad_path_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    Path("docs").mkdir()
    Path("docs/empty.txt").write_text("", encoding="utf-8")
    Path("docs/blob.md").write_bytes(b"\x00" * 64)
    Path("docs/slides.pptx").write_bytes(b"PK")
    assert _index(paths=("missing-folder",)) == 0
    out = capsys.readouterr().out
    assert "indexed 4 of 6 files" in out and "4 new" in out
    for name, reason in [
        ("docs/empty.txt", "empty file"),
        ("docs/blob.md", "binary file"),
        ("docs/slides.pptx", "unsupported file type .pptx"),
        ("missing-folder", "no such file or directory"),
    ]:
        assert f"{name}: {reason}" in out
    assert "4 documents" in out


def test_index_with_nothing_indexable_fails(capsys: pytest.CaptureFixture[str]) -> None:
    Path("empty.txt").write_text(" ", encoding="utf-8")
    assert main(["index", "empty.txt", "nothing/", "--embedding", "offline"]) == 1
    captured = capsys.readouterr()
    assert "empty.txt: empty file" in captured.out
    assert "nothing could be indexed" in captured.err


def test_index_json_and_stats(capsys: pytest.CaptureFixture[str]) -> None:
    assert _index("--json") == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["report"]["added"]) == 4 and data["store"]["documents"] == 4
    assert main(["stats"]) == 0
    out = capsys.readouterr().out
    assert "documents    4  (html 1, markdown 1, pdf 1, text 1)" in out
    assert f"chunks       {data['store']['chunks']}" in out
    assert "embedding    offline:selfroute-hashing-384" in out
    assert "bm25 index   current" in out
    assert main(["stats", "--json", "--documents"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {**data["store"], "document_list": stats["document_list"]}
    assert len(stats["document_list"]) == 4


def test_asking_with_another_embedding_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert _index() == 0
    capsys.readouterr()
    code = main(["ask", "Who?", "--embedding", "default", "--base-url", "http://127.0.0.1:9/v1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "offline:selfroute-hashing-384" in err and "--embedding" in err


def test_config_file_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("selfroute.toml").write_text("colection = 'x'\n", encoding="utf-8")
    assert main(["stats"]) == 2
    assert "unknown setting 'colection'" in capsys.readouterr().err
    assert main(["stats", "--config", "missing.toml"]) == 2
    assert "missing.toml does not exist" in capsys.readouterr().err


def test_settings_from_toml_and_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("selfroute.toml").write_text(
        'collection = "from-file"\nembedding = "offline"\n', encoding="utf-8"
    )
    shutil.copytree(FIXTURE_DOCS, "docs")
    assert main(["index", "docs"]) == 0
    assert "[from-file]" in capsys.readouterr().out
    monkeypatch.setenv("SELFROUTE_COLLECTION", "from-env")
    assert main(["index", "docs"]) == 0
    assert "[from-env]" in capsys.readouterr().out
    assert main(["stats", "--collection", "from-file"]) == 0
    assert "collection   from-file" in capsys.readouterr().out


def test_unexpected_errors_are_one_line_unless_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from selfroute.cli import _commands

    def boom(args: object) -> int:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_commands, "run_stats", boom)
    assert main(["stats"]) == 1
    err = capsys.readouterr().err
    assert "RuntimeError: disk on fire" in err and "--debug" in err and "Traceback" not in err
    with pytest.raises(RuntimeError):
        main(["stats", "--debug"])


def test_ctrl_c_exits_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from selfroute.cli import _commands

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(_commands, "run_index", interrupted)
    assert main(["index", "docs"]) == 130
    assert "run the same command again" in capsys.readouterr().err
