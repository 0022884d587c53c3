"""The real ``ChatOpenAI`` (and the raw ``openai`` SDK) against `ScriptedOpenAIServer`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.clients import chat_openai, merge_chunks
from tests.support.openai_server import Reply, ScriptedOpenAIServer, tool_call

pytestmark = pytest.mark.integration


def test_request_body_model_name_and_finish_reason(openai_server):
    openai_server.responder = lambda body: Reply("Paris.", model="m-1")
    msg = chat_openai(openai_server).invoke("What is the capital of France?")
    assert msg.response_metadata["model_name"] == "m-1"
    assert msg.response_metadata["finish_reason"] == "stop"
    assert openai_server.requests[0]["messages"][-1]["content"] == "What is the capital of France?"
    assert openai_server.requests[0]["model"] == "gpt-4o-mini"
    assert openai_server.headers[0]["authorization"] == "Bearer dummy"


def test_cached_tokens_reach_langchain(openai_server):
    openai_server.responder = lambda body: Reply("ok", prompt_tokens=50, cached_tokens=40)
    msg = chat_openai(openai_server).invoke("hello")
    assert msg.usage_metadata["input_token_details"]["cache_read"] == 40


def test_model_none_echoes_requested_model(openai_server):
    openai_server.responder = lambda body: Reply("ok", model=None)
    msg = chat_openai(openai_server, model="gpt-4o").invoke("hello")
    assert msg.response_metadata["model_name"] == "gpt-4o"


def test_stream_one_chunk_per_word_with_final_usage(openai_server):
    text = "The answer is forty two."
    openai_server.responder = lambda body: Reply(text, prompt_tokens=11, completion_tokens=6)
    openai_server.token_delay_s = 0.001
    chunks = list(chat_openai(openai_server).stream("question"))
    pieces = [c.content for c in chunks if c.content]
    assert pieces == ["The", " answer", " is", " forty", " two."]
    full = merge_chunks(chunks)
    assert full.content == text
    assert full.usage_metadata["input_tokens"] == 11
    assert full.usage_metadata["output_tokens"] == 6
    body = openai_server.requests[-1]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_stream_without_usage_has_no_usage_chunk(openai_server):
    openai_server.responder = lambda body: "x y"
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="dummy", max_retries=0)
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "q"}], stream=True
        )
    )
    assert all(chunk.choices for chunk in chunks)
    assert all(chunk.usage is None for chunk in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_raw_completion_shape(openai_server):
    openai_server.responder = lambda body: Reply("hi", prompt_tokens=5, completion_tokens=1)
    resp = httpx.post(
        f"{openai_server.base_url}/chat/completions",
        json={"model": "x", "messages": [{"role": "user", "content": "q"}]},
    )
    data = resp.json()
    assert resp.status_code == 200
    assert data["object"] == "chat.completion"
    assert data["id"].startswith("chatcmpl-")
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "hi", "refusal": None}
    assert data["usage"]["total_tokens"] == 6
    assert data["usage"]["prompt_tokens_details"]["cached_tokens"] == 0


def test_scripted_tool_call_through_the_openai_sdk(openai_server):
    openai_server.responder = lambda body: tool_call({"answerable": False, "answer": ""})
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="k")
    tools = [{"type": "function", "function": {"name": "rag_verdict", "parameters": {}}}]
    resp = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "q"}], tools=tools
    )
    (call,) = resp.choices[0].message.tool_calls or []
    assert resp.choices[0].finish_reason == "tool_calls" and resp.choices[0].message.content is None
    assert call.function.name == "rag_verdict"
    assert json.loads(call.function.arguments) == {"answerable": False, "answer": ""}
    # without tools in the request the marker is plain text
    plain = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    assert plain.choices[0].message.content.startswith("TOOL_CALL:")


def test_models_endpoint_and_unknown_route(openai_server):
    client = openai.OpenAI(base_url=openai_server.base_url, api_key="dummy", max_retries=0)
    assert "loopback-model" in [m.id for m in client.models.list()]
    resp = httpx.post(f"{openai_server.base_url}/no-such-route", json={})
    assert resp.status_code == 404
    assert "no route" in resp.json()["error"]["message"]
    assert openai_server.calls == 0  # neither is a model request


def test_invalid_json_body_is_a_400(openai_server):
    resp = httpx.post(
        f"{openai_server.base_url}/chat/completions",
        content=b"{nope",
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 400
    assert "invalid JSON" in resp.json()["error"]["message"]


def test_error_kind_defaults_to_500(openai_server):
    openai_server.responder = lambda body: Reply("down", kind="error")
    with pytest.raises(openai.InternalServerError):
        chat_openai(openai_server).invoke("q")


def test_malformed_replies_fail_to_parse(openai_server):
    openai_server.responder = lambda body: Reply("x", kind="malformed")
    llm = chat_openai(openai_server)
    with pytest.raises(json.JSONDecodeError):
        llm.invoke("q")
    with pytest.raises(json.JSONDecodeError):
        list(llm.stream("q"))


def test_empty_reply(openai_server):
    openai_server.responder = lambda body: Reply("ignored", kind="empty")
    llm = chat_openai(openai_server)
    assert llm.invoke("q").content == ""
    full = merge_chunks(list(llm.stream("q")))
    assert full.content == ""
    assert full.usage_metadata["output_tokens"] == 0


def test_hang_times_out_client(openai_server):
    openai_server.responder = lambda body: Reply("never", kind="hang")
    llm = chat_openai(openai_server, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        llm.invoke("q")
    with pytest.raises(openai.APITimeoutError):
        list(llm.stream("q"))


def test_stop_releases_hanging_request():
    server = ScriptedOpenAIServer(lambda body: Reply("never", kind="hang")).start()
    llm = chat_openai(server, timeout=60)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            llm.invoke("q")
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    while server.in_flight == 0 and thread.is_alive():
        thread.join(0.01)
    server.stop()
    thread.join(10)
    assert not thread.is_alive()
    assert len(errors) == 1
    assert isinstance(errors[0], openai.APIConnectionError)
    assert not server.running


def test_responder_exception_is_a_500_and_recorded(openai_server):
    def broken(body):
        raise KeyError("missing-rule")

    openai_server.responder = broken
    with pytest.raises(openai.InternalServerError, match="missing-rule"):
        chat_openai(openai_server).invoke("q")
    assert isinstance(openai_server.errors[0], KeyError)


async def test_serves_32_concurrent_requests_in_parallel():
    # every request waits until all 32 are in the server: served one at a time, it times out
    barrier = threading.Barrier(32, timeout=60)

    def respond(body: object) -> str:
        barrier.wait()
        return "ok"

    with ScriptedOpenAIServer(respond) as server:
        llm = chat_openai(server)
        results = await asyncio.gather(*(llm.ainvoke(f"q{i}") for i in range(32)))
    assert [r.content for r in results] == ["ok"] * 32
    assert server.calls == 32
    # all 32 were being served at the same time, so latency was not serialised
    assert server.max_in_flight == 32


def test_reset_clears_records(openai_server):
    chat_openai(openai_server).invoke("q")
    openai_server.reset()
    assert openai_server.calls == 0
    assert openai_server.requests == []


def test_command_line_server_serves_a_script(tmp_path: Path):
    script = tmp_path / "rules.json"
    script.write_text(
        json.dumps(
            {
                "rules": [
                    {"match": "capital", "text": "Paris"},
                    {"match": "fail", "text": "nope", "status": 429},
                ],
                "default": "unanswerable",
            }
        )
    )
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.support.openai_server",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base_url = proc.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        client = openai.OpenAI(base_url=base_url, api_key="dummy", max_retries=0)

        def ask(question: str) -> str:
            resp = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
            return resp.choices[0].message.content

        assert ask("What is the capital?") == "Paris"
        assert ask("Who?") == "unanswerable"
        with pytest.raises(openai.RateLimitError):
            ask("please fail")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert "served 3 requests" in err
