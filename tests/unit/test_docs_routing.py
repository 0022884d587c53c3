"""docs/routing.md shows ``self_route_flow`` as it is in the source, and links every stage."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from selfroute._flow import _core

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "routing.md").read_text(encoding="utf-8")
SECTION = PAGE.split("## The flow, stage by stage", 1)[1].split("\n## ", 1)[0]


def _flow_without_docstring() -> str:
    source = inspect.getsource(_core)
    lines = source.splitlines()
    (fn,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == "self_route_flow"
    ]
    doc = fn.body[0]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    assert doc.end_lineno is not None and fn.end_lineno is not None
    return "\n".join(lines[fn.lineno - 1 : doc.lineno - 1] + lines[doc.end_lineno : fn.end_lineno])


def test_the_page_shows_the_flow_as_it_is_in_the_source() -> None:
    blocks = re.findall(r"```python\n(.*?)\n```", SECTION, re.DOTALL)
    assert blocks == [_flow_without_docstring()]


def test_every_stage_the_flow_calls_is_in_the_table_with_a_docs_link() -> None:
    called = set(re.findall(r"yield from (\w+)\(", _flow_without_docstring()))
    called |= {"pre_route"}  # the one stage that needs no I/O (a plain call)
    assert "pre_route(state)" in _flow_without_docstring()
    table = SECTION.split("| stage |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) >= 6
    named = {name for row in rows for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert called <= named, called - named
    for row in rows:
        module = re.search(r"`(_\w+\.py)`", row)
        assert module is not None and (ROOT / "selfroute" / "_flow" / module.group(1)).is_file()
        assert re.search(r"\]\((?:[a-z_]+\.md)?(?:#[a-z-]+)?\)", row), row
