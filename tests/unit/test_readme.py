"""The README's examples are exercised: the core example runs as written, and the adapter
quickstarts are the same code as the docs pages whose examples the integration tests execute."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", README, re.DOTALL)


def test_readme_has_the_expected_python_examples() -> None:
    assert len(BLOCKS) == 3


def test_core_example_runs_as_written() -> None:
    core = next(b for b in BLOCKS if b.startswith("import selfroute as sr"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(core, "README.md", "exec"), {})
    first, second = out.getvalue().splitlines()
    assert first == "rag answered Thirty-one years."
    spent, always_lc, ratio = second.split()
    assert 0 < int(spent) < int(always_lc)
    assert ratio.endswith("%")


def test_langchain_quickstart_is_the_tested_docs_example() -> None:
    block = next(b for b in BLOCKS if "langchain_selfroute" in b)
    # tests/integration/langchain_selfroute/test_docs.py executes every example of this page.
    assert block in (ROOT / "docs" / "langchain.md").read_text(encoding="utf-8")


def test_llamaindex_quickstart_is_the_tested_docs_example() -> None:
    block = next(b for b in BLOCKS if "llamaindex_selfroute" in b)
    # tests/integration/llamaindex_selfroute/test_docs_examples.py executes this page's examples.
    assert block in (ROOT / "docs" / "llamaindex.md").read_text(encoding="utf-8")


def test_the_two_commands_are_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install -e '.[dev]'" in README and "pip install -q -e '.[dev]'" in ci
    assert "python -m pytest" in README and "python -m pytest" in ci


def test_the_quick_loop_names_markers_pytest_knows() -> None:
    loop = re.search(r'python -m pytest -m "([^"]+)"', README)
    assert loop is not None, "README names no quick loop"
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    declared = set(re.findall(r'^\s*"(\w+):', pyproject, re.MULTILINE))
    named = set(re.findall(r"\b(\w+)\b", loop.group(1))) - {"not", "and", "or"}
    assert named and named <= declared
    assert "-n auto" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
