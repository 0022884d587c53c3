"""The real ``ChatGoogleGenerativeAI`` (google-genai SDK) against `ScriptedGeminiServer`."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.clients import chat_google, merge_chunks
from tests.support.gemini_server import Reply

pytestmark = pytest.mark.integration

try:  # google-genai >= 3 ships its own httpx fork
    import httpx2

    _TIMEOUTS: tuple[type[BaseException], ...] = (httpx.TimeoutException, httpx2.TimeoutException)
except ImportError:  # pragma: no cover - older google-genai
    _TIMEOUTS = (httpx.TimeoutException,)


def test_request_path_headers_and_finish_reason(gemini_server):
    gemini_server.responder = lambda body: Reply("Paris.")
    msg = chat_google(gemini_server).invoke("What is the capital of France?")
    assert msg.response_metadata["finish_reason"] == "STOP"
    assert gemini_server.paths[0].endswith("/models/gemini-2.5-flash:generateContent")
    assert gemini_server.headers[0]["x-goog-api-key"] == "dummy"
    body = gemini_server.requests[0]
    assert body["contents"][-1]["parts"][0]["text"] == "What is the capital of France?"


def test_system_message_is_part_of_the_prompt(gemini_server):
    gemini_server.responder = lambda body: Reply("ok")
    msg = chat_google(gemini_server).invoke([("system", "be brief"), ("human", "two words")])
    # default prompt tokens = words of system instruction + user message
    assert msg.usage_metadata["input_tokens"] == 4


def test_stream_chunks_and_usage(gemini_server):
    gemini_server.responder = lambda body: Reply(
        "one two three", prompt_tokens=7, completion_tokens=5
    )
    chunks = list(chat_google(gemini_server).stream("q"))
    assert [c.content for c in chunks if c.content] == ["one", " two", " three"]
    full = merge_chunks(chunks)
    assert full.content == "one two three"
    assert full.usage_metadata["input_tokens"] == 7
    assert full.usage_metadata["output_tokens"] == 5
    assert full.usage_metadata["total_tokens"] == 12
    assert gemini_server.paths[-1].endswith(":streamGenerateContent?alt=sse")


def test_malformed_and_empty(gemini_server):
    llm = chat_google(gemini_server)
    gemini_server.responder = lambda body: Reply("x", kind="malformed")
    with pytest.raises(json.JSONDecodeError):
        llm.invoke("q")
    with pytest.raises(Exception, match="parse"):
        list(llm.stream("q"))
    gemini_server.responder = lambda body: Reply("x", kind="empty")
    assert llm.invoke("q").content == ""


def test_hang_times_out(gemini_server):
    gemini_server.responder = lambda body: Reply("never", kind="hang")
    with pytest.raises(_TIMEOUTS):
        chat_google(gemini_server, timeout=0.3).invoke("q")
    with pytest.raises(_TIMEOUTS):
        list(chat_google(gemini_server, timeout=0.3).stream("q"))


def test_models_listing(gemini_server):
    resp = httpx.get(f"{gemini_server.base_url}/v1beta/models")
    assert resp.status_code == 200
    assert "models/loopback-model" in [m["name"] for m in resp.json()["models"]]
