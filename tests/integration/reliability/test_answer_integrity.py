"""Findings 6, 7 and 8 of issue #16: no truncated, empty or unverified text passes for an answer.

* 6: a RAG answer cut short (``finish_reason`` ``length`` / ``content_filter``, or a stream that
  ends without a finish reason or ``[DONE]``) is not a verdict: the call escalates with reason
  ``truncated`` and the step records the finish reason; streamed, the cut text is never left
  standing as the answer.
* 7: an empty long-context reply (``content: null``, empty ``choices``) is an error carrying the
  partial result, never "not found in the documents"; invoke and stream agree.
* 8: grounded mode with the long-context budget exhausted never returns the unverified RAG answer
  as ``answer`` (it is kept in ``unverified_answer``).

Real ``ChatOpenAI`` (through ``SelfRoute``) and LlamaIndex ``OpenAI`` (through
``SelfRouteQueryEngine``) against the loopback server, in all four call modes.
"""

from __future__ import annotations

from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._adapters import ADAPTERS, MODES, ask
from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

QUESTION = "How long did Mara Holt keep the lamp?"
CUT = "The charger needs 4"
STREAMS = ("stream", "astream")


def script(rag: Reply | str, lc: Reply | str = "In 1901.") -> Any:
    def responder(body: dict[str, Any]) -> Reply | str:
        return rag if is_rag(last_user_text(body)) else lc

    return responder


def lc_requests(server: ScriptedOpenAIServer) -> int:
    return sum(not is_rag(last_user_text(b)) for b in server.requests)


# 6 ------------------------------------------------------------------------------------------
TRUNCATIONS = [
    *(
        pytest.param(Reply(CUT, finish_reason=why), why, mode, id=f"{why}-{mode}")
        for why in ("length", "content_filter")
        for mode in MODES
    ),
    *(pytest.param(Reply(CUT, kind="cut"), "incomplete", m, id=f"cut-{m}") for m in STREAMS),
]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("reply, finish, mode", TRUNCATIONS)
def test_truncated_rag_answer_escalates(
    openai_server: ScriptedOpenAIServer, adapter: str, reply: Reply, finish: str, mode: str
) -> None:
    openai_server.responder = script(reply)
    asked = ask(adapter, openai_server, QUESTION, mode)
    result = asked.result
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason("truncated"),
        "In 1901.",
    )
    rag = result.steps[0]
    assert rag.stage is sr.Stage.RAG and rag.finish_reason == finish
    assert rag.to_dict()["finish_reason"] == finish
    assert result.steps[-1].finish_reason == "stop"
    assert result.rag_answer == CUT  # kept, as the declined text is
    if asked.shown is not None:  # streamed: the cut text may have been shown, then taken back
        assert asked.shown == "In 1901."
        assert CUT not in asked.shown
    assert lc_requests(openai_server) == 1


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("mode", MODES)
def test_a_finished_rag_answer_is_still_an_answer(
    openai_server: ScriptedOpenAIServer, adapter: str, mode: str
) -> None:
    """Control: the same text with ``finish_reason: stop`` is served from the RAG step."""
    openai_server.responder = script(Reply(CUT, finish_reason="stop"))
    asked = ask(adapter, openai_server, QUESTION, mode)
    assert (asked.result.route, asked.result.answer) == (sr.Route.RAG, CUT)
    assert lc_requests(openai_server) == 0
    if asked.shown is not None:
        assert asked.shown == CUT


# 7 ------------------------------------------------------------------------------------------
EMPTY_REPLIES = [
    *(pytest.param("null", mode, id=f"null-{mode}") for mode in MODES),
    *(pytest.param("no_choices", mode, id=f"no_choices-{mode}") for mode in ("invoke", "ainvoke")),
    *(pytest.param("no_choices", m, id=f"no_choices-{m}") for m in STREAMS),
]


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("kind, mode", EMPTY_REPLIES)
def test_empty_long_context_reply_is_an_error_with_the_partial_result(
    openai_server: ScriptedOpenAIServer, adapter: str, kind: str, mode: str
) -> None:
    openai_server.responder = script("unanswerable", Reply("ignored", kind=kind))  # type: ignore[arg-type]
    with pytest.raises(sr.LongContextError) as info:
        ask(adapter, openai_server, QUESTION, mode)
    assert "empty" in str(info.value).lower()
    partial = info.value.partial
    assert partial.answer is None and partial.abstention is None
    assert partial.rag_answer == "unanswerable" and partial.reason is sr.Reason.DECLINED
    assert partial.steps[0].usage.input_tokens > 0  # the paid RAG call is kept
    assert lc_requests(openai_server) == 1


# 8 ------------------------------------------------------------------------------------------
UNVERIFIED = 'Forty years.\nQuote: "Mara Holt kept the lamp for forty years."'


@pytest.mark.parametrize("adapter", ADAPTERS)
@pytest.mark.parametrize("mode", MODES)
def test_grounded_with_exhausted_budget_withholds_the_unverified_answer(
    openai_server: ScriptedOpenAIServer, adapter: str, mode: str
) -> None:
    openai_server.responder = script(UNVERIFIED)
    budget = sr.LongContextBudget(max_calls=1)
    assert budget.acquire(1).allowed  # the budget is spent before the call
    asked = ask(adapter, openai_server, QUESTION, mode, grounded=True, budget=budget)
    result = asked.result
    assert (result.route, result.reason) == (sr.Route.RAG, sr.Reason.OVER_BUDGET)
    assert result.abstention is sr.Abstention.OVER_BUDGET and result.abstained
    assert result.answer == "unanswerable"
    assert result.unverified_answer == "Forty years."
    assert result.verified is False
    if asked.shown is not None:
        assert "Forty" not in asked.shown
    assert lc_requests(openai_server) == 0


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_ungrounded_mode_with_exhausted_budget_keeps_its_documented_answer(
    openai_server: ScriptedOpenAIServer, adapter: str
) -> None:
    """Control: without grounding, an over-budget refusal still returns the RAG step's text."""
    openai_server.responder = script("I cannot find that in the passages.")
    budget = sr.LongContextBudget(max_calls=1)
    assert budget.acquire(1).allowed
    result = ask(adapter, openai_server, QUESTION, "invoke", budget=budget).result
    assert (result.route, result.reason) == (sr.Route.RAG, sr.Reason.OVER_BUDGET)
    assert result.answer == "I cannot find that in the passages."
