"""Cancelling an in-flight async call: the error propagates, nothing is left running."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._chat import ChatHandler, is_rag
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

QUESTION = "When was Mara Holt born?"
SLOW_S = 0.6


async def wait_until(predicate: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)


def other_tasks() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()}


async def assert_nothing_left(server: ScriptedOpenAIServer) -> None:
    await asyncio.sleep(0)
    assert other_tasks() == set()
    # The server finishes the (slow) reply it was writing; nothing else is in flight.
    await wait_until(lambda: server.in_flight == 0)
    # The client dropped the aborted connection instead of keeping it for reuse.
    await wait_until(lambda: not server._connections)  # test-support internals


@pytest.mark.parametrize("stage", ["rag", "lc"])
async def test_task_cancel_propagates_and_leaves_nothing_in_flight(
    openai_server: ScriptedOpenAIServer, stage: str
) -> None:
    slow = Reply("late answer", delay_s=SLOW_S)

    def responder(body: dict[str, Any]) -> Reply | str:
        rag = is_rag(last_user_text(body))
        if stage == "rag":
            return slow if rag else "In 1901."
        return "unanswerable" if rag else slow

    openai_server.responder = responder
    handler = ChatHandler(chat_openai(openai_server))
    calls_before_slow = 0 if stage == "rag" else 1
    task = asyncio.create_task(sr.flow.arun_flow(sr.flow.self_route_flow(QUESTION), handler))
    await wait_until(lambda: openai_server.calls > calls_before_slow)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert openai_server.calls == calls_before_slow + 1  # no call made after the cancel
    await assert_nothing_left(openai_server)


async def test_wait_for_timeout_propagates_and_leaves_nothing_in_flight(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.responder = lambda body: Reply("late", delay_s=SLOW_S)
    handler = ChatHandler(chat_openai(openai_server))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(sr.flow.arun_flow(sr.flow.self_route_flow(QUESTION), handler), 0.2)
    assert openai_server.calls == 1
    await assert_nothing_left(openai_server)


async def test_cancelling_one_of_many_leaves_the_others_intact(
    openai_server: ScriptedOpenAIServer,
) -> None:
    def responder(body: dict[str, Any]) -> Reply | str:
        text = last_user_text(body)
        return Reply("late", delay_s=SLOW_S) if "SLOW" in text else "Thirty-one years."

    openai_server.responder = responder
    handler = ChatHandler(chat_openai(openai_server))
    fast = [
        asyncio.create_task(sr.flow.arun_flow(sr.flow.self_route_flow(f"Fast {i}?"), handler))
        for i in range(5)
    ]
    slow = asyncio.create_task(
        sr.flow.arun_flow(sr.flow.self_route_flow("SLOW question?"), handler)
    )
    await wait_until(lambda: openai_server.calls >= 6)
    slow.cancel()
    results = await asyncio.gather(*fast)
    with pytest.raises(asyncio.CancelledError):
        await slow
    assert [r.answer for r in results] == ["Thirty-one years."] * 5
    await wait_until(lambda: openai_server.in_flight == 0)
    assert other_tasks() == set()
