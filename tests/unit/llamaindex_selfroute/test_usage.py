"""Reading provider usage from LlamaIndex responses, whatever the provider's shape."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, CompletionResponse
from pydantic import BaseModel

from llamaindex_selfroute import model_from_response, usage_from_response
from llamaindex_selfroute._usage import StreamUsage


def _chat(raw=None, **kwargs) -> ChatResponse:
    return ChatResponse(
        message=ChatMessage(role="assistant", content="x"), raw=raw, additional_kwargs=kwargs
    )


class _OpenAIUsage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: dict | None = None


class _OpenAIRaw(BaseModel):
    model: str
    usage: _OpenAIUsage | None = None


def test_openai_object() -> None:
    raw = _OpenAIRaw(
        model="gpt-4o-mini-2024-07-18",
        usage=_OpenAIUsage(
            prompt_tokens=100,
            completion_tokens=7,
            total_tokens=107,
            prompt_tokens_details={"cached_tokens": 64},
        ),
    )
    usage = usage_from_response(_chat(raw))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (100, 7, 107)
    assert usage.cached_input_tokens == 64
    assert usage.source == "provider"
    assert model_from_response(_chat(raw)) == "gpt-4o-mini-2024-07-18"


def test_openai_dict() -> None:
    raw = {"model": "m", "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}}
    usage = usage_from_response(_chat(raw))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (5, 2, 7)
    assert usage.cached_input_tokens is None


def test_anthropic_shape_plain_object() -> None:
    raw = SimpleNamespace(
        model="claude-x",
        usage=SimpleNamespace(input_tokens=40, output_tokens=3, cache_read_input_tokens=30),
    )
    usage = usage_from_response(_chat(raw))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (40, 3, 43)
    assert usage.cached_input_tokens == 30
    assert model_from_response(_chat(raw)) == "claude-x"


def test_gemini_usage_metadata() -> None:
    raw = {
        "model_version": "gemini-2.5-flash",
        "usage_metadata": {
            "prompt_token_count": 12,
            "candidates_token_count": 4,
            "total_token_count": 20,  # includes thinking tokens
            "cached_content_token_count": 8,
        },
    }
    usage = usage_from_response(_chat(raw))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (12, 4, 20)
    assert usage.cached_input_tokens == 8
    assert model_from_response(_chat(raw)) == "gemini-2.5-flash"


def test_additional_kwargs_like_llamaindex_openai() -> None:
    resp = CompletionResponse(
        text="x", raw={}, additional_kwargs={"prompt_tokens": 9, "completion_tokens": 1}
    )
    usage = usage_from_response(resp)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (9, 1, 10)


@pytest.mark.parametrize(
    "raw",
    [None, {}, {"usage": None}, {"usage": {}}, {"usage": {"prompt_tokens": 0}}, "text", 42],
    ids=["none", "empty", "usage-none", "usage-empty", "all-zero", "str", "int"],
)
def test_nothing_reported_is_none(raw) -> None:
    assert usage_from_response(_chat(raw)) is None
    assert model_from_response(_chat(raw)) is None


def test_broken_model_dump_is_tolerated() -> None:
    class Broken:
        def model_dump(self):
            raise RuntimeError("boom")

        prompt_tokens = 3
        completion_tokens = 1

    assert usage_from_response(_chat({"usage": Broken()})) is None


def test_stream_usage_final_chunk_only() -> None:
    acc = StreamUsage()
    for raw in (
        {"model": "m"},
        {"model": "m"},
        {"model": "m", "usage": {"prompt_tokens": 10, "completion_tokens": 3}},
    ):
        acc.add(_chat(raw))
    usage = acc.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 3, 13)
    assert acc.model == "m"


def test_stream_usage_running_totals_are_not_summed() -> None:
    acc = StreamUsage()
    for out in (1, 2, 3):
        acc.add(_chat({"usage": {"input_tokens": 50, "output_tokens": out}}))
    assert (acc.usage().input_tokens, acc.usage().output_tokens) == (50, 3)


def test_stream_usage_split_reports_are_combined() -> None:
    acc = StreamUsage()
    acc.add(_chat({"usage": {"input_tokens": 50, "output_tokens": 1}}))  # message_start
    acc.add(_chat({"usage": {"output_tokens": 12}}))  # message_delta
    assert (acc.usage().input_tokens, acc.usage().output_tokens) == (50, 12)


def test_stream_usage_none_reported() -> None:
    acc = StreamUsage()
    acc.add(_chat({"model": "m"}))
    assert acc.usage() is None
