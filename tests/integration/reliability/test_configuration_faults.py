"""Finding 10 of issue #16: configuration errors are not routing signals.

A provider that rejects the RAG-step request (401 bad key, 403, 404 ``model_not_found``, 400
``context_length_exceeded`` or an invalid request) would reject it again: escalating would send
every question to the expensive model (a typo in the cheap model's name = 100% long-context
spend). Both adapters raise :class:`selfroute.ModelConfigurationError` naming the stage, and no
long-context request is sent. Transient faults (timeouts, 5xx, connection errors, 429 after the
client's retries) still escalate per ``on_rag_error``, each with a warning on the ``selfroute``
logger; when both steps fail the error names both. Real ``ChatOpenAI`` / LlamaIndex ``OpenAI``
clients against the loopback server.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._adapters import ADAPTERS, MODES, ask
from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

QUESTION = "How long did Mara Holt keep the lamp?"

REJECTIONS = [
    pytest.param(Reply("Incorrect API key provided: sk-...", status=401), 401, id="401"),
    pytest.param(Reply("You are not allowed to sample from this model", status=403), 403, id="403"),
    pytest.param(
        Reply("The model `gpt-4o-minii` does not exist", status=404), 404, id="404-model_not_found"
    ),
    pytest.param(
        Reply(
            "This model's maximum context length is 128000 tokens (context_length_exceeded)",
            status=400,
        ),
        400,
        id="400-context_length_exceeded",
    ),
    pytest.param(Reply("Invalid value for 'temperature'", status=400), 400, id="400-invalid"),
]


def script(rag: Reply | str, lc: Reply | str = "In 1901.") -> Any:
    def responder(body: dict[str, Any]) -> Reply | str:
        return rag if is_rag(last_user_text(body)) else lc

    return responder


def lc_requests(server: ScriptedOpenAIServer) -> int:
    return sum(not is_rag(last_user_text(b)) for b in server.requests)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("reply, status", REJECTIONS)
def test_rejected_rag_request_raises_and_never_reaches_the_long_context_model(
    openai_server: ScriptedOpenAIServer, adapter: str, mode: str, reply: Reply, status: int
) -> None:
    openai_server.responder = script(reply)
    with pytest.raises(sr.ModelConfigurationError) as info:
        ask(adapter, openai_server, QUESTION, mode)
    error = info.value
    assert isinstance(error, sr.ConfigurationError) and isinstance(error, sr.ModelOutputError)
    assert error.context["stage"] == "rag" and error.context["status"] == status
    assert "RAG-step model (gpt-4o-mini)" in str(error) and str(status) in str(error)
    assert lc_requests(openai_server) == 0  # no long-context spend
    assert openai_server.calls == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_rejected_rag_request_raises_even_with_on_rag_error_long_context(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    openai_server.responder = script(Reply("model_not_found", status=404))
    with pytest.raises(sr.ModelConfigurationError):
        ask(adapter, openai_server, QUESTION, "invoke", on_rag_error="long_context")
    assert lc_requests(openai_server) == 0


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_rejected_long_context_request_names_the_long_context_stage(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    openai_server.responder = script("unanswerable", Reply("no such model", status=404))
    with pytest.raises(sr.LongContextError) as info:
        ask(adapter, openai_server, QUESTION, "invoke")
    cause = info.value.__cause__
    assert isinstance(cause, sr.ModelConfigurationError)
    assert cause.context["stage"] == "long_context"
    assert "long-context model" in str(info.value)
    assert info.value.partial.rag_answer == "unanswerable"


TRANSIENT = [
    pytest.param(Reply("overloaded", status=503), "503", id="503"),
    pytest.param(Reply("slow down", status=429), "429", id="429"),
    pytest.param(Reply(kind="hang"), "Timeout", id="timeout"),
]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("reply, name", TRANSIENT)
def test_transient_rag_fault_escalates_with_a_warning(
    openai_server: ScriptedOpenAIServer,
    caplog: pytest.LogCaptureFixture,
    adapter: str,
    reply: Reply,
    name: str,
) -> None:
    openai_server.responder = script(reply)
    with caplog.at_level(logging.WARNING, logger="selfroute"):
        asked = ask(adapter, openai_server, QUESTION, "invoke", client={"timeout": 0.5})
    result = asked.result
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.RAG_ERROR,
        "In 1901.",
    )
    warnings = [r for r in caplog.records if r.name.startswith("selfroute")]
    assert warnings and all(r.levelno == logging.WARNING for r in warnings)
    assert "escalat" in warnings[0].getMessage() and name in warnings[0].getMessage()


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_both_steps_failing_names_both(openai_server: ScriptedOpenAIServer, adapter: str) -> None:
    openai_server.responder = script(Reply("rag down", status=500), Reply("lc down", status=503))
    with pytest.raises(sr.LongContextError) as info:
        ask(adapter, openai_server, QUESTION, "invoke")
    message = str(info.value)
    assert "500" in message and "503" in message
    assert "RAG" in message and "long-context" in message
    assert info.value.partial.reason is sr.Reason.RAG_ERROR
