"""Per-call work LangChain's machinery would repeat for every call (issue #32, item 3).

LangChain inspects the step a runnable hands to ``_call_with_config`` and
``_transform_stream_with_config`` on every call (does it take ``config``, ``run_manager``?);
the route's steps carry their signature so no bound method is inspected. The streamed call's
closing chunk reads usage and response metadata from the message chunks that carry some, with
the values a full merge of every chunk gives.
"""

from __future__ import annotations

import asyncio
import inspect
import types
from collections.abc import Callable
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import OutputTokenDetails, UsageMetadata

from langchain_selfroute._handlers import _generation, _Pieces
from tests.unit.langchain_selfroute.test_streaming import LONG_ANSWER, make

QUESTION = "How long did Mara Holt keep the lamp?"


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream", "astream"])
def test_no_bound_method_of_the_route_is_inspected_per_call(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    route, _ = make(LONG_ANSWER)
    inspected: list[Any] = []
    real = inspect.signature

    def spy(obj: Any, *args: Any, **kwargs: Any) -> inspect.Signature:
        if isinstance(obj, types.MethodType) and obj.__self__ is route:
            inspected.append(obj)
        return real(obj, *args, **kwargs)

    monkeypatch.setattr(inspect, "signature", spy)

    async def astream() -> list[Any]:
        return [c async for c in route.astream(QUESTION)]

    calls: dict[str, Callable[[], Any]] = {
        "invoke": lambda: route.invoke(QUESTION),
        "ainvoke": lambda: asyncio.run(route.ainvoke(QUESTION)),
        "stream": lambda: list(route.stream(QUESTION)),
        "astream": lambda: asyncio.run(astream()),
    }
    out = calls[mode]()
    assert out  # the call ran (and answered)
    assert inspected == []


def _chunks() -> list[AIMessageChunk]:
    return [
        AIMessageChunk(content="Mara ", response_metadata={"model_provider": "openai"}),
        AIMessageChunk(content="Holt"),
        AIMessageChunk(
            content="",
            usage_metadata=cast(
                UsageMetadata, {"input_tokens": 7, "output_tokens": 0, "total_tokens": 7}
            ),
        ),
        AIMessageChunk(content=" kept it."),
        AIMessageChunk(
            content="",
            response_metadata={"finish_reason": "stop", "model_name": "gpt-x"},
            usage_metadata=cast(
                UsageMetadata,
                {
                    "input_tokens": 0,
                    "output_tokens": 3,
                    "total_tokens": 3,
                    "output_token_details": OutputTokenDetails(reasoning=1),
                },
            ),
        ),
    ]


@pytest.mark.parametrize(
    "pieces",
    [
        _chunks(),
        _chunks()[:2],  # nothing but provider metadata on the first chunk
        [AIMessageChunk(content="a"), AIMessageChunk(content="b")],  # no metadata at all
        [_chunks()[4]],
        ["plain ", "text"],  # an LLM's strings
    ],
)
def test_the_closing_chunk_reads_what_a_full_merge_reads(pieces: list[Any]) -> None:
    collected = _Pieces("fallback")
    for piece in pieces:
        collected.add(piece)
    full = _generation(collected.merged(), "fallback", streamed=True)
    last = collected.last()
    assert (last.text, last.usage, last.model, last.finish_reason) == (
        "",
        full.usage,
        full.model,
        full.finish_reason,
    )


def test_the_closing_chunk_sums_usage_split_over_chunks() -> None:
    collected = _Pieces(None)
    for piece in _chunks():
        collected.add(piece)
    last = collected.last()
    assert last.usage is not None
    assert (last.usage.input_tokens, last.usage.output_tokens, last.usage.total_tokens) == (
        7,
        3,
        10,
    )
    assert (last.model, last.finish_reason) == ("gpt-x", "stop")
