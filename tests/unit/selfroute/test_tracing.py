"""OpenTelemetry spans of the core's drivers (OpenInference conventions), collected in memory."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

import selfroute as sr
import selfroute.flow as srflow
from tests.support.spans import SpanRecorder
from tests.unit.selfroute._scripted import DOCUMENT, LC_USAGE, RAG_USAGE, Scripted, WordCounter

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.trace import StatusCode

Q = "Who kept the lamp?"
PRICES = sr.PriceTable({"rag-model": (1.0, 2.0), "lc-model": (10.0, 20.0)})


def _config(recorder: SpanRecorder, **kw: object) -> sr.RouteConfig:
    return sr.RouteConfig(tracing=recorder.provider, token_counter=WordCounter(), **kw)  # type: ignore[arg-type]


def _run(
    script: Scripted, recorder: SpanRecorder, question: str = Q, **kw: object
) -> sr.RouteResult:
    return srflow.run_flow(srflow.self_route_flow(question, _config(recorder, **kw)), script)


def _events(span: object) -> list[str]:
    return [e.name for e in span.events]  # type: ignore[attr-defined]


def test_rag_routed_question_is_one_chain_span_with_retriever_and_llm_children(
    recorder: SpanRecorder,
) -> None:
    result = _run(Scripted(), recorder, prices=PRICES)
    root = recorder.root()
    assert root.parent is None and root.status.status_code is StatusCode.OK
    assert recorder.shape(root) == [
        ("selfroute.retrieve", "RETRIEVER"),
        ("selfroute.rag", "LLM"),
        ("selfroute.load_long_context", "CHAIN"),  # the always-LC counterfactual is counted
    ]
    assert len(recorder.spans()) == 4
    a = root.attributes
    assert a["openinference.span.kind"] == "CHAIN"
    assert (a["input.value"], a["input.mime_type"]) == (Q, "text/plain")
    assert a["output.value"] == "Thirty-one years." == result.answer
    assert (a["selfroute.route"], a["selfroute.reason"]) == ("rag", "answered")
    assert a["selfroute.verdict"] == "answered"
    assert a["selfroute.k"] == 5 and a["selfroute.k_used"] == 2
    assert a["selfroute.tokens.rag"] == RAG_USAGE.total_tokens == a["selfroute.tokens.total"]
    assert a["selfroute.tokens.long_context"] == 0
    assert a["selfroute.always_lc_tokens"] == result.long_context_tokens > 0
    assert a["selfroute.token_ratio"] == pytest.approx(result.token_ratio)
    assert a["selfroute.cost"] == pytest.approx(result.cost)
    assert a["selfroute.always_lc_cost"] == pytest.approx(result.long_context_cost)

    retrieve = recorder.child(root, "selfroute.retrieve")
    r = retrieve.attributes
    assert r["input.value"] == Q and r["selfroute.retrieved"] == 2
    assert r["retrieval.documents.0.document.content"].startswith("The lighthouse keeper")
    assert r["retrieval.documents.0.document.id"] == "doc-1"
    assert r["retrieval.documents.1.document.score"] == 0.5

    rag = recorder.child(root, "selfroute.rag").attributes
    assert rag["llm.model_name"] == "rag-model"
    assert (rag["llm.token_count.prompt"], rag["llm.token_count.completion"]) == (120, 6)
    assert rag["llm.token_count.total"] == 126 and rag["selfroute.tokens.source"] == "provider"
    assert rag["selfroute.verdict"] == "answered" and rag["selfroute.k"] == 2
    assert "retrieved from a longer document" in rag["input.value"]
    assert rag["llm.input_messages.0.message.role"] == "user"
    assert rag["llm.output_messages.0.message.content"] == "Thirty-one years."
    assert rag["output.value"] == "Thirty-one years."
    assert rag["llm.cost.total"] == pytest.approx(
        result.steps[0].usage.input_tokens * 1e-6 + 6 * 2e-6
    )
    load = recorder.child(root, "selfroute.load_long_context").attributes
    assert load["selfroute.purpose"] == "counterfactual" and load["selfroute.documents"] == 1
    assert {s.context.trace_id for s in recorder.spans()} == {root.context.trace_id}


def test_long_context_routed_question_has_both_model_calls(recorder: SpanRecorder) -> None:
    result = _run(Scripted(rag="unanswerable"), recorder)
    root = recorder.root()
    assert recorder.shape(root) == [
        ("selfroute.retrieve", "RETRIEVER"),
        ("selfroute.rag", "LLM"),
        ("selfroute.load_long_context", "CHAIN"),
        ("selfroute.long_context", "LLM"),
    ]
    a = root.attributes
    assert (a["selfroute.route"], a["selfroute.reason"]) == ("long_context", "declined")
    assert a["selfroute.verdict"] == "sentinel" and a["output.value"] == "In 1901."
    assert a["selfroute.tokens.long_context"] == LC_USAGE.total_tokens
    assert a["selfroute.tokens.total"] == result.usage.total_tokens
    assert "selfroute.cost" not in a  # no price table: no money
    rag = recorder.child(root, "selfroute.rag").attributes
    assert rag["selfroute.verdict"] == "sentinel" and rag["output.value"] == "unanswerable"
    lc = recorder.child(root, "selfroute.long_context").attributes
    assert lc["llm.model_name"] == "lc-model" and lc["llm.token_count.prompt"] == 1500
    assert lc["selfroute.stage"] == "long_context" and DOCUMENT[:40] in lc["input.value"]
    assert load_purpose(recorder, root) == "answer"


def load_purpose(recorder: SpanRecorder, root: object) -> str:
    return str(recorder.child(root, "selfroute.load_long_context").attributes["selfroute.purpose"])


def test_tokens_counted_locally_are_on_the_span(recorder: SpanRecorder) -> None:
    """A provider that reports no usage: the span carries the flow's local count, labelled."""
    result = _run(Scripted(rag_usage=None), recorder)
    rag = recorder.child(recorder.root(), "selfroute.rag").attributes
    assert rag["llm.token_count.prompt"] == result.steps[0].usage.input_tokens > 0
    assert rag["selfroute.tokens.source"] == "tokenizer"


