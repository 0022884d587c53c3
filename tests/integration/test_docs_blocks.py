"""Every code block of README.md and docs/ that a reader is meant to run runs here, offline, as
written (the conventions are in :mod:`tests.support.docs_runner`)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import docs_runner as dr

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

pytestmark = pytest.mark.integration

PAGES = dr.pages()


@pytest.fixture(scope="module")
def models() -> Iterator[tuple[str, str]]:
    with dr.loopback_models() as urls:
        yield urls


def _sandbox(tmp_path: Path, models: tuple[str, str]) -> tuple[Path, dict[str, str]]:
    box = dr.make_sandbox(tmp_path / "checkout")
    return box, dr.sandbox_env(box, *models)


def test_every_page_is_found_and_every_block_is_classified() -> None:
    assert "README.md" in PAGES and "docs/cli.md" in PAGES and len(PAGES) >= 14
    for page in PAGES:
        for block in dr.blocks(page):
            if block.marker == "skip":
                assert len(block.marker_arg) >= 10, f"{block.where}: a skip needs its reason"
            if block.marker == "copy-of":
                target = dr.ROOT / block.marker_arg
                assert target.is_file(), f"{block.where}: {block.marker_arg} does not exist"
                assert block.code in target.read_text(encoding="utf-8"), (
                    f"{block.where} is not a copy of a block of {block.marker_arg}"
                )
    for page, test in dr.PAGE_RUNNERS.items():
        assert (dr.ROOT / test).is_file() and Path(page).name in (dr.ROOT / test).read_text()


def test_install_lines_name_real_extras() -> None:
    pyproject = tomllib.loads((dr.ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    problems, seen = [], 0
    for page in PAGES:
        for block in dr.blocks(page):
            if block.kind != "bash":
                continue
            for line in dr.install_lines(block.code)[0]:
                seen += 1
                problem = dr.check_install_line(line, extras)
                if problem:
                    problems.append(f"{block.where}: {problem}")
    assert problems == [] and seen >= 3


@pytest.mark.parametrize("page", dr.pages_with("python"))
def test_python_blocks_run(
    page: str,
    tmp_path: Path,
    models: tuple[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = [b for b in dr.blocks(page) if b.kind == "python" and b.marker is None]
    if page in dr.PAGE_RUNNERS:
        pytest.skip(f"{page}'s examples run in {dr.PAGE_RUNNERS[page]}")
    box, env = _sandbox(tmp_path, models)
    monkeypatch.chdir(box)
    for key in [k for k in os.environ if k not in env]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in found:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(block.code, block.where, "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"{block.where} failed:\n{block.code}") from exc


@pytest.mark.parametrize("page", dr.pages_with("bash"))
def test_shell_blocks_run(page: str, tmp_path: Path, models: tuple[str, str]) -> None:
    found = [b for b in dr.blocks(page) if b.kind == "bash" and b.marker is None]
    runnable = [(b, dr.install_lines(b.code)[1]) for b in found]
    runnable = [(b, lines) for b, lines in runnable if lines]
    if not runnable:
        pytest.skip(f"{page} has no shell command to run (install lines are checked statically)")
    box, env = _sandbox(tmp_path, models)
    for block, lines in runnable:
        status, output = dr.run_script(lines, box, env)
        assert status == 0, f"{block.where} exited {status}:\n{output[-2000:]}"


@pytest.mark.parametrize("page", dr.pages_with("console"))
def test_transcripts_are_generated_not_pasted(
    page: str, tmp_path: Path, models: tuple[str, str]
) -> None:
    found = [b for b in dr.blocks(page) if b.kind == "console" and b.marker is None]
    for i, block in enumerate(found):
        box, env = _sandbox(tmp_path / str(i), models)
        fresh = dr.run_transcript(block.code, box, env)
        assert dr.normalise(fresh) == dr.normalise(block.code), (
            f"{block.where} is stale: run `python -m tests.support.docs_runner --write`"
        )


def test_normalise_keeps_what_matters() -> None:
    a = "indexed 4 of 4 files in 1.4 s: 4 new\nwrote 23 chunks (6,407 words, 16 chunks/s)"
    b = "indexed 4 of 4 files in 2.9 s: 4 new\nwrote 23 chunks (6,407 words, 9 chunks/s)"
    assert dr.normalise(a) == dr.normalise(b)
    assert dr.normalise(a) != dr.normalise(a.replace("23 chunks (", "24 chunks ("))


def test_install_line_checks() -> None:
    extras = {"cli", "dev"}
    assert dr.check_install_line("pip install -e '.[cli]'", extras) is None
    assert "no extra 'gpu'" in str(dr.check_install_line("pip install -e '.[cli,gpu]'", extras))
    assert "not by name" in str(dr.check_install_line("pip install 'selfroute[cli]'", extras))
    installs, rest = dr.install_lines(
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[cli]'\n"
        "selfroute index docs/  # comment\n"
    )
    assert len(installs) == 3 and rest == ["selfroute index docs/  # comment"]
