"""``docs/batch.md``: every Python example runs, in order, with the real ``ChatOpenAI`` against
the Files+Batches loopback (``OPENAI_BASE_URL``), and prints exactly what the page says; the
page's measured cost table is what benchmark 9 computes."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.support._loopback import Reply, last_user_text
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[3] / "docs" / "batch.md"
FACTS = {
    "notice period": ("The notice period for termination is 90 days.", "90 days."),
    "law governs": ("governed by the laws of Delaware", "The laws of Delaware."),
    "payment": ("Payment is due within 45 days of the invoice.", "Within 45 days of the invoice."),
}


def respond(body: dict[str, Any]) -> Reply:
    """A model that answers from what it is shown (the RAG step only from its passage)."""
    prompt = last_user_text(body)
    question = prompt.rsplit("Question:", 1)[-1].lower()
    for key, (fact, answer) in FACTS.items():
        if key in question:
            return Reply(answer if fact in prompt else "unanswerable", model=None)
    return Reply("unanswerable", model=None)


def examples(markdown: str) -> list[tuple[str, str | None]]:
    """``(python code, the text block printed after it or None)``."""
    pattern = r"```python\n(.*?)```(?:\n\n(?:[^`\n][^\n]*\n\n)?```text\n(.*?)```)?"
    return [(code, out) for code, out in re.findall(pattern, markdown, flags=re.DOTALL)]


def test_every_example_prints_what_the_page_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = PAGE.read_text(encoding="utf-8")
    blocks = examples(page)
    assert len(blocks) == 2
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("SELFROUTE_BATCH_POLL_S", "0.01")
    with OpenAIBatchServer(respond) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        namespace: dict[str, Any] = {}
        for code, expected in blocks:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(PAGE), "exec"), namespace)
            assert out.getvalue() == (expected or ""), code
        assert len(server.created) == 2  # phase 1 and 2; the async rerun answered from the file
    assert (tmp_path / "contracts.job.json").is_file()


def test_the_measured_cost_table_is_benchmark_9s() -> None:
    from benchmarks.bench_batch import cost_table

    assert cost_table().to_markdown() in PAGE.read_text(encoding="utf-8")