def test_each_k_ladder_rung_is_its_own_llm_span(recorder: SpanRecorder) -> None:
    script = Scripted(
        rag_outputs=["unanswerable", "Thirty-one years."],
        passages=[f"Passage {i} about the lamp." for i in range(4)],
    )
    _run(script, recorder, k=2, k_ladder=(4,))
    root = recorder.root()
    rungs = [s for s in recorder.children(root) if s.name == "selfroute.rag"]
    assert [(s.attributes["selfroute.k"], s.attributes["selfroute.verdict"]) for s in rungs] == [
        (2, "sentinel"),
        (4, "answered"),
    ]
    assert root.attributes["selfroute.k_ladder"] == (4,)
    assert root.attributes["selfroute.k_used"] == 4


def test_escalated_rag_failure_is_an_error_span_under_an_ok_question(
    recorder: SpanRecorder,
) -> None:
    _run(
        Scripted(rag_error=ConnectionError("rag provider down key=sk-abcdefghijklmnop1234")),
        recorder,
    )
    root = recorder.root()
    assert root.status.status_code is StatusCode.OK
    assert root.attributes["selfroute.reason"] == "rag_error"
    rag = recorder.child(root, "selfroute.rag")
    assert rag.status.status_code is StatusCode.ERROR
    (event,) = rag.events
    assert event.name == "exception"
    assert event.attributes["exception.type"] == "ConnectionError"
    assert "rag provider down" in event.attributes["exception.message"]
    assert "sk-abcdefghijklmnop1234" not in json.dumps(dict(event.attributes))  # redacted
    assert "sk-abcdefghijklmnop1234" not in (rag.status.description or "")
    assert recorder.child(root, "selfroute.long_context").status.status_code is StatusCode.UNSET


def test_failed_call_records_the_error_on_the_question_span(recorder: SpanRecorder) -> None:
    with pytest.raises(sr.LongContextError):
        _run(Scripted(rag="unanswerable", lc_error=TimeoutError("lc down")), recorder)
    root = recorder.root()
    assert root.status.status_code is StatusCode.ERROR
    assert _events(root) == ["exception"]
    assert root.events[0].attributes["exception.type"].endswith("LongContextError")
    # the partial result's facts are kept; the RAG span has its verdict
    assert root.attributes["selfroute.verdict"] == "sentinel"
    assert "output.value" not in root.attributes
    lc = recorder.child(root, "selfroute.long_context")
    assert lc.status.status_code is StatusCode.ERROR and _events(lc) == ["exception"]
    rag = recorder.child(root, "selfroute.rag")
    assert rag.attributes["selfroute.verdict"] == "sentinel" and rag.end_time <= lc.start_time


