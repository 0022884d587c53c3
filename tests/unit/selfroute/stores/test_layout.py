"""The store package stays split along its seams: no class over 300 lines, no function over 120."""

from __future__ import annotations

import ast
from pathlib import Path

import selfroute.stores

STORES = Path(selfroute.stores.__file__).parent


def _sizes() -> list[tuple[str, str, int]]:
    out = []
    for path in sorted(STORES.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                out.append((f"{path.name}:{node.name}", kind, node.end_lineno - node.lineno + 1))
    return out


def test_no_class_over_300_and_no_function_over_120_lines() -> None:
    sizes = _sizes()
    assert any(name.endswith(":DocumentStore") for name, _, _ in sizes)  # the walk sees the store
    too_big = [
        (name, lines) for name, kind, lines in sizes if lines > (300 if kind == "class" else 120)
    ]
    assert not too_big
