"""Async is really async; batch and abatch honour max_concurrency."""

from __future__ import annotations

import asyncio

import pytest

from langchain_selfroute import SelfRoute
from selfroute import Route
from tests.conformance.scenarios import BY_NAME
from tests.unit.langchain_selfroute.fakes import ListRetriever, ScriptedChatModel, scenario_docs

SCENARIO = BY_NAME["sentinel"]  # takes both model calls


def build(model: ScriptedChatModel, retriever: ListRetriever | None = None) -> SelfRoute:
    return SelfRoute(
        retriever=retriever or ListRetriever(docs=scenario_docs(SCENARIO)),
        llm=model,
        document=SCENARIO.document,
    )


async def _ticker(ticks: list[int], gate: asyncio.Event, stop: asyncio.Event) -> None:
    while not stop.is_set():
        ticks.append(1)
        if len(ticks) >= 3:
            gate.set()  # only a free event loop can get here while the model waits
        await asyncio.sleep(0.001)


async def test_ainvoke_never_blocks_the_event_loop() -> None:
    gate, stop = asyncio.Event(), asyncio.Event()
    model = ScriptedChatModel(
        rag_output=SCENARIO.rag_output, lc_output=SCENARIO.lc_output, delay_s=0.02, gate=gate
    )
    retriever = ListRetriever(docs=scenario_docs(SCENARIO), delay_s=0.02)
    route = build(model, retriever)
    ticks: list[int] = []
    ticker = asyncio.create_task(_ticker(ticks, gate, stop))
    during: list[int] = []

    async def call() -> object:
        out = await route.ainvoke(SCENARIO.question)
        during.append(len(ticks))
        return out

    out = await asyncio.wait_for(call(), timeout=20)
    stop.set()
    await ticker
    assert out.route is Route.LONG_CONTEXT  # type: ignore[attr-defined]
    assert during[0] >= 3  # the ticker kept running while ainvoke awaited the model
    assert model.modes() == {"async"}  # the sync model methods were never called
    assert retriever.calls == ["async"]


async def test_astream_never_blocks_the_event_loop() -> None:
    gate, stop = asyncio.Event(), asyncio.Event()
    model = ScriptedChatModel(rag_output="unanswerable", lc_output="In 1901.", delay_s=0.005)
    retriever = ListRetriever(docs=scenario_docs(SCENARIO), delay_s=0.01)
    route = build(model, retriever)
    ticks: list[int] = []
    ticker = asyncio.create_task(_ticker(ticks, gate, stop))
    chunks = [c async for c in route.astream(SCENARIO.question)]
    stop.set()
    await ticker
    assert chunks[-1].output is not None
    assert len(ticks) >= 3
    assert model.modes() == {"async_stream"}
    assert retriever.calls == ["async"]


async def test_concurrent_ainvokes_overlap() -> None:
    model = ScriptedChatModel(
        rag_output=SCENARIO.rag_output, lc_output=SCENARIO.lc_output, delay_s=0.05
    )
    route = build(model)
    outs = await asyncio.gather(*(route.ainvoke(SCENARIO.question) for _ in range(4)))
    assert all(o.answer == "In 1901." for o in outs)
    assert model.max_in_flight >= 2  # sequential execution would never exceed 1


@pytest.mark.parametrize("limit", [1, 2])
async def test_abatch_honours_max_concurrency(limit: int) -> None:
    model = ScriptedChatModel(
        rag_output=SCENARIO.rag_output, lc_output=SCENARIO.lc_output, delay_s=0.02
    )
    route = build(model)
    questions = [f"{SCENARIO.question} #{i}" for i in range(5)]
    outs = await route.abatch(questions, config={"max_concurrency": limit})
    assert [o.question for o in outs] == questions
    assert model.max_in_flight == limit
    assert model.modes() == {"async"}


@pytest.mark.parametrize("limit", [1, 2])
def test_batch_honours_max_concurrency(limit: int) -> None:
    model = ScriptedChatModel(
        rag_output=SCENARIO.rag_output, lc_output=SCENARIO.lc_output, delay_s=0.02
    )
    route = build(model)
    questions = [f"{SCENARIO.question} #{i}" for i in range(5)]
    outs = route.batch(questions, config={"max_concurrency": limit})
    assert [o.question for o in outs] == questions
    assert all(o.route is Route.LONG_CONTEXT for o in outs)
    assert model.max_in_flight <= limit
    assert model.modes() == {"sync"}


def test_batch_return_exceptions_keeps_good_results() -> None:
    model = ScriptedChatModel(rag_output="Thirty-one years.")
    route = build(model)
    outs = route.batch(["How long?", "   ", 42], return_exceptions=True)  # type: ignore[list-item]
    assert outs[0].answer == "Thirty-one years."  # type: ignore[union-attr]
    assert isinstance(outs[1], ValueError) and "empty" in str(outs[1])
    assert isinstance(outs[2], ValueError) and "int" in str(outs[2])


async def test_abatch_as_completed_yields_every_index() -> None:
    model = ScriptedChatModel(rag_output="Thirty-one years.")
    route = build(model)
    seen = {}
    async for i, out in route.abatch_as_completed(["a question", "another question"]):
        seen[i] = out.question
    assert seen == {0: "a question", 1: "another question"}
