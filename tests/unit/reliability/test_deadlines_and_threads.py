"""Issue #16, findings 6 and 11 at the core: the drivers' deadline, streamed finish reasons, and
blocking calls off the default executor (scripted handlers, sync and async drivers)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import selfroute as sr
from selfroute._threads import in_thread
from tests.unit.reliability._fakes import DOCUMENT, PASSAGES


class Slow:
    """A handler whose chosen stage takes ``delay_s`` (sync: sleeps; async: awaits)."""

    def __init__(self, slow: str, delay_s: float = 5.0, *, finish: str | None = "stop") -> None:
        self.slow, self.delay_s, self.finish = slow, delay_s, finish
        self.release = threading.Event()

    def _wait(self, stage: str) -> None:
        if stage == self.slow:
            self.release.wait(self.delay_s)

    def retrieve(self, step: sr.flow.Retrieve) -> list[sr.Passage]:
        self._wait("retrieve")
        return [sr.Passage(t, "doc-1") for t in PASSAGES]

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        self._wait(step.stage.value)
        text = "unanswerable" if step.stage is sr.Stage.RAG else "In 1901."
        return sr.Generation(text, finish_reason=self.finish)

    def stream(self, step: sr.flow.Generate) -> Iterator[sr.flow.GenerationChunk]:
        gen = self.generate(step)
        yield sr.flow.GenerationChunk(gen.text)
        yield sr.flow.GenerationChunk("", finish_reason=gen.finish_reason)

    def load_long_context(self, step: sr.flow.LoadLongContext) -> list[str]:
        self._wait("load")
        return [DOCUMENT]

    async def _await(self, stage: str) -> None:
        if stage == self.slow:
            await asyncio.sleep(self.delay_s)

    async def aretrieve(self, step: sr.flow.Retrieve) -> list[sr.Passage]:
        await self._await("retrieve")
        return [sr.Passage(t, "doc-1") for t in PASSAGES]

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        await self._await(step.stage.value)
        text = "unanswerable" if step.stage is sr.Stage.RAG else "In 1901."
        return sr.Generation(text, finish_reason=self.finish)

    async def astream(self, step: sr.flow.Generate) -> AsyncIterator[sr.flow.GenerationChunk]:
        gen = await self.agenerate(step)
        yield sr.flow.GenerationChunk(gen.text)
        yield sr.flow.GenerationChunk("", finish_reason=gen.finish_reason)

    async def aload_long_context(self, step: sr.flow.LoadLongContext) -> list[str]:
        await self._await("load")
        return [DOCUMENT]


def _run(handler: Slow, config: sr.RouteConfig, mode: str) -> sr.RouteResult:
    flow = sr.flow.self_route_flow("When was Mara Holt born?", config)
    if mode == "sync":
        return sr.flow.run_flow(flow, handler)
    if mode == "async":
        return asyncio.run(sr.flow.arun_flow(flow, handler))
    if mode == "stream":
        events = list(sr.flow.drive(flow, handler, stream=True))
    else:

        async def collect() -> list[Any]:
            return [e async for e in sr.flow.adrive(flow, handler, stream=True)]

        events = asyncio.run(collect())
    last = events[-1]
    assert isinstance(last, sr.flow.ResultEvent)
    return last.result


MODES = ["sync", "async", "stream", "astream"]
STAGES = [
    ("retrieve", sr.RetrievalError),
    ("rag", sr.ModelOutputError),
    ("load", sr.LongContextError),
    ("long_context", sr.LongContextError),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("slow, error", STAGES)
def test_the_deadline_bounds_every_step(mode: str, slow: str, error: type[Exception]) -> None:
    handler = Slow(slow)
    config = sr.RouteConfig(deadline_s=0.4)
    started = time.monotonic()
    try:
        with pytest.raises(error, match="deadline") as info:
            _run(handler, config, mode)
    finally:
        handler.release.set()
    assert time.monotonic() - started < 2.5
    assert isinstance(info.value, sr.SelfRouteError)


@pytest.mark.parametrize("mode", MODES)
def test_a_call_inside_the_deadline_is_untouched(mode: str) -> None:
    result = _run(Slow("none"), sr.RouteConfig(deadline_s=30), mode)
    assert (result.route, result.answer) == (sr.Route.LONG_CONTEXT, "In 1901.")
    assert [s.finish_reason for s in result.steps] == ["stop", "stop"]


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "5"])
def test_deadline_must_be_positive(bad: object) -> None:
    with pytest.raises(sr.ConfigurationError, match="deadline_s"):
        sr.RouteConfig(deadline_s=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", MODES)
def test_a_streamed_or_returned_length_finish_is_truncated(mode: str) -> None:
    class Cut(Slow):
        def generate(self, step: sr.flow.Generate) -> sr.Generation:
            if step.stage is sr.Stage.RAG:
                return sr.Generation("Thirty-one", finish_reason="length")
            return sr.Generation("In 1901.", finish_reason="stop")

        async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
            return self.generate(step)

    result = _run(Cut("none"), sr.RouteConfig(), mode)
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.TRUNCATED)
    assert result.steps[0].finish_reason == "length" and result.rag_answer == "Thirty-one"


var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")


async def test_in_thread_returns_raises_and_sees_the_context() -> None:
    var.set("caller")
    assert await in_thread(lambda a, b: (a + b, var.get()), 1, 2) == (3, "caller")

    def boom() -> None:
        raise ValueError("from the thread")

    with pytest.raises(ValueError, match="from the thread"):
        await in_thread(boom)


async def test_timed_out_in_thread_calls_leave_the_default_executor_free() -> None:
    release = threading.Event()
    try:
        for _ in range(12):  # twice the default executor's size on two cores
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(in_thread(release.wait, 30), 0.05)
        loop = asyncio.get_running_loop()
        t0 = time.monotonic()
        assert await asyncio.wait_for(loop.run_in_executor(None, lambda: 7), 5) == 7
        assert time.monotonic() - t0 < 1
    finally:
        release.set()
