"""Helpers shared by the store unit tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path


def write_notes(folder: Path, n: int, words: Sequence[str], seed: int = 0) -> list[Path]:
    """Write ``n`` one-chunk notes (20-60 random ``words`` and a unique token) under ``folder``."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        path = folder / f"note-{i:04d}.txt"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 60)))
        path.write_text(f"{text} token{i}\n", encoding="utf-8")
        paths.append(path)
    return paths
