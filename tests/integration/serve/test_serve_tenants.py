"""``selfroute serve --keys``: bearer keys, each seeing only its collection, on ``/mcp`` (the real
MCP client over streamable HTTP) and ``/v1`` (the ``openai`` SDK); 401 before any work; keys never
in the output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.cli.scripted import OIL, PACKETS
from tests.integration.serve.conftest import Served
from tests.support.openai_server import ScriptedOpenAIServer

openai = pytest.importorskip("openai")
pytest.importorskip("mcp")

from tests.integration.serve.mcp_http import mcp_ask, mcp_session  # noqa: E402

OIL_KEY = "sk-oil-tenant-0123456789"
PACKETS_KEY = "sk-packets-tenant-9876543210"
CAPPED_KEY = "sk-packets-capped-5555555555"


@pytest.fixture(scope="module")
def served(
    store: Path, module_reader: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(
        json.dumps(
            {
                OIL_KEY: {"collection": "oil"},
                PACKETS_KEY: {"collection": "packets"},
                CAPPED_KEY: {"collection": "packets", "max_lc_calls": 0},
            }
        )
    )
    server = Served(store, module_reader, "--keys", str(keys))
    yield server
    assert server.close() == 0


def chat(served: Served, key: str, question: str) -> object:
    client = openai.OpenAI(base_url=f"{served.url}/v1", api_key=key, max_retries=0)
    return client.chat.completions.create(
        model="selfroute", messages=[{"role": "user", "content": question}]
    )


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer sk-not-a-key-at-all"}, {"Authorization": f"Basic {OIL_KEY}"}],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("POST", "/mcp"),
        ("GET", "/metrics"),
    ],
)
def test_no_key_or_a_wrong_key_is_401_before_any_work(
    served: Served, model: ScriptedOpenAIServer, headers: dict[str, str], method: str, path: str
) -> None:
    body = {"messages": [{"role": "user", "content": OIL.question}]}
    reply = httpx.request(method, f"{served.url}{path}", json=body, headers=headers, timeout=30)
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "invalid_api_key"
    assert reply.headers["www-authenticate"].startswith("Bearer")
    assert model.calls == 0


def test_the_openai_sdk_gets_authentication_error(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    with pytest.raises(openai.AuthenticationError):
        chat(served, "sk-wrong-key-123456", OIL.question)
    assert model.calls == 0


def test_healthz_needs_no_key(served: Served) -> None:
    assert httpx.get(f"{served.url}/healthz").json()["status"] == "ok"


def test_tenants_see_only_their_collection_over_v1(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    own = chat(served, OIL_KEY, OIL.question)
    assert own.choices[0].message.content == OIL.answer
    docs = {s["document"] for s in own.model_extra["selfroute"]["sources"]}
    assert docs and all(d.endswith("1973_oil_crisis.html") for d in docs)
    other = chat(served, PACKETS_KEY, OIL.question)
    extra = other.model_extra["selfroute"]
    assert extra["abstained"] is True and extra["collection"] == "packets"
    assert all(s["document"].endswith("packet_switching.pdf") for s in extra["sources"])
    for request in model.requests[1:]:  # nothing of the oil article reached the packets tenant
        assert OIL.evidence not in request["messages"][-1]["content"]
    assert chat(served, PACKETS_KEY, PACKETS.question).choices[0].message.content == PACKETS.answer


async def test_tenants_see_only_their_collection_over_mcp(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    own = await mcp_ask(served.url, OIL.question, OIL_KEY)
    assert own["answer"] == OIL.answer and own["collection"] == "oil"
    other = await mcp_ask(served.url, OIL.question, PACKETS_KEY)
    assert other["abstained"] is True and other["collection"] == "packets"
    assert all(s["document"].endswith("packet_switching.pdf") for s in other["sources"])
    async with mcp_session(served.url, PACKETS_KEY) as session:
        found = await session.call_tool("search", {"query": OIL.question, "k": 10})
        stats = await session.call_tool("stats", {})
    assert all(
        h["document"].endswith("packet_switching.pdf") for h in found.structured_content["hits"]
    )
    assert all(OIL.evidence not in h["text"] for h in found.structured_content["hits"])
    assert stats.structured_content["documents"] == 1


async def test_an_mcp_session_of_one_key_is_unknown_to_another(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    async with mcp_session(served.url, OIL_KEY) as session:
        session_id = None
        # the SDK keeps the session id on its transport; read it from a raw initialize instead
        reply = httpx.post(
            f"{served.url}/mcp",
            headers={
                "Authorization": f"Bearer {OIL_KEY}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            },
        )
        session_id = reply.headers.get("mcp-session-id")
        assert session_id
        assert (await session.call_tool("stats", {})).structured_content["documents"] == 1
    stolen = httpx.post(
        f"{served.url}/mcp",
        headers={
            "Authorization": f"Bearer {PACKETS_KEY}",
            "Mcp-Session-Id": session_id,
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        },
        json={
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "search", "arguments": {"query": "oil"}},
        },
    )
    assert stolen.status_code == 404, stolen.text
    assert OIL.evidence not in stolen.text


def test_a_tenant_budget_is_its_own(served: Served, model: ScriptedOpenAIServer) -> None:
    capped = chat(served, CAPPED_KEY, OIL.question).model_extra["selfroute"]
    assert (capped["reason"], capped["abstained"]) == ("over_budget", True)
    assert all(s["stage"] == "rag" for s in capped["steps"])  # no long-context call allowed
    uncapped = chat(served, PACKETS_KEY, OIL.question).model_extra["selfroute"]
    assert "long_context" in [s["stage"] for s in uncapped["steps"]]


def test_keys_never_appear_in_the_output(served: Served, model: ScriptedOpenAIServer) -> None:
    httpx.get(f"{served.url}/v1/models", headers={"Authorization": "Bearer sk-guess-000000000"})
    metrics = httpx.get(f"{served.url}/metrics", headers={"Authorization": f"Bearer {OIL_KEY}"})
    assert metrics.status_code == 200
    log = served.output()
    for key in (OIL_KEY, PACKETS_KEY, CAPPED_KEY, "sk-guess-000000000"):
        assert key not in log and key not in metrics.text
