"""Tracing: one chain run with named/tagged child runs; callbacks reach every model call."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import get_usage_metadata_callback
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

from langchain_selfroute import TAG_LONG_CONTEXT, TAG_RAG, TAG_RETRIEVE
from selfroute import Route
from tests.conformance.scenarios import BY_NAME, LC_MODEL, LC_USAGE, RAG_MODEL, RAG_USAGE
from tests.unit.langchain_selfroute.fakes import scenario_route


class Collector(BaseTracer):
    """Keeps finished root runs."""

    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        self.roots.append(run)


def shape(run: Run) -> list[tuple[str, str, list[str]]]:
    return [(c.run_type, c.name, sorted(c.tags or [])) for c in run.child_runs]


def test_long_context_route_run_tree() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"])
    tracer = Collector()
    route.invoke("When was Mara Holt born?", {"callbacks": [tracer], "tags": ["app"]})
    (root,) = tracer.roots
    assert root.name == "SelfRoute" and root.run_type == "chain"
    assert shape(root) == [
        ("retriever", "ListRetriever", ["app", TAG_RETRIEVE]),
        ("llm", TAG_RAG, ["app", "nostream", TAG_RAG]),  # LangGraph's "messages" mode skips it
        ("llm", TAG_LONG_CONTEXT, ["app", TAG_LONG_CONTEXT]),
    ]
    assert root.outputs is not None and root.outputs["answer"] == "In 1901."  # a dict output
    rag_run = root.child_runs[1]
    assert "retrieved from a longer document" in str(rag_run.inputs)


def test_rag_route_has_no_long_context_run() -> None:
    route, _ = scenario_route(BY_NAME["answered"])
    tracer = Collector()
    route.invoke("How long did Mara Holt keep the lamp?", {"callbacks": [tracer]})
    (root,) = tracer.roots
    assert [c.name for c in root.child_runs] == ["ListRetriever", TAG_RAG]


def test_custom_run_name_and_metadata_propagate() -> None:
    route, _ = scenario_route(BY_NAME["answered"])
    tracer = Collector()
    named = route.with_config(run_name="qa", metadata={"tenant": "acme"})
    named.invoke("How long did Mara Holt keep the lamp?", {"callbacks": [tracer]})
    (root,) = tracer.roots
    assert root.name == "qa"
    for child in root.child_runs:
        assert child.extra["metadata"]["tenant"] == "acme"


def test_stream_run_ends_with_the_accumulated_chunk() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"])
    tracer = Collector()
    list(route.stream("When was Mara Holt born?", {"callbacks": [tracer]}))
    (root,) = tracer.roots
    assert [c.name for c in root.child_runs] == ["ListRetriever", TAG_RAG, TAG_LONG_CONTEXT]
    final = root.outputs  # the accumulated chunk is a mapping: the run's outputs are its keys
    assert final is not None
    assert final["answer"] == "In 1901." and final["route"] == Route.LONG_CONTEXT
    assert root.inputs == {"input": "When was Mara Holt born?"}


async def test_astream_events_v2_show_child_runs() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"])
    events: list[dict[str, Any]] = [
        e async for e in route.astream_events("When was Mara Holt born?", version="v2")
    ]
    starts = [(e["event"], e["name"]) for e in events if e["event"].endswith("_start")]
    assert starts == [
        ("on_chain_start", "SelfRoute"),
        ("on_retriever_start", "ListRetriever"),
        ("on_chat_model_start", TAG_RAG),
        ("on_chat_model_start", TAG_LONG_CONTEXT),
    ]
    tags = {e["name"]: e["tags"] for e in events if e["event"].endswith("_start")}
    assert TAG_RAG in tags[TAG_RAG] and TAG_LONG_CONTEXT in tags[TAG_LONG_CONTEXT]
    assert TAG_RETRIEVE in tags["ListRetriever"]
    model_tokens = "".join(
        str(e["data"]["chunk"].content)
        for e in events
        if e["event"] == "on_chat_model_stream" and e["name"] == TAG_LONG_CONTEXT
    )
    assert model_tokens == "In 1901."
    chain_chunks = [
        e["data"]["chunk"]
        for e in events
        if e["event"] == "on_chain_stream" and e["name"] == "SelfRoute"
    ]
    assert chain_chunks[0].route.value == "long_context"
    assert chain_chunks[-1].output.answer == "In 1901."
    # the RAG model's decline streamed as model events but never as SelfRoute output
    assert "".join(c.text for c in chain_chunks) == "In 1901."


def test_usage_metadata_callback_sees_every_model_call() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"])
    with get_usage_metadata_callback() as cb:
        route.invoke("When was Mara Holt born?")
    assert cb.usage_metadata == {
        RAG_MODEL: {"input_tokens": 120, "output_tokens": 6, "total_tokens": 126},
        LC_MODEL: {"input_tokens": 1500, "output_tokens": 9, "total_tokens": 1509},
    }
    assert RAG_USAGE.input_tokens == 120 and LC_USAGE.input_tokens == 1500


async def test_usage_metadata_callback_sees_async_streamed_calls() -> None:
    route, _ = scenario_route(BY_NAME["sentinel"])
    with get_usage_metadata_callback() as cb:
        _ = [c async for c in route.astream("When was Mara Holt born?")]
    assert set(cb.usage_metadata) == {RAG_MODEL, LC_MODEL}
    assert cb.usage_metadata[LC_MODEL]["input_tokens"] == 1500
