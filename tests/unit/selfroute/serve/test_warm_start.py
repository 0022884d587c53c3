"""``selfroute serve``/``mcp`` load what the first question would (the tokenizer above all) while
they start, before they say they are ready."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from selfroute import _tokens
from selfroute._serve._commands import build_service
from selfroute.cli import build_parser
from selfroute.cli._commands import settings_for

DOC = Path(__file__).parents[3] / "fixtures" / "docs" / "1973_oil_crisis.html"
QUESTION = "Who proclaimed the oil embargo in October 1973?"


async def test_the_first_question_loads_no_tokenizer(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[str] = []
    real = _tokens._bundled_encoding

    def counted(tiktoken: Any, encoding: str) -> Any:
        loads.append(encoding)
        return real(tiktoken, encoding)

    monkeypatch.setattr(_tokens, "_bundled_encoding", counted)
    monkeypatch.setattr(_tokens, "_cache", {})  # as in a process just started
    args = build_parser("mcp").parse_args(["mcp", "--model", "offline"])
    service = build_service(settings_for(args, "mcp"), str(DOC))
    assert loads == ["o200k_base"]  # loaded while starting
    result = await service.answer(QUESTION)
    await service.aclose()
    assert result.route.value == "rag"
    assert result.long_context_tokens  # the question counted tokens, with the warm tokenizer
    assert loads == ["o200k_base"]
