"""OpenTelemetry spans of batch jobs: each question's span tree is the one an online call makes,
marked ``selfroute.batch``, emitted once when the question's result is known."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from selfroute import BatchJob, LocalBatchBackend, PriceTable, Route, RouteConfig
from selfroute.flow import run_flow, self_route_flow
from tests.support.spans import SpanRecorder
from tests.unit.selfroute.batch.test_driver import QUESTIONS, handler, model

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.trace import StatusCode

#: Root attributes that differ between a batch job and an online call (batch prices, the mark).
_BATCH_ONLY = {"selfroute.batch", "selfroute.cost", "selfroute.always_lc_cost"}


def _backend(polls: int = 1) -> LocalBatchBackend:
    return LocalBatchBackend(lambda r: model(r.step.prompt), polls_to_finish=polls)


def _job(recorder: SpanRecorder | None, backend: Any, **kw: Any) -> BatchJob:
    tracing = recorder.provider if recorder is not None else False
    config = RouteConfig(k=2, tracing=tracing)
    return BatchJob(
        QUESTIONS, handler=handler(), backend=backend, config=config, poll_interval_s=0, **kw
    )


def _trees(recorder: SpanRecorder) -> dict[str, tuple[dict[str, Any], list[tuple[str, str]]]]:
    """Question -> (root attributes without the batch-only ones, children's names and kinds)."""
    out = {}
    for root in recorder.roots():
        attributes = {k: v for k, v in root.attributes.items() if k not in _BATCH_ONLY}
        out[root.attributes["input.value"]] = (attributes, recorder.shape(root))
    return out


def _online_trees() -> dict[str, tuple[dict[str, Any], list[tuple[str, str]]]]:
    online = SpanRecorder()
    for q in QUESTIONS:
        run_flow(self_route_flow(q, RouteConfig(k=2, tracing=online.provider)), handler())
    return _trees(online)


def _assert_complete(recorder: SpanRecorder) -> None:
    """One trace per question, the same tree as online, every span marked, children inside."""
    roots = recorder.roots()
    assert len(roots) == len(QUESTIONS)
    assert len({r.context.trace_id for r in roots}) == len(QUESTIONS)
    assert _trees(recorder) == _online_trees()
    for span in recorder.spans():
        assert span.attributes["selfroute.batch"] is True, span.name
    for root in roots:
        assert root.status.status_code is StatusCode.OK
        for child in recorder.children(root):
            assert root.start_time <= child.start_time <= child.end_time <= root.end_time
    assert len(recorder.spans()) == sum(1 + len(recorder.children(r)) for r in roots)


def test_rag_and_long_context_questions_of_one_job_get_the_online_span_tree(
    recorder: SpanRecorder,
) -> None:
    outcomes = _job(recorder, _backend()).results()
    routes = {o.result.route for o in outcomes if o.result}
    assert routes == {Route.RAG, Route.LONG_CONTEXT}  # both kinds in the one job
    _assert_complete(recorder)
    by_question = {r.attributes["input.value"]: r for r in recorder.roots()}
    for o in outcomes:
        assert o.result is not None
        root = by_question[o.question]
        names = [n for n, _ in recorder.shape(root)]
        assert root.attributes["selfroute.route"] == o.result.route.value
        assert ("selfroute.long_context" in names) is (o.result.route is Route.LONG_CONTEXT)
        rag = recorder.child(root, "selfroute.rag")
        assert rag.attributes["llm.model_name"] == o.result.steps[0].model
        assert rag.attributes["output.value"] == o.result.steps[0].output


def test_nothing_is_emitted_before_a_question_is_answered(recorder: SpanRecorder) -> None:
    job = _job(recorder, _backend(polls=3))
    assert job.status().phase == 1  # retrieval ran, the RAG prompts wait on a batch
    assert recorder.spans() == []
    job.wait()
    _assert_complete(recorder)


def test_a_resumed_job_emits_each_question_once_and_a_rerun_nothing(
    recorder: SpanRecorder, tmp_path: Path
) -> None:
    path = tmp_path / "job.json"
    backend = _backend(polls=3)
    first = _job(recorder, backend, job_file=path)
    assert first.status().phase == 1
    first.close()  # the process stops here; its spans are never emitted
    assert recorder.spans() == []
    resumed = _job(recorder, backend, job_file=path)
    resumed.wait()
    resumed.close()
    _assert_complete(recorder)
    recorder.clear()
    again = _job(recorder, backend, job_file=path)
    assert len(again.results()) == len(QUESTIONS)  # answered from the job file
    again.close()
    assert recorder.spans() == []


def test_a_failed_request_is_an_error_span(recorder: SpanRecorder) -> None:
    def flaky(request: Any) -> str:
        if "guard 3?" in request.step.prompt and request.stage.value == "rag":
            raise RuntimeError("server_error: overloaded")
        return model(request.step.prompt)

    job = BatchJob(
        QUESTIONS[3:4],
        handler=handler(),
        backend=LocalBatchBackend(flaky),
        config=RouteConfig(k=2, tracing=recorder.provider),
        poll_interval_s=0,
    )
    (outcome,) = job.results()
    assert outcome.result is not None and outcome.result.route is Route.LONG_CONTEXT
    root = recorder.root()
    rag = recorder.child(root, "selfroute.rag")
    assert rag.status.status_code is StatusCode.ERROR
    assert "batch request failed" in rag.status.description
    assert recorder.child(root, "selfroute.long_context").status.status_code is StatusCode.UNSET


def test_costs_are_at_the_batch_rate(recorder: SpanRecorder) -> None:
    prices = PriceTable({"local": (1.0, 4.0)})
    config = RouteConfig(k=2, prices=prices, tracing=recorder.provider)
    outcomes = BatchJob(
        QUESTIONS, handler=handler(), backend=_backend(), config=config, poll_interval_s=0
    ).results()
    by_question = {r.attributes["input.value"]: r for r in recorder.roots()}
    for o in outcomes:
        assert o.result is not None and o.result.cost
        root = by_question[o.question]
        assert root.attributes["selfroute.cost"] == pytest.approx(o.result.cost)
        calls = [c for c in recorder.children(root) if c.name != "selfroute.retrieve"]
        costs = [c.attributes.get("llm.cost.total", 0.0) for c in calls]
        assert sum(costs) == pytest.approx(o.result.cost)  # half the online price


def test_off_emits_nothing(global_provider: SpanRecorder) -> None:
    assert len(_job(None, _backend()).results()) == len(QUESTIONS)
    assert global_provider.spans() == []
    config = RouteConfig(k=2, tracing=True)  # the global provider, which the test replaces
    BatchJob(
        QUESTIONS[:2], handler=handler(), backend=_backend(), config=config, poll_interval_s=0
    ).results()
    assert len(global_provider.roots()) == 2


def test_openai_batch_api_job_is_traced(recorder: SpanRecorder) -> None:
    """Through the real ``openai`` client against the Files+Batches loopback."""
    from selfroute import OpenAIBatchBackend
    from tests.support.openai_batch_server import OpenAIBatchServer

    def respond(body: dict[str, Any]) -> str:
        return model(body["messages"][-1]["content"])

    with OpenAIBatchServer(respond) as srv:
        backend = OpenAIBatchBackend("gpt-4o-mini", base_url=srv.base_url, api_key="k")
        outcomes = _job(recorder, backend).results()
    online = _online_trees()
    roots = recorder.roots()
    assert len(roots) == len(QUESTIONS) == len(outcomes)
    for root in roots:
        question = root.attributes["input.value"]
        assert recorder.shape(root) == online[question][1]
        assert root.attributes["selfroute.route"] == online[question][0]["selfroute.route"]
        rag = recorder.child(root, "selfroute.rag")
        assert rag.attributes["llm.model_name"] == "loopback-model"  # what the server replied
        assert rag.attributes["llm.token_count.total"] > 0
        assert rag.attributes["selfroute.batch"] is True
