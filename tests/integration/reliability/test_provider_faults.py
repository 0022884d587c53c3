"""Provider faults through a real ``ChatOpenAI`` against the loopback server.

The RAG call fails (timeout, 429, 500, malformed JSON, empty content) or the LC call fails; the
flow escalates or raises as configured and records what happened. Retries are the client's own.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._chat import ChatHandler, is_rag
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

QUESTION = "When was Mara Holt born?"


def script(rag: Reply | str, lc: Reply | str = "In 1901.") -> Any:
    def responder(body: dict[str, Any]) -> Reply | str:
        return rag if is_rag(last_user_text(body)) else lc

    return responder


def stages(server: ScriptedOpenAIServer) -> list[str]:
    return ["rag" if is_rag(last_user_text(b)) else "lc" for b in server.requests]


RAG_FAULTS = [
    pytest.param(Reply(kind="hang"), "Timeout", id="timeout"),
    pytest.param(Reply("Rate limit reached", status=429), "RateLimitError", id="429"),
    pytest.param(Reply("The server had an error", status=500), "Error code: 500", id="500"),
    pytest.param(Reply(kind="malformed"), "", id="malformed"),
]


@pytest.mark.parametrize("reply, error_name", RAG_FAULTS)
def test_rag_fault_escalates_to_long_context(
    openai_server: ScriptedOpenAIServer, reply: Reply, error_name: str
) -> None:
    openai_server.responder = script(reply)
    llm = chat_openai(openai_server, timeout=0.5)
    started = time.monotonic()
    result = sr.flow.run_flow(sr.flow.self_route_flow(QUESTION), ChatHandler(llm))
    assert time.monotonic() - started < 10  # the hang is bounded by the client timeout
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.RAG_ERROR)
    assert result.answer == "In 1901."
    assert result.error is not None and result.error.startswith("rag: ")
    assert error_name in result.error
    assert result.steps[0].error and result.steps[0].usage == sr.Usage.zero()
    assert result.steps[1].usage.source == "provider" and result.steps[1].usage.input_tokens > 0
    assert stages(openai_server) == ["rag", "lc"]


def test_empty_rag_reply_escalates_as_empty_output(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.responder = script(Reply(kind="empty"))
    result = sr.flow.run_flow(
        sr.flow.self_route_flow(QUESTION), ChatHandler(chat_openai(openai_server))
    )
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.EMPTY_OUTPUT)
    assert result.steps[0].usage.source == "provider"  # the empty call was still paid for
    assert result.answer == "In 1901."


@pytest.mark.parametrize("reply, error_name", RAG_FAULTS)
async def test_rag_fault_raises_when_configured(
    openai_server: ScriptedOpenAIServer, reply: Reply, error_name: str
) -> None:
    openai_server.responder = script(reply)
    handler = ChatHandler(chat_openai(openai_server, timeout=0.5))
    config = sr.RouteConfig(on_rag_error="raise")
    with pytest.raises(sr.ModelOutputError, match="RAG-step model call failed") as info:
        await sr.flow.arun_flow(sr.flow.self_route_flow(QUESTION, config), handler)
    assert error_name in str(info.value)
    assert stages(openai_server) == ["rag"]


@pytest.mark.parametrize(
    "reply", [Reply("overloaded", status=503), Reply(kind="hang")], ids=["503", "timeout"]
)
def test_lc_fault_raises_with_partial_rag_result(
    openai_server: ScriptedOpenAIServer, reply: Reply
) -> None:
    openai_server.responder = script(Reply("unanswerable", prompt_tokens=321), lc=reply)
    handler = ChatHandler(chat_openai(openai_server, timeout=0.5))
    with pytest.raises(sr.LongContextError, match="long-context model call failed") as info:
        sr.flow.run_flow(sr.flow.self_route_flow(QUESTION), handler)
    partial = info.value.partial
    assert partial.answer is None and partial.reason is sr.Reason.DECLINED
    assert partial.rag_answer == "unanswerable"
    assert partial.usage.input_tokens == 321 and partial.usage.source == "provider"
    assert partial.steps[0].model == "loopback-model" and len(partial.sources) == 2
    assert stages(openai_server) == ["rag", "lc"]


def test_client_retries_are_not_multiplied(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.responder = script(Reply("boom", status=500))
    handler = ChatHandler(chat_openai(openai_server, max_retries=2))
    config = sr.RouteConfig(on_rag_error="raise")
    with pytest.raises(sr.ModelOutputError):
        sr.flow.run_flow(sr.flow.self_route_flow(QUESTION, config), handler)
    assert openai_server.calls == 3  # 1 attempt + the client's 2 retries; selfroute adds none


def test_client_retries_then_escalation_sends_one_lc_call(
    openai_server: ScriptedOpenAIServer,
) -> None:
    openai_server.responder = script(Reply("boom", status=500))
    handler = ChatHandler(chat_openai(openai_server, max_retries=2))
    result = sr.flow.run_flow(sr.flow.self_route_flow(QUESTION), handler)
    assert result.reason is sr.Reason.RAG_ERROR
    assert stages(openai_server) == ["rag", "rag", "rag", "lc"]


def test_async_rag_fault_matches_sync(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.responder = script(Reply("slow down", status=429))
    handler = ChatHandler(chat_openai(openai_server))
    sync = sr.flow.run_flow(sr.flow.self_route_flow(QUESTION), handler)
    asynchronous = asyncio.run(sr.flow.arun_flow(sr.flow.self_route_flow(QUESTION), handler))
    assert (sync.route, sync.reason, sync.answer, sync.error) == (
        asynchronous.route,
        asynchronous.reason,
        asynchronous.answer,
        asynchronous.error,
    )
