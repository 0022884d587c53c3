"""``docs/api.md`` lists exactly the public names of each package (its ``__all__``), once each."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"
MODULES = ("selfroute", "selfroute.flow", "langchain_selfroute", "llamaindex_selfroute")


def listed(text: str) -> dict[str, list[str]]:
    """The names listed (``- `name`...`` items) under each ``## `module``` heading of ``text``."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"## `([\w.]+)`", line)
        if heading:
            current = out.setdefault(heading.group(1), [])
        elif line.startswith("## "):
            current = None
        elif current is not None and (item := re.match(r"- `(\w+)`", line)):
            current.append(item.group(1))
    return out


def test_the_page_has_a_section_per_public_module() -> None:
    assert list(listed(PAGE.read_text(encoding="utf-8"))) == list(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_the_page_lists_exactly_the_public_names(module: str) -> None:
    names = listed(PAGE.read_text(encoding="utf-8"))[module]
    assert sorted(names) == sorted(importlib.import_module(module).__all__)
    assert len(names) == len(set(names)), "a name is listed twice"


def test_the_page_is_in_the_site_navigation() -> None:
    assert re.search(r"^\s*- API: api\.md$", (ROOT / "mkdocs.yml").read_text(), re.M)


def test_the_section_parser_reads_items_under_module_headings_only() -> None:
    text = "# API\n\n- `Stray`\n\n## `a`\n\n### Group\n\n- `x`: one\n- `y`\n\n## Other\n\n- `z`\n"
    assert listed(text) == {"a": ["x", "y"]}
