"""API keys echoed by a provider never reach selfroute's results, errors, logs or chain traces."""

from __future__ import annotations

import logging
from typing import Any
from uuid import UUID

import pytest

import selfroute as sr
from tests.integration.reliability._chat import ChatHandler, is_rag
from tests.support._loopback import last_user_text
from tests.support.clients import chat_google, chat_openai
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer

GOOGLE_KEY = "AIzaSyFakeKeyForTests-0123456789abcdefgh"
OPENAI_KEY = "sk-proj-TraceEchoKey0123456789abcdefghij"


def echo_on_rag(key: str) -> Any:
    echo = Reply(f"API key not valid. Please pass a valid API key. Got {key}", status=400)
    return lambda body: echo if is_rag(last_user_text(body)) else "In 1901."


def test_google_key_echoed_by_gemini_is_redacted(
    gemini_server: ScriptedGeminiServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", GOOGLE_KEY)
    gemini_server.responder = echo_on_rag(GOOGLE_KEY)
    handler = ChatHandler(chat_google(gemini_server, google_api_key=GOOGLE_KEY))
    with caplog.at_level(logging.DEBUG):
        result = sr.flow.run_flow(sr.flow.self_route_flow("When was she born?"), handler)
        gemini_server.responder = lambda body: Reply(f"bad key {GOOGLE_KEY}", status=400)
        config = sr.RouteConfig(on_rag_error="raise")
        with pytest.raises(sr.ModelOutputError) as info:
            sr.flow.run_flow(sr.flow.self_route_flow("When was she born?", config), handler)
    assert result.reason is sr.Reason.RAG_ERROR and result.answer == "In 1901."
    assert "400" in (result.error or "") or "INVALID" in (result.error or "").upper()
    for text in (str(result.to_dict()), str(info.value), caplog.text):
        assert GOOGLE_KEY not in text


def test_chain_trace_of_selfroute_run_has_no_key(
    openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ``SelfRoute`` itself reports to LangChain callbacks (its chain run's outputs and
    errors) is redacted. Child model runs are reported by the provider integration itself."""
    lcs = pytest.importorskip("langchain_selfroute")
    from langchain_core.callbacks import BaseCallbackHandler

    class TopLevel(BaseCallbackHandler):
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_chain_end(
            self, outputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
        ) -> None:
            if parent_run_id is None:
                self.seen.append(repr(outputs))

        def on_chain_error(
            self,
            error: BaseException,
            *,
            run_id: UUID,
            parent_run_id: UUID | None = None,
            **kw: Any,
        ) -> None:
            if parent_run_id is None:
                self.seen.append(str(error))

    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    # a transient fault escalates (a rejection such as 401 raises: issue #16, finding 10)
    echo = Reply(f"Service unavailable for key {OPENAI_KEY}", status=503)
    openai_server.responder = lambda body: echo if is_rag(last_user_text(body)) else "In 1901."
    llm = chat_openai(openai_server, api_key=OPENAI_KEY)
    tracer = TopLevel()
    route = lcs.SelfRoute(llm=llm, document="Mara Holt was born in Dunmore in 1901. " * 20)
    out = route.invoke("When was she born?", config={"callbacks": [tracer]})
    assert out.reason is sr.Reason.RAG_ERROR
    openai_server.responder = lambda body: Reply(f"bad key {OPENAI_KEY}", status=401)
    strict = lcs.SelfRoute(
        llm=llm, document="Mara Holt was born in 1901. " * 20, on_rag_error="raise"
    )
    with pytest.raises(sr.ModelOutputError):
        strict.invoke("When was she born?", config={"callbacks": [tracer]})
    assert len(tracer.seen) == 2
    for text in tracer.seen:
        assert OPENAI_KEY not in text
