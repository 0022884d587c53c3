"""Every test that docs/reliability.md cites as backing a guarantee exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "reliability.md"
# `path/to/test_x.py::test_name` or, continuing the previous path, `::test_name`
CITATION = re.compile(r"`((?:[\w/]+/)?test_\w+\.py)?(?:::(\w+))?(?:\[[^\]]*\])?`")


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    }


def test_every_cited_test_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    current: Path | None = None
    cited = 0
    missing: list[str] = []
    for match in CITATION.finditer(text):
        path, name = match.groups()
        if path is None and name is None:
            continue
        if path is not None:
            current = ROOT / "tests" / path
            if not current.is_file():
                missing.append(path)
                continue
        if name is not None:
            assert current is not None, f"::{name} cited before any test file"
            cited += 1
            if name not in _tests_in(current):
                missing.append(f"{current.relative_to(ROOT)}::{name}")
    assert missing == []
    assert cited >= 60  # the page really is a guarantee -> test map