def test_invalid_question_is_an_error_span_with_no_children(recorder: SpanRecorder) -> None:
    with pytest.raises(sr.InvalidInputError):
        _run(Scripted(), recorder, question="   ")
    root = recorder.root()
    assert root.status.status_code is StatusCode.ERROR and recorder.children(root) == []


def test_retrieval_failure_without_long_context_raises_with_error_spans(
    recorder: SpanRecorder,
) -> None:
    with pytest.raises(sr.RetrievalError):
        _run(Scripted(retrieve_error=OSError("store down"), document=None), recorder)
    root = recorder.root()
    assert root.status.status_code is StatusCode.ERROR
    assert recorder.child(root, "selfroute.retrieve").status.status_code is StatusCode.ERROR


def test_async_driver_gives_the_same_spans(recorder: SpanRecorder) -> None:
    flow = srflow.self_route_flow(Q, _config(recorder))
    asyncio.run(srflow.arun_flow(flow, Scripted(rag="unanswerable")))
    root = recorder.root()
    assert [n for n, _ in recorder.shape(root)] == [
        "selfroute.retrieve",
        "selfroute.rag",
        "selfroute.load_long_context",
        "selfroute.long_context",
    ]
    assert root.attributes["selfroute.route"] == "long_context"


@pytest.mark.parametrize("use_async", [False, True])
def test_streamed_question_gives_the_same_spans(recorder: SpanRecorder, use_async: bool) -> None:
    script = Scripted(rag="unanswerable", lc_chunks=["In ", "1901."])
    flow = srflow.self_route_flow(Q, _config(recorder))
    if use_async:

        async def collect() -> list[srflow.FlowEvent]:
            return [ev async for ev in srflow.adrive(flow, script, stream=True)]

        events = asyncio.run(collect())
    else:
        events = list(srflow.drive(flow, script, stream=True))
    assert "".join(e.text for e in events if isinstance(e, srflow.TokenEvent)) == "In 1901."
    root = recorder.root()
    lc = recorder.child(root, "selfroute.long_context").attributes
    assert lc["output.value"] == "In 1901." and lc["llm.token_count.completion"] == 9
    assert root.attributes["output.value"] == "In 1901."


def test_the_step_span_is_current_while_the_handler_runs_and_only_then(
    recorder: SpanRecorder,
) -> None:
    """Spans of instrumented clients nest under the step; the consumer of a stream never sees
    selfroute's spans as current between chunks."""
    seen: dict[str, str] = {}

    class Watching(Scripted):
        def retrieve(self, step: srflow.Retrieve) -> object:
            seen["retrieve"] = trace.get_current_span().name  # type: ignore[attr-defined]
            return super().retrieve(step)

        def stream(self, step: srflow.Generate):  # type: ignore[no-untyped-def]
            for chunk in super().stream(step):
                seen[step.stage.value] = trace.get_current_span().name  # type: ignore[attr-defined]
                yield chunk

    outside = []
    flow = srflow.self_route_flow(Q, _config(recorder))
    for _ in srflow.drive(
        flow, Watching(rag="unanswerable", lc_chunks=["In ", "1901."]), stream=True
    ):
        outside.append(trace.get_current_span())
    assert seen == {
        "retrieve": "selfroute.retrieve",
        "rag": "selfroute.rag",
        "long_context": "selfroute.long_context",
    }
    assert all(not s.get_span_context().is_valid for s in outside)


def test_caller_span_is_the_parent(recorder: SpanRecorder) -> None:
    tracer = recorder.provider.get_tracer("app")
    with tracer.start_as_current_span("request") as request:
        _run(Scripted(), recorder)
    root = recorder.root()
    assert root.parent is not None and root.parent.span_id == request.get_span_context().span_id


def test_abandoned_stream_ends_every_span(recorder: SpanRecorder) -> None:
    flow = srflow.self_route_flow(Q, _config(recorder))
    events = srflow.drive(
        flow, Scripted(rag="unanswerable", lc_chunks=["In ", "1901."]), stream=True
    )
    for ev in events:
        if isinstance(ev, srflow.TokenEvent):
            break
    events.close()  # type: ignore[attr-defined]
    root = recorder.root()
    assert root.attributes["selfroute.incomplete"] is True
    assert {s.name for s in recorder.children(root)} >= {"selfroute.rag", "selfroute.long_context"}


def test_speculative_call_is_a_wasted_llm_span_when_rag_answers(recorder: SpanRecorder) -> None:
    _run(Scripted(), recorder, speculate_below=10.0)
    root = recorder.root()
    lc = recorder.child(root, "selfroute.long_context").attributes
    assert lc["selfroute.speculative"] is True and lc["selfroute.wasted"] is True
    assert root.attributes["selfroute.route"] == "rag"


