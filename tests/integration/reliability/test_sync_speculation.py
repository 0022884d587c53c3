"""Finding 12 of issue #16: a sync call's speculative long-context request is really cancelled.

``invoke``/``query`` with ``speculate_below`` starts the long-context request in a worker thread.
When the RAG step answers, the call returns at once and the request is cut: the worker reads it as
a stream and closes it at the next chunk, so the provider stops generating. Before the fix the
request ran to its end (and was billed in full) while the result said "cancelled, 0 output
tokens". Real ``ChatOpenAI`` / LlamaIndex ``OpenAI`` against the loopback server, whose
long-context answer streams one word every 0.2 s (about 8 s in full).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._adapters import ADAPTERS, ask
from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

QUESTION = "How long did Mara Holt keep the lamp?"
LONG_ANSWER = " ".join(["word"] * 40)  # 40 chunks x 0.2 s = 8 s to stream in full


def wait_for(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_sync_speculative_request_is_cut_when_the_rag_step_answers(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    def responder(body: dict[str, Any]) -> Reply | str:
        if is_rag(last_user_text(body)):
            # answer once the speculative request is streaming (its first chunk was sent)
            wait_for(lambda: openai_server.calls >= 2, 5)
            time.sleep(0.3)
            return "Thirty-one years."
        return LONG_ANSWER

    openai_server.responder = responder
    openai_server.token_delay_s = 0.2
    result = ask(adapter, openai_server, QUESTION, "invoke", speculate_below=1e9).result
    returned = time.monotonic()
    assert result.route is sr.Route.RAG and result.answer == "Thirty-one years."
    assert result.latency_s < 4  # it did not wait for the speculative call
    lc_bodies = [b for b in openai_server.requests if not is_rag(last_user_text(b))]
    assert len(lc_bodies) == 1 and lc_bodies[0]["stream"] is True  # read as a stream
    (wasted,) = [s for s in result.steps if s.wasted]
    assert wasted.stage is sr.Stage.LONG_CONTEXT and wasted.usage.is_estimate
    # the request was cut: the server saw the client go away long before the 8 s stream ended
    assert wait_for(lambda: openai_server.in_flight == 0, 2.5)
    assert time.monotonic() - returned < 3
