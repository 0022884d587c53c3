"""Behaviour both scripted servers share, checked through both real LangChain chat models."""

from __future__ import annotations

import asyncio
import threading

import openai
import pytest
from google.genai import errors as genai_errors
from langchain_google_genai.chat_models import GoogleRateLimitError

from tests.support.clients import chat_google, chat_openai, merge_chunks
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer, rules

pytestmark = pytest.mark.integration

PROVIDERS = {
    "openai": (ScriptedOpenAIServer, chat_openai),
    "gemini": (ScriptedGeminiServer, chat_google),
}


@pytest.fixture(params=sorted(PROVIDERS))
def provider(request):
    server_cls, make_client = PROVIDERS[request.param]
    with server_cls() as server:
        yield server, make_client


def test_invoke_follows_rules_and_reports_usage(provider):
    server, make_client = provider
    server.responder = rules(
        ("capital of France", Reply("Paris.", prompt_tokens=120, completion_tokens=3)),
        default="unanswerable",
    )
    llm = make_client(server)
    msg = llm.invoke("What is the capital of France?")
    assert msg.content == "Paris."
    assert msg.usage_metadata["input_tokens"] == 120
    assert msg.usage_metadata["output_tokens"] == 3
    assert msg.usage_metadata["total_tokens"] == 123
    # default rule and default token counts (word counts of prompt / reply)
    other = llm.invoke("Who painted the Mona Lisa in Florence?")
    assert other.content == "unanswerable"
    assert other.usage_metadata["input_tokens"] == 7
    assert other.usage_metadata["output_tokens"] == 1
    assert server.calls == 2


async def test_ainvoke(provider):
    server, make_client = provider
    server.responder = rules(("ping", Reply("pong", prompt_tokens=3)))
    msg = await make_client(server).ainvoke("ping")
    assert msg.content == "pong"
    assert msg.usage_metadata["input_tokens"] == 3
    assert msg.usage_metadata["output_tokens"] == 1


async def test_astream_text_and_usage(provider):
    server, make_client = provider
    server.responder = lambda body: Reply("a b", prompt_tokens=3, completion_tokens=2)
    full = merge_chunks([c async for c in make_client(server).astream("q")])
    assert full.content == "a b"
    assert full.usage_metadata["input_tokens"] == 3
    assert full.usage_metadata["output_tokens"] == 2


async def test_concurrent_async_calls_overlap(provider):
    server, make_client = provider
    # every request waits until all 8 are in the server: served one at a time, it times out
    barrier = threading.Barrier(8, timeout=60)

    def respond(body: object) -> str:
        barrier.wait()
        return "ok"

    server.responder = respond
    llm = make_client(server)
    results = await asyncio.gather(*(llm.ainvoke(f"q{i}") for i in range(8)))
    assert [r.content for r in results] == ["ok"] * 8
    assert server.max_in_flight == 8


@pytest.mark.parametrize(
    ("name", "status", "exc_type"),
    [
        ("openai", 429, openai.RateLimitError),
        ("openai", 500, openai.InternalServerError),
        ("openai", 401, openai.AuthenticationError),
        ("gemini", 429, GoogleRateLimitError),
        ("gemini", 500, genai_errors.ServerError),
    ],
)
def test_error_status_raises_the_provider_error(name, status, exc_type):
    server_cls, make_client = PROVIDERS[name]
    with server_cls(lambda body: Reply("scripted failure", status=status)) as server:
        llm = make_client(server)
        with pytest.raises(exc_type, match="scripted failure"):
            llm.invoke("q")
        with pytest.raises(exc_type):
            list(llm.stream("q"))
    assert server.calls == 2  # the helpers build clients without silent retries
