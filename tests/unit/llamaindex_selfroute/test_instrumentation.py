"""Dispatcher spans/events and the legacy callback manager (TokenCountingHandler)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler
from llama_index.core.instrumentation.events import BaseEvent
from llama_index.core.instrumentation.span_handlers import SimpleSpanHandler

import selfroute as sr
from llamaindex_selfroute import (
    SelfRouteQueryEngine,
    SelfRouteResultEvent,
    SelfRouteRouteEvent,
    SelfRouteStepEndEvent,
    SelfRouteStepStartEvent,
    get_route_result,
)
from tests.conformance.scenarios import BY_NAME, LC_USAGE, RAG_USAGE
from tests.unit.llamaindex_selfroute._scripted import scenario_parts


class _Events(BaseEventHandler):
    events: list[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "TestEvents"

    def handle(self, event: BaseEvent, **kwargs: Any) -> None:
        self.events.append(event)


@pytest.fixture
def recorded() -> Iterator[tuple[_Events, SimpleSpanHandler]]:
    root = get_dispatcher()
    events, spans = _Events(events=[]), SimpleSpanHandler()
    root.add_event_handler(events)
    root.add_span_handler(spans)
    try:
        yield events, spans
    finally:
        root.event_handlers.remove(events)
        root.span_handlers.remove(spans)


def _engine(name: str = "sentinel", **kwargs: Any) -> SelfRouteQueryEngine:
    scenario = BY_NAME[name]
    retriever, rag, lc = scenario_parts(scenario)
    return SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document, **kwargs)


def _names(events: list[Any]) -> list[str]:
    return [type(e).__name__ for e in events]


def _check_spans(spans: SimpleSpanHandler, rag: str, lc: str) -> None:
    done = {s.id_: s for s in spans.completed_spans}
    by_name = {}
    for span_id, span in done.items():
        by_name.setdefault(span_id.split("-")[0], []).append(span)
    query = by_name[
        "SelfRouteQueryEngine._aquery" if rag.startswith("a") else "SelfRouteQueryEngine._query"
    ]
    rag_span, lc_span = by_name[f"LlamaIndexHandler.{rag}"], by_name[f"LlamaIndexHandler.{lc}"]
    assert len(rag_span) == 1 and len(lc_span) == 1
    # both model-call spans hang under the query span, and each wraps its own LLM call span
    assert rag_span[0].parent_id == query[0].id_ and lc_span[0].parent_id == query[0].id_
    llm_parents = {
        s.parent_id
        for name, group in by_name.items()
        if name.startswith("ScriptedLLM")
        for s in group
    }
    assert {rag_span[0].id_, lc_span[0].id_} <= llm_parents


def test_sync_query_spans_and_events(recorded) -> None:
    events, spans = recorded
    response = _engine().query("When was Mara Holt born?")
    names = _names(events.events)
    assert names[0] == "QueryStartEvent" and names[-1] == "QueryEndEvent"
    starts = [e for e in events.events if isinstance(e, SelfRouteStepStartEvent)]
    ends = [e for e in events.events if isinstance(e, SelfRouteStepEndEvent)]
    assert [e.stage for e in starts] == ["rag", "long_context"]
    assert [(e.stage, e.usage["input_tokens"]) for e in ends] == [
        ("rag", RAG_USAGE.input_tokens),
        ("long_context", LC_USAGE.input_tokens),
    ]
    # the RAG and LC step events live in different spans
    assert starts[0].span_id != starts[1].span_id
    results = [e for e in events.events if isinstance(e, SelfRouteResultEvent)]
    assert len(results) == 1 and results[0].reason == "declined"
    assert results[0].result == get_route_result(response).to_dict()
    assert "LLMChatStartEvent" in names and "RetrievalStartEvent" in names
    _check_spans(spans, "rag_generate", "long_context_generate")


async def test_async_query_spans(recorded) -> None:
    events, spans = recorded
    await _engine().aquery("When was Mara Holt born?")
    _check_spans(spans, "arag_generate", "along_context_generate")
    assert [e.stage for e in events.events if isinstance(e, SelfRouteStepEndEvent)] == [
        "rag",
        "long_context",
    ]


def test_stream_emits_route_events(recorded) -> None:
    events, _ = recorded
    response = _engine(streaming=True).query("When was Mara Holt born?")
    "".join(response.response_gen)
    routes = [e for e in events.events if isinstance(e, SelfRouteRouteEvent)]
    assert [(e.route, e.retracted) for e in routes] == [("long_context", False)]
    ends = [e for e in events.events if isinstance(e, SelfRouteStepEndEvent)]
    assert [(e.stage, e.usage["output_tokens"]) for e in ends] == [
        ("rag", RAG_USAGE.output_tokens),
        ("long_context", LC_USAGE.output_tokens),
    ]


@pytest.mark.parametrize("streaming", [False, True])
def test_token_counting_handler_sees_both_calls(streaming: bool) -> None:
    counter = TokenCountingHandler(tokenizer=str.split)
    scenario = BY_NAME["sentinel"]
    retriever, rag, lc = scenario_parts(scenario)
    manager = CallbackManager([counter])
    rag.callback_manager = manager
    lc.callback_manager = manager
    engine = SelfRouteQueryEngine(
        retriever,
        rag,
        lc,
        long_context=scenario.document,
        streaming=streaming,
        callback_manager=manager,
    )
    response = engine.query(scenario.question)
    if streaming:
        "".join(response.response_gen)
    result = get_route_result(response)
    assert len(counter.llm_token_counts) == 2
    # TokenCountingHandler reads the provider's numbers from raw["usage"], as the engine does
    assert counter.prompt_llm_token_count == result.usage.input_tokens
    assert counter.completion_llm_token_count == result.usage.output_tokens
    assert result.usage.input_tokens == RAG_USAGE.input_tokens + LC_USAGE.input_tokens
    assert result.route is sr.Route.LONG_CONTEXT
