"""The serve app in process (``httpx.ASGITransport``): keys, limits and the OpenAI-compatible
endpoint over one ``--doc`` file with the offline reader (no model server, no sockets)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp")

from selfroute._errors import ConfigurationError
from selfroute._serve._app import Limits, ServeApp, SlotGate, load_keys, make_tenant
from selfroute._serve._chat_api import ApiError, question_of
from selfroute._serve._commands import build_service
from selfroute._serve._service import Busy
from selfroute.cli import build_parser
from selfroute.cli._commands import settings_for

DOC = Path(__file__).parents[3] / "fixtures" / "docs" / "1973_oil_crisis.html"
QUESTION = "Who proclaimed the oil embargo in October 1973?"
KEY = "sk-unit-test-key-123"


def service(*extra: str) -> Any:
    args = build_parser("mcp").parse_args(["mcp", "--model", "offline", *extra])
    return build_service(settings_for(args, "mcp"), str(DOC))


def app(keys: bool = False, **limits: Any) -> ServeApp:
    tenant = make_tenant(service(), check_host=not keys)
    if keys:
        return ServeApp({KEY: tenant}, None, Limits(**limits))
    return ServeApp(None, tenant, Limits(**limits))


async def post(target: ServeApp, body: Any, **headers: str) -> httpx.Response:
    transport = httpx.ASGITransport(app=target)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        return await client.post("/v1/chat/completions", content=content, headers=headers)


BODY = {"model": "selfroute", "messages": [{"role": "user", "content": QUESTION}]}


async def test_an_answer_over_one_document_with_the_offline_reader() -> None:
    reply = await post(app(), BODY)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert "proclaimed an oil embargo" in data["choices"][0]["message"]["content"]
    assert (data["selfroute"]["route"], data["selfroute"]["reason"]) == ("rag", "answered")
    assert data["selfroute"]["collection"] == DOC.name
    assert data["usage"]["total_tokens"] == sum(
        s["total_tokens"] for s in data["selfroute"]["steps"]
    )


async def test_keys_are_required_and_checked() -> None:
    target = app(keys=True)
    assert (await post(target, BODY)).status_code == 401
    assert (await post(target, BODY, authorization="Bearer sk-other-key-000")).status_code == 401
    assert (await post(target, BODY, authorization=f"bearer {KEY}")).status_code == 200


async def test_without_keys_only_a_loopback_host_is_served() -> None:
    rebound = await post(app(), BODY, host="evil.example.com")
    assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "forbidden_host"
    assert (await post(app(), BODY, host="localhost:8000")).status_code == 200
    assert (
        await post(
            app(keys=True), BODY, host="selfroute.example.com", authorization=f"Bearer {KEY}"
        )
    ).status_code == 200


async def test_body_limit_and_draining() -> None:
    target = app(max_body_bytes=100)
    big = await post(target, {**BODY, "pad": "x" * 200})
    assert big.status_code == 413 and big.json()["error"]["code"] == "request_too_large"
    target = app()
    assert await target.drain() is True
    late = await post(target, BODY)
    assert late.status_code == 503 and late.headers["connection"] == "close"


async def test_the_gate_admits_the_limit_and_refuses_past_the_queue_timeout() -> None:
    gate = SlotGate(1, 0.05)
    async with gate.slot():
        with pytest.raises(Busy, match="busy"):
            async with gate.slot():
                pass
    async with gate.slot():  # released
        pass


async def test_drain_times_out_with_requests_in_flight() -> None:
    target = app(shutdown_timeout_s=0.05)
    target.in_flight = 1
    target._idle.clear()
    assert await target.drain() is False
    target.in_flight = 0
    target._idle.set()
    await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"messages": [{"role": "user", "content": "hi"}]}, None),
        (
            {
                "model": "selfroute",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            },
            None,
        ),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}, 404),
        ({"messages": "hi"}, 400),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, 400),
        ({"messages": [{"role": "assistant", "content": "hi"}]}, 400),
        ("just text", 400),
    ],
)
def test_question_of(body: Any, status: int | None) -> None:
    if status is None:
        assert question_of(body)[0] == "hi"
        return
    with pytest.raises(ApiError) as caught:
        question_of(body)
    assert caught.value.status == status


def test_the_last_user_message_is_the_question() -> None:
    body = {
        "messages": [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second"},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert question_of(body) == ("second", True, True)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("{broken", "cannot read it as JSON"),
        ("[]", "non-empty JSON object"),
        (json.dumps({"short": {"collection": "a"}}), "at least 8"),
        (json.dumps({KEY: {"name": "a"}}), "collection"),
        (json.dumps({KEY: {"collection": "a", "role": "admin"}}), "unknown fields"),
        (json.dumps({KEY: {"collection": "a", "max_lc_calls": -1}}), "max_lc_calls"),
        (json.dumps({KEY: {"collection": "a", "max_lc_calls": True}}), "max_lc_calls"),
    ],
)
def test_a_bad_keys_file_is_refused_without_showing_a_key(
    tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text(content)
    with pytest.raises(ConfigurationError, match=needle) as caught:
        load_keys(str(path))
    assert KEY not in str(caught.value) and "short" not in str(caught.value).replace("--keys", "")


def test_a_public_host_without_keys_is_refused() -> None:
    from selfroute._serve._commands import build_app

    args = build_parser("serve").parse_args(["serve", "--host", "0.0.0.0", "--model", "offline"])
    with pytest.raises(ConfigurationError, match="without --keys"):
        build_app(settings_for(args, "serve"))
