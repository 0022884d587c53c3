"""Finding files: folders, hidden entries, unsupported types, and the symlink rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from selfroute.stores import discover_files

pytestmark = pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")


def _tree(root: Path) -> None:
    (root / "docs" / "sub").mkdir(parents=True)
    (root / "docs" / "a.txt").write_text("a", encoding="utf-8")
    (root / "docs" / "sub" / "b.md").write_text("b", encoding="utf-8")
    (root / "docs" / "sub" / "c.PDF").write_bytes(b"%PDF-")
    (root / "docs" / "photo.jpg").write_bytes(b"jpg")
    (root / "docs" / ".git").mkdir()
    (root / "docs" / ".git" / "config.txt").write_text("hidden", encoding="utf-8")
    (root / "docs" / ".notes.md").write_text("hidden", encoding="utf-8")
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text("secret", encoding="utf-8")


def _names(found: list) -> list[str]:
    return [f.path.name for f in found]


def test_walks_folders_skips_hidden_and_reports_unsupported(tmp_path: Path) -> None:
    _tree(tmp_path)
    found, skipped = discover_files([tmp_path / "docs"])
    assert _names(found) == ["a.txt", "b.md", "c.PDF"]
    assert all(f.root == tmp_path / "docs" for f in found)
    assert [(Path(s.path).name, s.reason.split(";")[0]) for s in skipped] == [
        ("photo.jpg", "unsupported file type .jpg")
    ]


def test_missing_paths_and_broken_links_are_reported(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / "docs" / "dangling.txt").symlink_to(tmp_path / "nowhere.txt")
    (tmp_path / "top-dangling.md").symlink_to(tmp_path / "nothing.md")
    found, skipped = discover_files(
        [tmp_path / "docs", tmp_path / "missing", tmp_path / "top-dangling.md"]
    )
    reasons = {Path(s.path).name: s.reason for s in skipped}
    assert reasons["missing"] == "no such file or directory"
    assert reasons["top-dangling.md"] == "broken symbolic link"
    assert reasons["dangling.txt"] == "broken symbolic link"
    assert _names(found) == ["a.txt", "b.md", "c.PDF"]


def test_links_outside_the_root_are_not_followed_unless_asked(tmp_path: Path) -> None:
    _tree(tmp_path)
    docs = tmp_path / "docs"
    (docs / "leak.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (docs / "leakdir").symlink_to(tmp_path / "outside", target_is_directory=True)
    found, skipped = discover_files([docs])
    assert "secret.txt" not in _names(found) and "leak.txt" not in _names(found)
    refused = {Path(s.path).name: s.reason for s in skipped}
    assert "--follow-symlinks" in refused["leak.txt"]
    assert "outside" in refused["leakdir"]

    found, skipped = discover_files([docs], follow_symlinks=True)
    assert {"leak.txt", "secret.txt"} <= set(_names(found))
    assert not any("symbolic link" in s.reason for s in skipped)


def test_links_inside_the_root_are_followed_once_and_loops_end(tmp_path: Path) -> None:
    _tree(tmp_path)
    docs = tmp_path / "docs"
    (docs / "alias.txt").symlink_to(docs / "a.txt")
    (docs / "sub" / "loop").symlink_to(docs, target_is_directory=True)
    found, _ = discover_files([docs])
    assert _names(found) == ["a.txt", "alias.txt", "b.md", "c.PDF"]


def test_a_named_file_is_taken_even_through_a_link(tmp_path: Path) -> None:
    _tree(tmp_path)
    link = tmp_path / "docs" / "named.txt"
    link.symlink_to(tmp_path / "outside" / "secret.txt")
    found, skipped = discover_files([link, link])  # the user named it; once only
    assert _names(found) == ["named.txt"] and not skipped


def test_excluded_folders_are_not_entered(tmp_path: Path) -> None:
    _tree(tmp_path)
    store = tmp_path / "docs" / "store"
    store.mkdir()
    (store / "inside.txt").write_text("store data", encoding="utf-8")
    found, _ = discover_files([tmp_path / "docs"], exclude=[store])
    assert "inside.txt" not in _names(found)
