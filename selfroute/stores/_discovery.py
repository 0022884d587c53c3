"""Finding the files to index under the paths a user names.

Hidden entries (names starting with ``.``, such as ``.git`` or the default store ``.selfroute``)
are skipped silently when walking a folder. Symbolic links that resolve outside the folder being
indexed are not followed unless ``follow_symlinks=True``: indexing ``~/notes`` must not quietly
pull in ``/etc`` through a link. Every other problem (missing path, broken link, unsupported type)
is reported by name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from selfroute.stores._readers import SUPPORTED_SUFFIXES

__all__ = ["FoundFile", "Skipped", "discover_files"]


@dataclass(frozen=True)
class FoundFile:
    """A file to index.

    Attributes:
        path: Absolute path as walked (links are not resolved, so names stay the user's).
        root: The path the user named that led to it (absolute).
        within: The real folder the file must still be inside when it is read (a file found
            by walking a folder without ``follow_symlinks``), or ``None`` (a file the user
            named, or links followed anywhere): :func:`~selfroute.stores.read_document` checks
            it again when it opens the file, so a file swapped for a link after the walk is
            not read.
    """

    path: Path
    root: Path
    within: Path | None = None


@dataclass(frozen=True)
class Skipped:
    """A path that was not indexed, and why."""

    path: str
    reason: str


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _unsupported(path: Path) -> Skipped:
    kind = path.suffix or "(no suffix)"
    return Skipped(
        str(path),
        f"unsupported file type {kind}; supported: {', '.join(sorted(SUPPORTED_SUFFIXES))}",
    )


def discover_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    follow_symlinks: bool = False,
    exclude: Sequence[str | os.PathLike[str]] = (),
) -> tuple[list[FoundFile], list[Skipped]]:
    """Expand files and folders into the supported files under them.

    Args:
        paths: Files and folders. A named file is taken even if it is a link (the user named it);
            inside a folder, links that resolve outside it are skipped unless ``follow_symlinks``.
        follow_symlinks: Follow links wherever they point (cycles are still detected).
        exclude: Folders never to enter (the store itself, when it lives inside an indexed
            folder).

    Returns:
        The files (sorted, each once) and the skipped paths with reasons.
    """
    found: list[FoundFile] = []
    skipped: list[Skipped] = []
    seen: set[Path] = set()
    excluded = {Path(e).resolve() for e in exclude}

    def take(path: Path, root: Path, within: Path | None = None) -> None:
        if path in seen:
            return
        seen.add(path)
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            skipped.append(_unsupported(path))
            return
        found.append(FoundFile(path, root, within))

    for given in paths:
        raw = Path(given)
        path = Path(os.path.abspath(raw))
        if not os.path.lexists(path):
            skipped.append(Skipped(str(raw), "no such file or directory"))
            continue
        if not path.exists():
            skipped.append(Skipped(str(raw), "broken symbolic link"))
            continue
        if path.is_file():
            take(path, path.parent)
            continue
        if not path.is_dir():
            skipped.append(Skipped(str(raw), "not a regular file or directory"))
            continue
        root_real = path.resolve()
        visited: set[Path] = {root_real}
        stack: list[Path] = [path]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name, reverse=True)
            except PermissionError:
                skipped.append(Skipped(str(folder), "permission denied (folder)"))
                continue
            except OSError as exc:
                skipped.append(Skipped(str(folder), f"cannot list folder ({exc.strerror or exc})"))
                continue
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                child = Path(entry.path)
                is_link = entry.is_symlink()
                try:
                    real = child.resolve(strict=True) if is_link else None
                except (OSError, RuntimeError):
                    skipped.append(Skipped(str(child), "broken symbolic link"))
                    continue
                if real is not None and not follow_symlinks and not _within(real, root_real):
                    skipped.append(
                        Skipped(
                            str(child),
                            f"symbolic link to {real} outside {path} not followed "
                            "(use --follow-symlinks)",
                        )
                    )
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=True)
                except OSError:
                    is_dir = False
                if is_dir:
                    real_dir = real if real is not None else child.resolve()
                    if real_dir in visited or real_dir in excluded:
                        continue
                    visited.add(real_dir)
                    stack.append(child)
                elif entry.is_file(follow_symlinks=True):
                    take(child, path, None if follow_symlinks else root_real)
                else:
                    skipped.append(Skipped(str(child), "not a regular file"))
    found.sort(key=lambda f: str(f.path))
    return found, skipped
