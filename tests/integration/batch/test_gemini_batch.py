"""Gemini batch mode through the real ``google-genai`` client against the batch loopback:
200 questions, both phases, the same results as the same flows run online."""

from __future__ import annotations

from typing import Any

import pytest

from langchain_selfroute import SelfRoute
from selfroute import Reason, Route
from tests.integration.batch.corpus import comparable, inputs, respond
from tests.integration.batch.corpus import online as run_online
from tests.support.clients import chat_google
from tests.support.gemini_batch_server import GeminiBatchServer

pytestmark = pytest.mark.integration


@pytest.fixture
def server() -> Any:
    with GeminiBatchServer(respond) as srv:
        yield srv


def _route(srv: GeminiBatchServer, **kw: Any) -> SelfRoute:
    settings: dict[str, Any] = {"k": 2, "chunk_words": 60, **kw}
    return SelfRoute(
        llm=chat_google(srv),
        long_context_llm=chat_google(srv, model="gemini-2.5-pro"),
        **settings,
    )


def test_200_questions_two_phases_matchonline(server: GeminiBatchServer, tmp_path: Any) -> None:
    items = inputs()
    route = _route(server)
    online = run_online(route, items)
    job = route.batch_job(items, job_file=tmp_path / "job.json", poll_interval_s=0.01)
    outcomes = job.results()
    assert len(server.created) == 2  # phase 1 (flash), phase 2 (pro): one job each
    models = [server.jobs[i]["metadata"]["model"] for i in server.created]
    assert models == ["models/gemini-2.5-flash", "models/gemini-2.5-pro"]
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    assert sum(o.result.route is Route.LONG_CONTEXT for o in outcomes if o.result) > 50
    assert any(o.result.reason is Reason.TRUNCATED for o in outcomes if o.result)


async def test_async_and_structured_matchonline(server: GeminiBatchServer) -> None:
    items = inputs(20)
    route = _route(server, verdict="structured")
    online = run_online(route, items)
    outcomes = await route.batch_job(items, poll_interval_s=0.01).aresults()
    assert {o.id: comparable(o.result) for o in outcomes if o.result} == online
    rag = [b for b in server.batch_bodies if "responseJsonSchema" in b.get("generationConfig", {})]
    assert len(rag) == 20
