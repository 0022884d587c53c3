"""The real LlamaIndex ``OpenAI`` LLM against `ScriptedOpenAIServer`."""

from __future__ import annotations

import openai
import pytest
from llama_index.core.llms import ChatMessage

from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply, rules

pytestmark = pytest.mark.integration

MESSAGES = [
    ChatMessage(role="system", content="be brief"),
    ChatMessage(role="user", content="hi there"),
]


def test_chat_text_and_usage(openai_server):
    openai_server.responder = rules(("hi", Reply("hello", prompt_tokens=9, completion_tokens=1)))
    resp = llamaindex_openai(openai_server).chat(MESSAGES)
    assert resp.message.content == "hello"
    assert resp.raw.usage.prompt_tokens == 9
    assert resp.raw.usage.completion_tokens == 1
    assert resp.additional_kwargs["prompt_tokens"] == 9
    assert "stream_options" not in openai_server.requests[-1]


async def test_achat(openai_server):
    openai_server.responder = lambda body: "async hello"
    resp = await llamaindex_openai(openai_server).achat(MESSAGES)
    assert resp.message.content == "async hello"


def test_stream_chat_ends_with_usage_chunk(openai_server):
    openai_server.responder = lambda body: Reply("a b c", prompt_tokens=4, completion_tokens=3)
    chunks = list(llamaindex_openai(openai_server).stream_chat(MESSAGES))
    assert "".join(c.delta or "" for c in chunks) == "a b c"
    assert chunks[-1].message.content == "a b c"
    assert chunks[-1].raw.usage.prompt_tokens == 4
    assert chunks[-1].raw.usage.completion_tokens == 3
    assert openai_server.requests[-1]["stream_options"] == {"include_usage": True}


async def test_astream_chat(openai_server):
    openai_server.responder = lambda body: "x y"
    gen = await llamaindex_openai(openai_server).astream_chat(MESSAGES)
    chunks = [c async for c in gen]
    assert chunks[-1].message.content == "x y"
    assert chunks[-1].raw.usage.completion_tokens == 2


def test_faults(openai_server):
    llm = llamaindex_openai(openai_server, timeout=0.3)
    openai_server.responder = lambda body: Reply("slow down", status=429)
    with pytest.raises(openai.RateLimitError):
        llm.chat(MESSAGES)
    openai_server.responder = lambda body: Reply("x", kind="hang")
    with pytest.raises(openai.APITimeoutError):
        llm.chat(MESSAGES)
    openai_server.responder = lambda body: Reply("x", kind="empty")
    assert llm.chat(MESSAGES).message.content in ("", None)
