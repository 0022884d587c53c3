"""``selfroute serve`` in operation: ``/healthz``, ``/metrics``, the concurrency limit, the
per-question deadline, a model server that is down, and SIGTERM (requests in flight finish, new
ones get 503, exit 0)."""

from __future__ import annotations

import re
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cli.scripted import CLERK, OIL
from tests.integration.serve.conftest import Served
from tests.support.openai_server import ScriptedOpenAIServer

BODY = {"model": "selfroute", "messages": [{"role": "user", "content": OIL.question}]}


def post(served: Served, body: dict[str, Any] = BODY, timeout: float = 60) -> httpx.Response:
    return httpx.post(f"{served.url}/v1/chat/completions", json=body, timeout=timeout)


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one series of the Prometheus text ``text``."""
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"no {name} {labels} in:\n{text}")


def wait_for(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition never held")
        time.sleep(0.02)


def test_healthz_and_metrics_count_routes_tokens_and_savings(
    store: Path, model: ScriptedOpenAIServer
) -> None:
    served = Served(store, model, "--lc-model", "reader-large")
    try:
        assert httpx.get(f"{served.url}/healthz").json() == {"status": "ok", "in_flight": 0}
        rag = post(served).json()
        lc = post(
            served, {**BODY, "messages": [{"role": "user", "content": CLERK.question}]}
        ).json()
        text = httpx.get(f"{served.url}/metrics").text
    finally:
        assert served.close() == 0
    assert sample(text, "selfroute_questions_total", route="rag", reason="answered") == 1
    assert sample(text, "selfroute_questions_total", route="long_context", reason="declined") == 1
    assert sample(text, "selfroute_long_context_calls_total", collection="main") == 1
    inputs = sum(
        sample(text, "selfroute_tokens_total", stage=s, kind="input")
        for s in ("rag", "long_context")
    )
    assert inputs == rag["usage"]["prompt_tokens"] + lc["usage"]["prompt_tokens"]
    assert inputs == sum(len(r["messages"][-1]["content"].split()) for r in model.requests)
    saved = rag["selfroute"]["saved_tokens"] + lc["selfroute"]["saved_tokens"]
    assert sample(text, "selfroute_saved_input_tokens", collection="main") == saved
    assert (
        sample(text, "selfroute_requests_total", endpoint="/v1/chat/completions", status="200") == 2
    )
    assert sample(text, "selfroute_question_seconds_count", route="rag") == 1
    assert sample(text, "selfroute_request_seconds_count", endpoint="/v1/chat/completions") == 2


def test_the_concurrency_limit_queues_then_refuses(
    store: Path, model: ScriptedOpenAIServer
) -> None:
    model.latency_s = 2.0
    served = Served(store, model, "--max-concurrency", "1", "--queue-timeout", "0.5")
    try:
        replies: list[httpx.Response] = []
        threads = [threading.Thread(target=lambda: replies.append(post(served))) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        assert served.close() == 0
    statuses = sorted(r.status_code for r in replies)
    assert statuses == [200, 503, 503]
    busy = next(r for r in replies if r.status_code == 503)
    assert busy.json()["error"]["code"] == "busy" and busy.headers["retry-after"] == "1"
    assert model.max_in_flight == 1 and model.calls == 1


def test_the_deadline_is_a_504(store: Path, model: ScriptedOpenAIServer) -> None:
    model.latency_s = 5.0
    served = Served(store, model, "--deadline", "1", "--max-retries", "0")
    try:
        reply = post(served)
        streamed = httpx.post(
            f"{served.url}/v1/chat/completions", json={**BODY, "stream": True}, timeout=60
        )
    finally:
        assert served.close() == 0
    assert reply.status_code == 504, reply.text
    assert reply.json()["error"]["code"] == "deadline_exceeded"
    assert "deadline" in reply.json()["error"]["message"]
    assert streamed.status_code == 504


def test_a_model_server_down_is_a_502(store: Path) -> None:
    down = ScriptedOpenAIServer().start()
    base_url = down.base_url
    down.stop()
    served = Served(store, base_url, "--max-retries", "0")
    try:
        reply = post(served)
        streamed = httpx.post(
            f"{served.url}/v1/chat/completions", json={**BODY, "stream": True}, timeout=60
        )
        assert httpx.get(f"{served.url}/healthz").status_code == 200  # still serving
    finally:
        assert served.close() == 0
    assert reply.status_code == 502
    assert "could not reach the model server" in reply.json()["error"]["message"]
    assert streamed.status_code == 502


def test_sigterm_finishes_requests_in_flight_and_refuses_new_ones(
    store: Path, model: ScriptedOpenAIServer
) -> None:
    model.latency_s = 2.0
    served = Served(store, model)
    replies: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda: replies.append(post(served))) for _ in range(3)]
    for t in threads:
        t.start()
    wait_for(lambda: model.in_flight == 3)
    served.process.send_signal(signal.SIGTERM)
    wait_for(lambda: httpx.get(f"{served.url}/healthz").status_code == 503)
    late = post(served)
    for t in threads:
        t.join()
    assert served.process.wait(timeout=60) == 0
    assert late.status_code == 503 and late.json()["error"]["code"] == "shutting_down"
    assert [r.status_code for r in replies] == [200, 200, 200]
    assert all(r.json()["choices"][0]["message"]["content"] == OIL.answer for r in replies)
    served.log.close()


@pytest.mark.parametrize("stream", [False, True])
def test_a_client_that_goes_away_cancels_the_model_call(
    store: Path, model: ScriptedOpenAIServer, stream: bool
) -> None:
    import json
    import socket

    from tests.support.openai_server import Reply

    if stream:  # 200 streamed pieces 0.3 s apart: only a closed connection ends the call early
        model.responder = lambda body: Reply("word " * 200)
        model.token_delay_s = 0.3
    else:  # one byte every 0.1 s (a minute in all)
        model.responder = lambda body: Reply(OIL.answer * 20, kind="drip", drip_s=0.1)
    served = Served(store, model, "--timeout", "120")
    try:
        body = json.dumps({**BODY, "stream": stream}).encode()
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", served.port)) as client:
            client.sendall(head.encode() + body)
            wait_for(lambda: model.in_flight == 1)  # the model call is running
        # the client is gone: the server cancels the question, closing the model's connection
        wait_for(lambda: model.in_flight == 0, timeout=15)
        assert model.calls == 1
        assert httpx.get(f"{served.url}/healthz").json()["in_flight"] == 0
    finally:
        model.token_delay_s = 0.0
        assert served.close() == 0
