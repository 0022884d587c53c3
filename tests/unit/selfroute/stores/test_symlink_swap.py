"""A file swapped for a symbolic link after ``index`` listed the folder is not read: the link's
target (outside the folder) never reaches the store, through the real command."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentReadError, DocumentStore, read_document

SECRET = "TOP-SECRET-PASSPHRASE outside the indexed folder"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "a.txt").write_text("Alpha notes about the garden.\n", encoding="utf-8")
    (kb / "b.txt").write_text("Beta notes about the kitchen.\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n", encoding="utf-8")
    return kb, outside / "secret.txt"


def _swap_after_discovery(monkeypatch: pytest.MonkeyPatch, victim: Path, target: Path) -> None:
    from selfroute.stores import _indexing

    real = _indexing.discover_files

    def discover_then_swap(*args: Any, **kwargs: Any) -> Any:
        found = real(*args, **kwargs)
        victim.unlink()
        os.symlink(target, victim)  # the attacker's move between listing and reading
        return found

    monkeypatch.setattr(_indexing, "discover_files", discover_then_swap)


def _store_text(store: Path) -> str:
    """Every byte the store folder holds (database, BM25 index), as text."""
    DocumentStore(store).stats()  # the store is readable
    data = b"".join(f.read_bytes() for f in sorted(store.rglob("*")) if f.is_file())
    return data.decode("utf-8", errors="replace")


def test_index_does_not_read_a_file_swapped_for_a_link_out_of_the_folder(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, layout: tuple[Path, Path], tmp_path: Path
) -> None:
    kb, secret = layout
    _swap_after_discovery(monkeypatch, kb / "a.txt", secret)
    store = tmp_path / "store"
    code = main(["index", str(kb), "--store", str(store), "--embedding", "offline"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "TOP-SECRET" not in _store_text(store)
    assert "Beta notes" in _store_text(store)
    assert "a.txt" in captured.out + captured.err and "not read" in captured.out + captured.err


def test_with_follow_symlinks_the_swapped_link_is_read(
    capsys: Any, monkeypatch: pytest.MonkeyPatch, layout: tuple[Path, Path], tmp_path: Path
) -> None:
    kb, secret = layout
    _swap_after_discovery(monkeypatch, kb / "a.txt", secret)
    store = tmp_path / "store"
    argv = ["index", str(kb), "--store", str(store), "--embedding", "offline", "--follow-symlinks"]
    assert main(argv) == 0, capsys.readouterr().err
    assert "TOP-SECRET" in _store_text(store)  # asked for: links are followed anywhere


def test_read_document_within_refuses_links_out_and_takes_links_inside(
    layout: tuple[Path, Path],
) -> None:
    kb, secret = layout
    (kb / "out.txt").symlink_to(secret)
    (kb / "in.txt").symlink_to(kb / "b.txt")
    with pytest.raises(DocumentReadError, match="outside"):
        read_document(kb / "out.txt", within=kb)
    assert "Beta" in read_document(kb / "in.txt", within=kb).text
    assert "TOP-SECRET" in read_document(kb / "out.txt").text  # a file the user names


def test_the_bytes_read_are_the_ones_checked(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.txt"
    os.mkfifo(fifo)
    with pytest.raises(DocumentReadError, match="not a regular file"):
        read_document(fifo)  # opened without blocking, refused by its fstat
    big = tmp_path / "big.txt"
    big.write_text("x" * 100, encoding="utf-8")
    with pytest.raises(DocumentReadError, match="over the limit"):
        read_document(big, max_bytes=10)
