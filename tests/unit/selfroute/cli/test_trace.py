"""``selfroute ask --trace``: the question's spans go to the global tracer provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfroute.cli import main
from tests.support.spans import SpanRecorder

pytest.importorskip("opentelemetry.sdk")

TEXT = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years. "
    "She was born in Dunmore in 1901. "
) * 30
QUESTION = "How long did Mara Holt keep the lamp?"


def _ask(tmp_path: Path, *extra: str) -> int:
    doc = tmp_path / "keeper.txt"
    doc.write_text(TEXT, encoding="utf-8")
    return main(["ask", QUESTION, "--doc", str(doc), "--model", "offline", "--json", *extra])


def test_trace_flag_sends_the_spans_to_the_global_provider(
    tmp_path: Path, global_provider: SpanRecorder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _ask(tmp_path, "--trace") == 0
    root = global_provider.root()
    assert root.attributes["input.value"] == QUESTION
    assert root.attributes["selfroute.route"] in ("rag", "long_context")
    names = [n for n, _ in global_provider.shape(root)]
    assert names[:2] == ["selfroute.retrieve", "selfroute.rag"]


def test_environment_variable_turns_it_on_and_default_is_off(
    tmp_path: Path,
    global_provider: SpanRecorder,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert _ask(tmp_path) == 0
    assert global_provider.spans() == []
    monkeypatch.setenv("SELFROUTE_TRACE", "1")
    assert _ask(tmp_path) == 0
    assert len(global_provider.roots()) == 1
