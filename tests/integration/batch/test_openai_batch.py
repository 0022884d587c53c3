"""OpenAI Batch API through the real ``openai`` client against the Files+Batches loopback:
200 questions, both phases, the same results as the same flows run online."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from langchain_selfroute import SelfRoute
from selfroute import BatchJob, OpenAIBatchBackend, PriceTable, Reason, Route
from tests.integration.batch.corpus import comparable, inputs, respond
from tests.integration.batch.corpus import online as run_online
from tests.support.clients import chat_openai
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration

PRICES = PriceTable({"loopback-model": (1.0, 4.0)})


@pytest.fixture
def server() -> Any:
    with OpenAIBatchServer(respond) as srv:
        yield srv


def _route(srv: OpenAIBatchServer, **kw: Any) -> SelfRoute:
    settings: dict[str, Any] = {"k": 2, "chunk_words": 60, "prices": PRICES, **kw}
    return SelfRoute(
        llm=chat_openai(srv), long_context_llm=chat_openai(srv, model="gpt-4o"), **settings
    )


def test_200_questions_two_phases_matchonline(server: OpenAIBatchServer, tmp_path: Any) -> None:
    items = inputs()
    route = _route(server)
    online = run_online(route, items)
    assert server.created == []  # the online run made no batch

    events: list[str] = []
    job = route.batch_job(
        items,
        job_file=tmp_path / "job.json",
        poll_interval_s=0.01,
        on_event=lambda e: events.append(e.kind),
    )
    outcomes = job.results()
    assert len(server.created) == 2  # one batch per phase
    phase1 = [b for b in server.batch_bodies if b["model"] == "gpt-4o-mini"]
    phase2 = [b for b in server.batch_bodies if b["model"] == "gpt-4o"]
    assert len(phase1) == 200
    declined = [o for o in outcomes if o.result and o.result.route is Route.LONG_CONTEXT]
    assert len(phase2) == len(declined) > 50
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    assert all(o.ok for o in outcomes)
    reasons = {o.result.reason for o in outcomes if o.result}
    assert {Reason.ANSWERED, Reason.DECLINED, Reason.RAG_ERROR, Reason.TRUNCATED} <= reasons
    assert any(o.result.abstained for o in outcomes if o.result)
    for o in outcomes:
        assert o.result is not None and all(s.batch for s in o.result.steps)
        online_cost = sum(PRICES.cost(s.model, s.usage) or 0 for s in o.result.steps)
        assert o.result.cost == pytest.approx(online_cost * 0.5)
    assert events.count("submitted") == 2 and events[-1] == "finished"


async def test_async_handle_matchesonline(server: OpenAIBatchServer) -> None:
    items = inputs(30)
    route = _route(server)
    online = run_online(route, items)
    job = route.batch_job(items, poll_interval_s=0.01)
    status = await job.astatus()
    assert status.phase == 1 and status.waiting == 30 and not status.finished
    outcomes = await job.aresults()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    assert (await job.astatus()).finished


def test_policies_run_unchanged_k_ladder_and_budget(server: OpenAIBatchServer) -> None:
    from selfroute import LongContextBudget

    items = inputs(25)
    route = _route(server, k=1, k_ladder=(3,))
    online = run_online(route, items)
    job = route.batch_job(items, poll_interval_s=0.01)
    outcomes = job.results()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    assert len(server.created) == 3  # rung 1, rung 2, long context
    rungs = {s.k for o in outcomes if o.result for s in o.result.steps if s.k is not None}
    assert rungs == {1, 3}

    server.created.clear()
    budget_route = _route(server, budget=LongContextBudget(max_calls=3))
    outcomes = budget_route.batch_job(items, poll_interval_s=0.01).results()
    over = [o for o in outcomes if o.result and o.result.reason is Reason.OVER_BUDGET]
    lc = [o for o in outcomes if o.result and o.result.route is Route.LONG_CONTEXT]
    assert len(lc) == 3 and over


def test_structured_verdicts_in_a_batch_matchonline(server: OpenAIBatchServer) -> None:
    items = inputs(20)
    route = _route(server, verdict="structured")
    online = run_online(route, items)
    outcomes = route.batch_job(items, poll_interval_s=0.01).results()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    sent = [b for b in server.batch_bodies if b["model"] == "gpt-4o-mini"]
    assert all(b["response_format"]["type"] == "json_schema" for b in sent)
    assert any(o.result and o.result.steps[0].structured for o in outcomes)


def test_core_job_with_a_backend_built_from_clients(server: OpenAIBatchServer) -> None:
    import openai

    route = _route(server)
    items = inputs(10)
    backend = OpenAIBatchBackend(
        "gpt-4o-mini",
        long_context_model="gpt-4o",
        client=openai.OpenAI(base_url=server.base_url, api_key="k"),
        async_client=openai.AsyncOpenAI(base_url=server.base_url, api_key="k"),
    )
    job = route.batch_job(items, backend=backend, poll_interval_s=0.01)
    assert isinstance(job, BatchJob)
    sync = [comparable(o.result) for o in job.results()]
    again = route.batch_job(items, backend=backend, poll_interval_s=0.01)
    assert [comparable(o.result) for o in asyncio.run(again.aresults())] == sync
