"""Per-call work LangChain's machinery would repeat for every call (issue #32, item 3).

LangChain inspects the step a runnable hands to ``_call_with_config`` and
``_transform_stream_with_config`` on every call (does it take ``config``, ``run_manager``?);
the route's steps carry their signature so no bound method is inspected. The streamed call's
closing chunk reads usage and response metadata from the message chunks that carry some, with
the values a full merge of every chunk gives.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
import operator
import types
from collections.abc import Callable
from typing import Any, cast

import pytest
from langchain_core.messages import AIMessageChunk
from langchain_core.messages.ai import OutputTokenDetails, UsageMetadata

from langchain_selfroute import SelfRouteChunk
from langchain_selfroute._handlers import _generation, _Pieces, message_text
from selfroute import Reason, Route, Stage
from selfroute._flow._steps import GenerationChunk
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


def _openai_stream() -> list[AIMessageChunk]:
    """What ``ChatOpenAI`` streams: every chunk says its provider, then the finish, then usage."""
    usage = {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
    return [
        *(
            AIMessageChunk(content=word, response_metadata={"model_provider": "openai"})
            for word in ("", "Mara", " Holt")
        ),
        AIMessageChunk(
            content="",
            response_metadata={
                "finish_reason": "stop",
                "model_name": "gpt-4o-mini",
                "model_provider": "openai",
            },
        ),
        AIMessageChunk(content="", usage_metadata=cast(UsageMetadata, usage)),
        AIMessageChunk(content=""),
    ]


def _meta(**meta: Any) -> AIMessageChunk:
    return AIMessageChunk(content="x", response_metadata=meta)


#: Metadata that merging changes on a repeat, or keeps only while equal.
_METADATA_CASES = [
    _openai_stream(),
    # the provider changes mid-stream: merging concatenates, later repeats concatenate again
    [_meta(model_provider="a"), _meta(model_provider="b"), _meta(model_provider="b")],
    [
        _meta(model_provider="a"),
        _meta(model_provider="a"),
        _meta(model_provider="b"),
        _meta(model_provider="a"),
    ],
    [_meta(model_provider="a"), _meta(model_provider="a", id="r1"), _meta(id="r1"), _meta(id="r2")],
    # a model name on every chunk is concatenated by merging (not a key kept when equal)
    [_meta(model_name="m"), _meta(model_name="m"), _meta(model_name="m")],
    [_meta(output_version="v1"), _meta(output_version="v1", finish_reason="stop")],
    [_meta(model_provider=None), _meta(model_provider="openai"), _meta(model_provider="openai")],
    [_meta(finish_reason=None), _meta(finish_reason="length"), _meta()],
    [
        _meta(model_provider="openai"),
        AIMessageChunk(
            content="a",
            usage_metadata=cast(
                UsageMetadata, {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
            ),
        ),
        _meta(model_provider="openai"),
    ],
]


@pytest.mark.parametrize("pieces", _METADATA_CASES)
def test_the_merged_metadata_is_the_chunk_sums(pieces: list[AIMessageChunk]) -> None:
    collected = _Pieces(None)
    for piece in pieces:
        collected.add(piece)
    full, light = collected.merged(), collected.metadata()
    assert light.response_metadata == full.response_metadata
    assert light.usage_metadata == full.usage_metadata


@pytest.mark.parametrize(
    "pieces",
    [
        _chunks(),
        _chunks()[:2],  # nothing but provider metadata on the first chunk
        [AIMessageChunk(content="a"), AIMessageChunk(content="b")],  # no metadata at all
        [_chunks()[4]],
        ["plain ", "text"],  # an LLM's strings
        *_METADATA_CASES,
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


def _reference_add(left: SelfRouteChunk, right: SelfRouteChunk) -> SelfRouteChunk:
    """Chunk addition written plainly (through the constructor and the properties)."""
    merged = {**left, **right}
    merged["answer"] = ("" if right.retracted else left.text) + right.text
    switched = right.route is not None and right.route != left.route
    return SelfRouteChunk(
        merged,
        route=right.route or left.route,
        stage=right.stage or left.stage,
        reason=right.reason if (right.reason is not None or switched) else left.reason,
        retracted=left.retracted or right.retracted,
        output=right.output or left.output,
    )


def _chunk_state(chunk: SelfRouteChunk) -> tuple[Any, ...]:
    return (dict(chunk), chunk.route, chunk.reason, chunk.stage, chunk.retracted, chunk.output)


_CHUNKS = [
    SelfRouteChunk(route=Route.RAG, text="The", stage=Stage.RAG, reason=Reason.ANSWERED),
    SelfRouteChunk(route=Route.RAG, text=" answer", stage=Stage.RAG),
    SelfRouteChunk(text=" more"),
    SelfRouteChunk(route=Route.LONG_CONTEXT, text="Long", retracted=True, stage=Stage.LONG_CONTEXT),
    SelfRouteChunk({"reason": "declined", "route": "long_context"}, text=" tail"),
    SelfRouteChunk({"answer": None}),
    SelfRouteChunk({"reason": "refused"}, text=" why"),
    SelfRouteChunk(route=Route.RAG, reason=Reason.DECLINED, text=""),
]


@pytest.mark.parametrize("left", range(len(_CHUNKS)))
@pytest.mark.parametrize("right", range(len(_CHUNKS)))
def test_chunk_addition_is_the_plain_sum(left: int, right: int) -> None:
    a, b = _CHUNKS[left], _CHUNKS[right]
    got, want = a + b, _reference_add(a, b)
    assert type(got) is SelfRouteChunk
    assert _chunk_state(got) == _chunk_state(want)
    assert _chunk_state(a) == _chunk_state(_CHUNKS[left])  # neither side is changed


def test_a_text_piece_is_the_chunk_its_constructor_makes() -> None:
    piece = GenerationChunk.of_text("word ")
    assert piece == GenerationChunk(text="word ")
    assert hash(piece) == hash(GenerationChunk(text="word "))
    assert repr(piece) == repr(GenerationChunk(text="word "))
    with pytest.raises(dataclasses.FrozenInstanceError):
        piece.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize(
    "message",
    [
        AIMessageChunk(content="plain"),
        AIMessageChunk(content=[{"type": "text", "text": "a"}, "b", {"type": "image"}]),
        AIMessageChunk(content=""),
    ],
)
def test_message_text_reads_what_text_reads(message: AIMessageChunk) -> None:
    got = message_text(message)
    assert got == str(message.text) and type(got) is str


@pytest.mark.parametrize(
    "kwargs",
    [
        {"route": Route.RAG, "stage": Stage.RAG, "reason": Reason.ANSWERED, "retracted": False},
        {"route": None, "stage": None, "reason": None, "retracted": True},
        {
            "route": Route.LONG_CONTEXT,
            "stage": Stage.LONG_CONTEXT,
            "reason": None,
            "retracted": True,
        },
    ],
)
def test_a_text_chunk_is_the_chunk_its_constructor_makes(kwargs: dict[str, Any]) -> None:
    fast, plain = SelfRouteChunk.delta("word ", **kwargs), SelfRouteChunk(text="word ", **kwargs)
    assert type(fast) is SelfRouteChunk
    assert _chunk_state(fast) == _chunk_state(plain)
    assert vars(fast) == vars(plain)
    assert repr(fast) == repr(plain)
    for other in _CHUNKS:  # adds up as the constructor's chunk does, on either side
        assert _chunk_state(fast + other) == _chunk_state(plain + other)
        assert _chunk_state(other + fast) == _chunk_state(other + plain)


def test_a_token_event_is_the_event_its_constructor_makes() -> None:
    from selfroute._flow._drivers import _token
    from selfroute.flow import TokenEvent

    event = _token("word ", Stage.RAG)
    assert event == TokenEvent("word ", Stage.RAG)
    assert hash(event) == hash(TokenEvent("word ", Stage.RAG))
    assert repr(event) == repr(TokenEvent("word ", Stage.RAG))
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("mode", ["stream", "transform", "astream", "atransform"])
def test_a_stream_starts_nothing_before_its_first_chunk_is_asked_for(mode: str) -> None:
    """``stream`` and friends hand back LangChain's stream itself (no generator of their own
    around it): still nothing runs (no run, no retrieval, no model call) until it is read, and
    read, it gives what a generator around it gave."""
    from langchain_core.callbacks import BaseCallbackHandler

    class Runs(BaseCallbackHandler):
        def __init__(self) -> None:
            self.started: list[str] = []

        def on_chain_start(self, serialized: Any, inputs: Any, **kwargs: Any) -> None:
            self.started.append(str(kwargs.get("name")))

    route, model = make(LONG_ANSWER)
    runs = Runs()
    config: Any = {"callbacks": [runs]}

    async def one() -> Any:
        yield QUESTION

    streams: dict[str, Callable[[], Any]] = {
        "stream": lambda: route.stream(QUESTION, config),
        "transform": lambda: route.transform(iter([QUESTION]), config),
        "astream": lambda: route.astream(QUESTION, config),
        "atransform": lambda: route.atransform(one(), config),
    }
    stream = streams[mode]()
    assert runs.started == [] and model.calls == []

    async def read_async() -> list[Any]:
        return [c async for c in stream]

    chunks = asyncio.run(read_async()) if mode.startswith("a") else list(stream)
    assert runs.started[:1] == ["SelfRoute"] and model.calls
    total = functools.reduce(operator.add, chunks)
    out = route.invoke(QUESTION)
    timed = ("latency_s", "steps")
    assert {k: v for k, v in total.items() if k not in timed} == {
        k: v for k, v in out.items() if k not in timed
    }
    assert total.keys() == out.keys() and total.route is Route.RAG
    assert all(type(c) is SelfRouteChunk for c in chunks)


def test_a_stream_without_a_time_limit_is_read_as_it_is() -> None:
    """No time limit: the handler's chunks themselves (no thread, no generator around them);
    with one, read by a thread and bounded as before."""
    from selfroute._flow._timeouts import abounded_stream, bounded_stream

    pieces = [GenerationChunk.of_text("a"), GenerationChunk.of_text("b")]
    chunks = iter(pieces)
    assert bounded_stream(chunks, None) is chunks
    assert list(bounded_stream(iter(pieces), 5.0)) == pieces

    async def agen() -> Any:
        for piece in pieces:
            yield piece

    async def run() -> None:
        source = agen()
        assert abounded_stream(source, None) is source
        assert [c async for c in abounded_stream(agen(), 5.0)] == pieces

    asyncio.run(run())
