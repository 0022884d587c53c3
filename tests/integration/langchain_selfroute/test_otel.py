"""OpenTelemetry spans of the LangChain ``SelfRoute`` with the real ChatOpenAI on loopback.

The same spans for ``invoke``, ``ainvoke``, ``stream``, ``astream``, ``batch`` and ``abatch``;
LangSmith runs (LangChain callbacks) keep their tags and metadata with tracing on.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.schemas import Run

import selfroute as sr
from langchain_selfroute import TAG_LONG_CONTEXT, TAG_RAG, TAG_RETRIEVE, SelfRoute
from tests.conformance.scenarios import BY_NAME, DOCUMENT, LC_USAGE, RAG_MODEL, RAG_USAGE
from tests.integration.langchain_selfroute.helpers import Provider, scripted
from tests.support._loopback import Reply, last_user_text
from tests.support.spans import SpanRecorder
from tests.unit.langchain_selfroute.fakes import RAG_MARK, ListRetriever, scenario_docs

pytest.importorskip("opentelemetry.sdk")
from opentelemetry.trace import StatusCode

pytestmark = pytest.mark.integration

ANSWERABLE = "How long did Mara Holt keep the lamp?"
UNANSWERABLE = "When was Mara Holt born?"
LC_ROUTE = [
    "selfroute.retrieve",
    "selfroute.rag",
    "selfroute.load_long_context",
    "selfroute.long_context",
]
RAG_ROUTE = ["selfroute.retrieve", "selfroute.rag", "selfroute.load_long_context"]


def by_question(prompt: str) -> str:
    return "Thirty-one years." if "keep the lamp" in prompt else "unanswerable"


def build(openai: Provider, tracing: Any, **kw: Any) -> SelfRoute:
    openai.script(scripted(by_question))
    return SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        llm=openai.llm(),
        document=DOCUMENT,
        tracing=tracing,
        **kw,
    )


def names(recorder: SpanRecorder, root: Any) -> list[str]:
    return [n for n, _ in recorder.shape(root)]


def check_lc_routed(recorder: SpanRecorder, root: Any) -> None:
    assert names(recorder, root) == LC_ROUTE
    a = root.attributes
    assert (a["selfroute.route"], a["selfroute.reason"]) == ("long_context", "declined")
    assert a["output.value"] == "In 1901." and a["input.value"] == UNANSWERABLE
    rag = recorder.child(root, "selfroute.rag").attributes
    assert rag["openinference.span.kind"] == "LLM" and rag["selfroute.verdict"] == "sentinel"
    assert rag["llm.model_name"] == RAG_MODEL and rag["llm.token_count.prompt"] == 120
    lc = recorder.child(root, "selfroute.long_context").attributes
    assert lc["llm.token_count.completion"] == LC_USAGE.output_tokens
    assert lc["output.value"] == "In 1901."
    total = RAG_USAGE.total_tokens + LC_USAGE.total_tokens
    assert a["selfroute.tokens.total"] == total


def check_rag_routed(recorder: SpanRecorder, root: Any) -> None:
    assert names(recorder, root) == RAG_ROUTE
    a = root.attributes
    assert (a["selfroute.route"], a["selfroute.verdict"]) == ("rag", "answered")
    assert a["output.value"] == "Thirty-one years." and a["selfroute.token_ratio"] < 1
    docs = recorder.child(root, "selfroute.retrieve").attributes
    assert docs["retrieval.documents.0.document.id"] == "doc-1"
    assert "Mara Holt" in docs["retrieval.documents.0.document.content"]


def test_invoke_rag_routed(openai: Provider, recorder: SpanRecorder) -> None:
    out = build(openai, recorder.provider).invoke(ANSWERABLE)
    assert out.route is sr.Route.RAG
    check_rag_routed(recorder, recorder.root())


def test_ainvoke_lc_routed(openai: Provider, recorder: SpanRecorder) -> None:
    route = build(openai, recorder.provider)
    assert asyncio.run(route.ainvoke(UNANSWERABLE)).answer == "In 1901."
    check_lc_routed(recorder, recorder.root())


def test_stream_and_astream_lc_routed(openai: Provider, recorder: SpanRecorder) -> None:
    route = build(openai, recorder.provider)
    text = "".join(c.get("answer", "") for c in route.stream(UNANSWERABLE))
    assert text == "In 1901."
    check_lc_routed(recorder, recorder.root())
    recorder.clear()

    async def collect() -> str:
        return "".join([c.get("answer", "") async for c in route.astream(UNANSWERABLE)])

    assert asyncio.run(collect()) == "In 1901."
    check_lc_routed(recorder, recorder.root())


@pytest.mark.parametrize("use_async", [False, True], ids=["batch", "abatch"])
def test_batch_gives_one_trace_per_question(
    openai: Provider, recorder: SpanRecorder, use_async: bool
) -> None:
    route = build(openai, recorder.provider)
    questions = [ANSWERABLE, UNANSWERABLE]
    outs = asyncio.run(route.abatch(questions)) if use_async else route.batch(questions)
    assert [o.route for o in outs] == [sr.Route.RAG, sr.Route.LONG_CONTEXT]
    roots = {r.attributes["input.value"]: r for r in recorder.roots()}
    assert set(roots) == set(questions)
    check_rag_routed(recorder, roots[ANSWERABLE])
    check_lc_routed(recorder, roots[UNANSWERABLE])
    assert roots[ANSWERABLE].context.trace_id != roots[UNANSWERABLE].context.trace_id


@pytest.mark.parametrize("call", ["invoke", "stream"])
def test_long_context_provider_down_is_recorded(
    openai: Provider, recorder: SpanRecorder, call: str
) -> None:
    route = build(openai, recorder.provider)

    def responder(body: dict[str, Any]) -> Reply:
        if RAG_MARK in last_user_text(body):
            return Reply("unanswerable", prompt_tokens=120, completion_tokens=1)
        return Reply(status=503)

    openai.script(responder)
    with pytest.raises(sr.LongContextError):
        if call == "invoke":
            route.invoke(UNANSWERABLE)
        else:
            list(route.stream(UNANSWERABLE))
    root = recorder.root()
    assert root.status.status_code is StatusCode.ERROR
    assert [e.name for e in root.events] == ["exception"]
    lc = recorder.child(root, "selfroute.long_context")
    assert lc.status.status_code is StatusCode.ERROR
    assert lc.events[0].attributes["exception.type"].endswith("InternalServerError") or (
        "503" in lc.events[0].attributes["exception.message"]
    )
    assert recorder.child(root, "selfroute.rag").attributes["selfroute.verdict"] == "sentinel"


class Collector(BaseTracer):
    def __init__(self) -> None:
        super().__init__()
        self.roots: list[Run] = []

    def _persist_run(self, run: Run) -> None:
        self.roots.append(run)


def test_langsmith_runs_keep_their_tags_and_metadata(
    openai: Provider, recorder: SpanRecorder
) -> None:
    route = build(openai, recorder.provider).with_config(
        run_name="qa", tags=["app"], metadata={"tenant": "acme"}
    )
    runs = Collector()
    route.invoke(UNANSWERABLE, {"callbacks": [runs]})
    (run,) = runs.roots
    assert run.name == "qa"
    assert [(c.name, sorted(c.tags or [])) for c in run.child_runs] == [
        ("ListRetriever", ["app", TAG_RETRIEVE]),
        (TAG_RAG, ["app", "nostream", TAG_RAG]),
        (TAG_LONG_CONTEXT, ["app", TAG_LONG_CONTEXT]),
    ]
    assert all(c.extra["metadata"]["tenant"] == "acme" for c in run.child_runs)
    check_lc_routed(recorder, recorder.root())


def test_nothing_is_emitted_when_tracing_is_off(
    openai: Provider, global_provider: SpanRecorder
) -> None:
    route = build(openai, False)
    route.invoke(ANSWERABLE)
    list(route.stream(UNANSWERABLE))
    route.batch([ANSWERABLE, UNANSWERABLE])
    asyncio.run(route.ainvoke(UNANSWERABLE))
    assert global_provider.spans() == []


def test_tracing_true_uses_the_global_provider(
    openai: Provider, global_provider: SpanRecorder
) -> None:
    build(openai, True).invoke(ANSWERABLE)
    check_rag_routed(global_provider, global_provider.root())
