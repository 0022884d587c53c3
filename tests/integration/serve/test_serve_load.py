"""``selfroute serve`` under load: 64 concurrent clients mixing MCP (streamable HTTP) and the
OpenAI API over two tenants get the answers sequential calls get, with no cross-talk; a SIGTERM
in the middle of a load loses no request it accepted."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cli.scripted import NOT_THERE, OIL, PACKETS
from tests.integration.serve.conftest import Served
from tests.support.openai_server import ScriptedOpenAIServer

pytest.importorskip("mcp")

from tests.integration.serve.mcp_http import mcp_ask

KEYS = {"sk-load-oil-00000000": "oil", "sk-load-packets-0000": "packets"}
QUESTIONS = (OIL.question, PACKETS.question, NOT_THERE)


@pytest.fixture(scope="module")
def served(
    store: Path, module_reader: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps({k: {"collection": c} for k, c in KEYS.items()}))
    server = Served(store, module_reader, "--keys", str(keys), "--max-concurrency", "64")
    yield server
    server.close()


def outcome(data: dict[str, Any]) -> tuple[Any, ...]:
    """What must not change between sequential and concurrent calls (or between tenants)."""
    docs = tuple(sorted({s["document"].rsplit("/", 1)[-1] for s in data["sources"]}))
    return (data["collection"], data["route"], data["reason"], data["abstained"], docs)


async def over_v1(http: httpx.AsyncClient, url: str, key: str, question: str) -> tuple[Any, ...]:
    reply = await http.post(
        f"{url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": "selfroute", "messages": [{"role": "user", "content": question}]},
    )
    assert reply.status_code == 200, reply.text
    body = reply.json()
    return (body["choices"][0]["message"]["content"], *outcome(body["selfroute"]))


async def over_mcp(url: str, key: str, question: str) -> tuple[Any, ...]:
    data = await mcp_ask(url, question, key)
    return (data["answer"], *outcome(data))


def jobs() -> list[tuple[str, str, str]]:
    """64 (protocol, key, question), every combination several times."""
    combos = [(p, k, q) for p in ("v1", "mcp") for k in KEYS for q in QUESTIONS]
    return [combos[i % len(combos)] for i in range(64)]


async def run(url: str, job: tuple[str, str, str], http: httpx.AsyncClient) -> tuple[Any, ...]:
    protocol, key, question = job
    if protocol == "v1":
        return await over_v1(http, url, key, question)
    return await over_mcp(url, key, question)


async def test_64_concurrent_mixed_clients_match_sequential(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    model.latency_s = 0.2
    async with httpx.AsyncClient(timeout=120) as http:
        combos = sorted(set(jobs()))
        sequential = {job: await run(served.url, job, http) for job in combos}
        for (_, key, _), got in sequential.items():
            assert got[1] == KEYS[key]  # the tenant's own collection
        model.reset()
        concurrent = await asyncio.gather(*(run(served.url, job, http) for job in jobs()))
    for job, got in zip(jobs(), concurrent, strict=True):
        assert got == sequential[job], job
    assert model.max_in_flight > 8  # the calls really overlapped
    for request in model.requests:  # no cross-talk: packets' prompts never hold the oil article
        prompt = request["messages"][-1]["content"]
        assert not (OIL.evidence in prompt and PACKETS.evidence in prompt)


async def test_sigterm_during_load_loses_no_accepted_request(
    store: Path, model: ScriptedOpenAIServer
) -> None:
    model.latency_s = 1.0
    served = Served(store, model, "--max-concurrency", "64")
    results: list[Any] = []

    async def one(http: httpx.AsyncClient, delay: float) -> None:
        await asyncio.sleep(delay)
        try:
            reply = await http.post(
                f"{served.url}/v1/chat/completions",
                json={
                    "model": "selfroute",
                    "messages": [{"role": "user", "content": OIL.question}],
                },
            )
        except httpx.ConnectError:  # the listener had closed: never accepted
            results.append("refused")
            return
        if reply.status_code == 503:
            assert reply.json()["error"]["code"] == "shutting_down"
            results.append("refused")
        else:
            assert reply.status_code == 200, reply.text
            assert reply.json()["choices"][0]["message"]["content"] == OIL.answer
            results.append("answered")

    async with httpx.AsyncClient(timeout=120) as http:
        tasks = [asyncio.create_task(one(http, i * 0.1)) for i in range(64)]
        while model.in_flight < 5:
            await asyncio.sleep(0.02)
        served.process.send_signal(signal.SIGTERM)
        await asyncio.gather(*tasks)  # any lost request (reset, 5xx, wrong answer) raises here
    assert served.process.wait(timeout=60) == 0
    served.log.close()
    assert results.count("answered") >= 5 and "refused" in results
    assert len(results) == 64
