"""The sync and async drivers: events, streaming, and sync/async parity."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import selfroute as sr
from tests.unit.selfroute._scripted import LC_USAGE, RAG_USAGE, Scripted


def _events(script: Scripted, *, stream: bool = True, **config: Any) -> list[sr.flow.FlowEvent]:
    flow = sr.flow.self_route_flow("When was she born?", sr.RouteConfig(**config))
    return list(sr.flow.drive(flow, script, stream=stream))


def _aevents(script: Scripted, *, stream: bool = True, **config: Any) -> list[sr.flow.FlowEvent]:
    async def collect() -> list[sr.flow.FlowEvent]:
        flow = sr.flow.self_route_flow("When was she born?", sr.RouteConfig(**config))
        return [event async for event in sr.flow.adrive(flow, script, stream=stream)]

    return asyncio.run(collect())


def _text(events: list[sr.flow.FlowEvent], stage: sr.Stage) -> str:
    return "".join(e.text for e in events if isinstance(e, sr.flow.TokenEvent) and e.stage is stage)


def _result(events: list[sr.flow.FlowEvent]) -> sr.RouteResult:
    assert isinstance(events[-1], sr.flow.ResultEvent)
    assert sum(isinstance(e, sr.flow.ResultEvent) for e in events) == 1
    return events[-1].result


def test_answer_streams_after_a_route_event() -> None:
    events = _events(
        Scripted(rag="She was born in 1901.", rag_chunks=["She was", " born", " in 1901."])
    )
    assert events[0] == sr.flow.RouteEvent(sr.Route.RAG, sr.Reason.ANSWERED)
    tokens = [e for e in events if isinstance(e, sr.flow.TokenEvent)]
    assert len(tokens) >= 2  # streamed, not one block at the end
    assert _text(events, sr.Stage.RAG) == "She was born in 1901."
    result = _result(events)
    assert result.answer == "She was born in 1901."
    assert result.steps[0].usage == RAG_USAGE  # usage from the last chunk
    assert result.steps[0].model == "rag-model"


def test_declined_rag_text_is_never_emitted() -> None:
    script = Scripted(
        rag="Unanswerable.", rag_chunks=["Un", "answer", "able."], lc_chunks=["In ", "1901."]
    )
    events = _events(script)
    assert _text(events, sr.Stage.RAG) == ""
    assert not any("nanswer" in e.text for e in events if isinstance(e, sr.flow.TokenEvent))
    route_events = [e for e in events if isinstance(e, sr.flow.RouteEvent)]
    assert route_events == [sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=False)]
    first_token = next(i for i, e in enumerate(events) if isinstance(e, sr.flow.TokenEvent))
    assert events.index(route_events[0]) < first_token
    assert _text(events, sr.Stage.LONG_CONTEXT) == "In 1901."
    result = _result(events)
    assert result.reason is sr.Reason.DECLINED
    assert result.usage == RAG_USAGE + LC_USAGE


def test_natural_refusal_streamed_in_pieces_is_held_back() -> None:
    script = Scripted(
        rag="The passages do not mention her birth.",
        rag_chunks=["The pass", "ages do", " not mention", " her birth."],
    )
    events = _events(script)
    assert _text(events, sr.Stage.RAG) == ""
    assert next(e for e in events if isinstance(e, sr.flow.RouteEvent)).retracted is False
    assert _result(events).reason is sr.Reason.REFUSED


def test_late_refusal_is_retracted() -> None:
    # The opening looks like an answer, so it is shown; the end turns it into a refusal.
    script = Scripted(
        rag="Her birth year is not mentioned in the passages.",
        rag_chunks=["Her birth", " year", " is not mentioned", " in the passages."],
    )
    events = _events(script)
    shown = _text(events, sr.Stage.RAG)
    assert shown and "Her birth".startswith(shown[:9])
    route_events = [e for e in events if isinstance(e, sr.flow.RouteEvent)]
    assert route_events[0] == sr.flow.RouteEvent(sr.Route.RAG, sr.Reason.ANSWERED)
    assert route_events[1] == sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=True)
    # Everything after the retraction is the long-context answer.
    after = events[events.index(route_events[1]) :]
    assert _text(after, sr.Stage.RAG) == ""
    assert _text(after, sr.Stage.LONG_CONTEXT) == "In 1901."
    assert _result(events).reason is sr.Reason.REFUSED


def test_reasoning_block_and_label_are_not_streamed() -> None:
    script = Scripted(
        rag="<think>The first passage.</think>Answer: In 1901.",
        rag_chunks=["<thi", "nk>The first", " passage.</think>", "Answer:", " In 1901."],
    )
    events = _events(script)
    assert _text(events, sr.Stage.RAG) == "In 1901."
    assert _result(events).answer == "In 1901."


def test_no_chunks_announces_long_context_before_its_tokens() -> None:
    events = _events(Scripted(passages=(), lc_chunks=["In ", "1901."]))
    assert events[0] == sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=False)
    assert _text(events, sr.Stage.LONG_CONTEXT) == "In 1901."
    assert _result(events).reason is sr.Reason.NO_CHUNKS


def test_without_stream_only_the_result_is_yielded() -> None:
    events = _events(Scripted(rag="unanswerable"), stream=False)
    assert len(events) == 1 and _result(events).reason is sr.Reason.DECLINED


def test_over_budget_streams_the_decline_as_the_final_answer() -> None:
    events = _events(Scripted(rag="unanswerable"), budget=sr.LongContextBudget(max_calls=0))
    result = _result(events)
    assert events[0] == sr.flow.RouteEvent(sr.Route.RAG, sr.Reason.OVER_BUDGET)
    assert result.reason is sr.Reason.OVER_BUDGET
    assert _text(events, sr.Stage.RAG) == result.answer == "unanswerable"
    assert _text(events, sr.Stage.LONG_CONTEXT) == ""


def _comparable(events: list[sr.flow.FlowEvent]) -> list[Any]:
    out: list[Any] = []
    for e in events:
        if isinstance(e, sr.flow.ResultEvent):
            d = e.result.to_dict()
            d.pop("latency_s")
            for step in d["steps"]:
                step.pop("latency_s")
            out.append(d)
        else:
            out.append(e)
    return out


SCRIPTS: dict[str, dict[str, Any]] = {
    "answered": {"rag": "She was born in 1901.", "rag_chunks": ["She was", " born in 1901."]},
    "sentinel": {"rag": "unanswerable", "rag_chunks": ["un", "answerable"]},
    "late_refusal": {
        "rag": "Her birth year is not mentioned in the passages.",
        "rag_chunks": ["Her birth", " year is not mentioned in the passages."],
    },
    "rag_error": {"rag_error": TimeoutError("slow")},
    "no_chunks": {"passages": ()},
    "no_usage": {"rag_usage": None, "lc_usage": None, "rag": "unanswerable"},
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "invoke"])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_async_driver_yields_the_same_events_as_sync(name: str, stream: bool) -> None:
    sync = _events(Scripted(**SCRIPTS[name]), stream=stream)
    async_ = _aevents(Scripted(**SCRIPTS[name]), stream=stream)
    assert _comparable(async_) == _comparable(sync)


def test_run_flow_and_arun_flow_agree() -> None:
    a = sr.flow.run_flow(sr.flow.self_route_flow("q?"), Scripted(rag="unanswerable"))
    b = asyncio.run(sr.flow.arun_flow(sr.flow.self_route_flow("q?"), Scripted(rag="unanswerable")))
    assert (a.answer, a.route, a.reason, a.usage) == (b.answer, b.route, b.reason, b.usage)


def test_arun_flow_closes_its_driver_before_it_returns(monkeypatch: pytest.MonkeyPatch) -> None:
    import selfroute._flow._drivers as drivers

    started: list[Any] = []
    original = drivers.adrive

    def adrive(*args: Any, **kwargs: Any) -> Any:
        started.append(original(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(drivers, "adrive", adrive)

    async def run() -> bool:
        await sr.flow.arun_flow(sr.flow.self_route_flow("q?"), Scripted(rag="unanswerable"))
        return started[-1].ag_frame is None  # closed now, not when the loop finalises it

    assert asyncio.run(run())


def test_handler_error_is_thrown_into_the_flow_in_both_drivers() -> None:
    for events in (
        _events(Scripted(rag_error=TimeoutError("slow"))),
        _aevents(Scripted(rag_error=TimeoutError("slow"))),
    ):
        result = _result(events)
        assert result.reason is sr.Reason.RAG_ERROR and result.answer == "In 1901."