def test_global_tracer_provider_when_tracing_is_true(global_provider: SpanRecorder) -> None:
    config = sr.RouteConfig(tracing=True, token_counter=WordCounter())
    srflow.run_flow(srflow.self_route_flow(Q, config), Scripted())
    assert global_provider.root().attributes["selfroute.route"] == "rag"


def test_nothing_is_emitted_when_tracing_is_off(global_provider: SpanRecorder) -> None:
    script = Scripted(rag="unanswerable")
    srflow.run_flow(srflow.self_route_flow(Q, sr.RouteConfig(token_counter=WordCounter())), script)
    list(
        srflow.drive(srflow.self_route_flow(Q, sr.RouteConfig(tracing=False)), script, stream=True)
    )
    asyncio.run(srflow.arun_flow(srflow.self_route_flow(Q), script))
    assert global_provider.spans() == []


def test_off_never_imports_opentelemetry() -> None:
    code = textwrap.dedent(
        """
        import sys
        import selfroute as sr
        import selfroute.flow as srflow
        sr.self_route("Who kept the lamp?", "Mara Holt kept the lamp. " * 50, lambda p: "Mara Holt.")
        list(srflow.drive(srflow.self_route_flow("Who?"), sr.FunctionHandler(
            retrieve=lambda q, k: [], generate=lambda p: "x", long_context="doc"), stream=True))
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_setting_and_missing_package_are_configuration_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(sr.ConfigurationError, match="TracerProvider"):
        sr.RouteConfig(tracing="yes")
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed
    with pytest.raises(sr.ConfigurationError, match=r"selfroute\[tracing\]"):
        sr.RouteConfig(tracing=True)
    sr.RouteConfig(tracing=False)  # off needs nothing


def test_openinference_switches_hide_inputs_and_outputs(
    recorder: SpanRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUTS", "true")
    monkeypatch.setenv("OPENINFERENCE_HIDE_OUTPUTS", "1")
    _run(Scripted(rag="unanswerable"), recorder)
    keys = {k for s in recorder.spans() for k in s.attributes}
    assert not {k for k in keys if k.startswith(("input.", "output.", "llm.input_messages"))}
    assert not {k for k in keys if k.startswith("llm.output_messages") or "document.content" in k}
    # what is not content stays
    assert {"selfroute.route", "llm.token_count.total", "retrieval.documents.0.document.id"} <= keys


def test_only_the_messages_can_be_hidden(
    recorder: SpanRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENINFERENCE_HIDE_INPUT_MESSAGES", "true")
    monkeypatch.setenv("OPENINFERENCE_HIDE_OUTPUT_MESSAGES", "true")
    _run(Scripted(), recorder)
    rag = recorder.child(recorder.root(), "selfroute.rag").attributes
    assert "input.value" in rag and "output.value" in rag
    assert not [k for k in rag if k.startswith(("llm.input_messages", "llm.output_messages"))]


def test_a_failing_tracer_never_breaks_the_call(
    recorder: SpanRecorder, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def get_tracer(self, *args: object, **kwargs: object) -> object:
            real = recorder.provider.get_tracer("selfroute")

            class Tracer:
                def start_span(self, name: str, **kw: object) -> object:
                    if name != "SelfRoute":
                        raise RuntimeError("exporter on fire")
                    return real.start_span(name, **kw)  # type: ignore[arg-type]

            return Tracer()

    config = sr.RouteConfig(tracing=Broken(), token_counter=WordCounter())
    result = srflow.run_flow(srflow.self_route_flow(Q, config), Scripted(rag="unanswerable"))
    assert result.answer == "In 1901."
    assert "tracing failed in start" in caplog.text
    assert recorder.root().attributes["selfroute.route"] == "long_context"


def test_a_tracer_that_cannot_start_a_span_leaves_the_call_untraced(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Refusing:
        def get_tracer(self, *args: object, **kwargs: object) -> object:
            raise RuntimeError("no tracer today")

    config = sr.RouteConfig(tracing=Refusing(), token_counter=WordCounter())
    script = Scripted(rag="unanswerable", lc_chunks=["In ", "1901."])
    assert srflow.run_flow(srflow.self_route_flow(Q, config), script).answer == "In 1901."
    events = list(srflow.drive(srflow.self_route_flow(Q, config), script, stream=True))
    assert isinstance(events[-1], srflow.ResultEvent)
    assert "tracing failed to start" in caplog.text
