"""Batch faults with the real clients: expired and failed batches are retried per question,
requests lost too often escalate like failed calls, cancellation, a crash between creating a
batch and recording it, and providers without a batch API."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_selfroute import SelfRoute
from selfroute import ConfigurationError, GeminiBatchBackend, OpenAIBatchBackend
from tests.integration.batch.corpus import comparable, inputs, respond
from tests.integration.batch.corpus import online as run_online
from tests.support.clients import chat_google, chat_openai
from tests.support.gemini_batch_server import GeminiBatchServer
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_batch_server import OpenAIBatchServer
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> Any:
    with OpenAIBatchServer(respond) as srv:
        yield srv


def _route(srv: Any) -> SelfRoute:
    make = chat_google if isinstance(srv, ScriptedGeminiServer) else chat_openai
    big = "gemini-2.5-pro" if make is chat_google else "gpt-4o"
    return SelfRoute(llm=make(srv), long_context_llm=make(srv, model=big), k=2, chunk_words=60)


def _input_ids(srv: OpenAIBatchServer, batch_id: str) -> list[str]:
    return [line["custom_id"] for line in srv.job_requests[batch_id]]


def test_expired_batch_retries_only_the_requests_it_did_not_run(
    server: OpenAIBatchServer, tmp_path: Any
) -> None:
    items = inputs(12)
    route = _route(server)
    online = run_online(route, items)
    server.expire_next, server.expire_keep = 1, 5
    kinds: list[str] = []
    job = route.batch_job(
        items,
        job_file=tmp_path / "j.json",
        poll_interval_s=0.01,
        on_event=lambda e: kinds.append(e.kind),
    )
    outcomes = job.results()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    first, retry = server.created[0], server.created[1]
    assert server.batches[first]["status"] == "expired"
    # the lost requests join the next batch, beside the next phase of the questions that ran
    retried = [k for k in _input_ids(server, retry) if k.endswith("#0")]
    assert retried == _input_ids(server, first)[5:]
    assert "retrying" in kinds


def test_failed_batch_is_resubmitted_whole(server: OpenAIBatchServer) -> None:
    items = inputs(8)
    route = _route(server)
    online = run_online(route, items)
    server.fail_next = 1
    outcomes = route.batch_job(items, poll_interval_s=0.01).results()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    assert server.batches[server.created[0]]["status"] == "failed"
    assert _input_ids(server, server.created[1]) == _input_ids(server, server.created[0])


def test_requests_lost_in_every_batch_escalate_then_fail_never_dropped(
    server: OpenAIBatchServer,
) -> None:
    items = inputs(6)
    server.expire_next, server.expire_keep = 100, 0
    outcomes = _route(server).batch_job(items, poll_interval_s=0.01, max_attempts=2).results()
    assert [o.id for o in outcomes] == [i["id"] for i in items]
    # RAG lost twice -> a failed RAG call -> long context (as online) -> lost twice -> error
    assert all(not o.ok and "LongContextError" in (o.error or "") for o in outcomes)
    assert all(o.partial is not None and o.partial.reason.value == "rag_error" for o in outcomes)
    assert len(server.created) == 4


def test_gemini_expired_job_is_retried(tmp_path: Any) -> None:
    with GeminiBatchServer(respond) as srv:
        items = inputs(10)
        route = _route(srv)
        online = run_online(route, items)
        srv.expire_next, srv.expire_keep = 1, 4
        outcomes = route.batch_job(items, poll_interval_s=0.01).results()
        assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
        assert srv.jobs[srv.created[0]]["metadata"]["state"] == "BATCH_STATE_EXPIRED"
        retried = [  # one job per model: the lost RAG requests go in the next flash job
            r["metadata"]["key"]
            for job in srv.created[1:]
            for r in srv.job_requests[job]
            if r["model"] == "gemini-2.5-flash"
        ]
        assert retried == [f"q{n}#0" for n in range(4, 10)]


def test_cancel_stops_the_job_and_a_rerun_submits_nothing(
    server: OpenAIBatchServer, tmp_path: Any
) -> None:
    server.polls_per_state = 50  # stays in progress
    items = inputs(5)
    job = _route(server).batch_job(items, job_file=tmp_path / "j.json", poll_interval_s=0.01)
    assert job.status().waiting == 5
    job.cancel()
    batch = server.batches[server.created[0]]
    assert batch["status"] == "cancelling"
    outcomes = job.results()
    assert all(not o.ok and "cancelled" in (o.error or "") for o in outcomes)
    again = _route(server).batch_job(items, job_file=tmp_path / "j.json", poll_interval_s=0.01)
    assert again.status().cancelled
    assert [o.error for o in again.results()] == [o.error for o in outcomes]
    assert len(server.created) == 1


def test_a_create_call_that_fails_after_creating_is_not_paid_twice(
    server: OpenAIBatchServer, tmp_path: Any
) -> None:
    items = inputs(6)
    route = _route(server)
    online = run_online(route, items)

    def fail_after_creating(batch: dict[str, Any]) -> None:
        server.on_create = None
        raise RuntimeError("the client never hears of this batch")

    server.on_create = fail_after_creating  # the server answers 500 after creating the batch
    outcomes = route.batch_job(items, job_file=tmp_path / "j.json", poll_interval_s=0.01).results()
    assert len(server.created) == 2  # phase 1 found by its token (not created again) + phase 2
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online


def test_a_server_without_the_batch_api_gets_a_clear_error() -> None:
    with ScriptedOpenAIServer(respond) as srv:
        job = _route(srv).batch_job(inputs(2), poll_interval_s=0.01)
        with pytest.raises(ConfigurationError, match="does not implement the OpenAI Batch API"):
            job.status()
    with ScriptedGeminiServer(respond) as gsrv:
        backend = GeminiBatchBackend("gemini-2.5-flash", api_key="k", base_url=gsrv.base_url)
        job = _route(gsrv).batch_job(inputs(2), backend=backend, poll_interval_s=0.01)
        with pytest.raises(ConfigurationError, match="does not implement Gemini batch mode"):
            job.status()


def test_a_provider_without_a_batch_backend_is_named() -> None:
    from langchain_core.language_models import FakeListChatModel

    route = SelfRoute(llm=FakeListChatModel(responses=["x"]), document="some text", k=1)
    with pytest.raises(ConfigurationError, match="FakeListChatModel has no batch API backend"):
        route.batch_job(["q?"])
    with OpenAIBatchServer(respond) as srv:
        mixed = SelfRoute(
            llm=chat_openai(srv),
            long_context_llm=FakeListChatModel(responses=["x"]),
            document="some text",
        )
        with pytest.raises(ConfigurationError, match="different providers"):
            mixed.batch_job(["q?"])
        backend = OpenAIBatchBackend("gpt-4o-mini", base_url=srv.base_url, api_key="k")
        assert mixed.batch_job(["q?"], backend=backend).status().phase == 1
