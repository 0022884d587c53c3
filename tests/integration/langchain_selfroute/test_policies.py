"""The routing policies with the real ChatOpenAI and ChatGoogleGenerativeAI clients against the
loopback servers: structured verdicts (JSON-schema structured output on the wire), grounded mode,
the k-ladder and pre-routing."""

from __future__ import annotations

import functools
import json
import operator
from typing import Any

import pytest

import selfroute as sr
from langchain_selfroute import SelfRoute, create_selfroute_tool
from langchain_selfroute._tool import NOT_FOUND
from selfroute import Abstention, Reason, Route, Stage
from tests.conformance.scenarios import BY_NAME, DOCUMENT, LC_MODEL, RAG_MODEL
from tests.integration.langchain_selfroute.helpers import (
    Provider,
    prompts_sent,
    scripted,
    stage_of,
)
from tests.support._loopback import last_user_text
from tests.unit.langchain_selfroute.fakes import ListRetriever, scenario_docs

pytestmark = pytest.mark.integration

LAMP = "How long did Mara Holt keep the lamp?"
BORN = "When was Mara Holt born?"
YES = '{"answerable": true, "answer": "Thirty-one years."}'
NO = '{"answerable": false, "answer": ""}'
QUOTE_31 = 'Quote: "Mara Holt, kept the lamp at Grey Point for thirty-one years."'
QUOTE_BORN = 'Quote: "She was born in Dunmore in 1901"'
FABRICATED = 'Shenandoah.\nQuote: "Mara Holt sang Shenandoah every night on the steps."'


def build(provider: Provider, **kwargs: Any) -> SelfRoute:
    params: dict[str, Any] = {
        "retriever": ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
        "llm": provider.llm(),
        "document": DOCUMENT,
        **kwargs,
    }
    return SelfRoute(**params)


def asked_for_the_schema(provider: Provider, body: dict[str, Any]) -> bool:
    """Whether a request asked for the ``rag_verdict`` JSON schema (response format or tool)."""
    if provider.name == "openai":
        fmt = body.get("response_format") or {}
        tools = [t.get("function", {}).get("name") for t in body.get("tools") or []]
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
        return (
            fmt.get("type") == "json_schema"
            and fmt["json_schema"].get("name") == "rag_verdict"
            and schema.get("required") == ["answerable", "answer"]
        ) or "rag_verdict" in tools
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
    return config.get("responseMimeType") == "application/json" and "answerable" in json.dumps(
        schema
    )


def rag_bodies(provider: Provider) -> list[dict[str, Any]]:
    return [b for b in provider.server.requests if stage_of(last_user_text(b)) == "rag"]


# structured verdicts ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "question", "route_taken", "answer"),
    [
        (YES, LAMP, Route.RAG, "Thirty-one years."),
        (NO, BORN, Route.LONG_CONTEXT, "In 1901."),
    ],
    ids=["answerable", "not-answerable"],
)
def test_structured_verdict_end_to_end(
    provider: Provider, reply: str, question: str, route_taken: Route, answer: str
) -> None:
    provider.script(scripted(reply))
    out = build(provider, verdict="structured").invoke(question)
    assert (out.route, out.answer) == (route_taken, answer)
    rag = out.steps[0]
    assert rag.stage is Stage.RAG and rag.structured and rag.model == RAG_MODEL
    assert (rag.usage.input_tokens, rag.usage.output_tokens, rag.usage.source) == (
        120,
        6,
        "provider",
    )
    if route_taken is Route.LONG_CONTEXT:
        assert out.reason is Reason.DECLINED and out.rag_verdict == "sentinel"
        assert [s.model for s in out.steps] == [RAG_MODEL, LC_MODEL]
    (body,) = rag_bodies(provider)
    assert asked_for_the_schema(provider, body), body
    prompt = last_user_text(body)
    assert "answerable" in prompt and '"unanswerable"' not in prompt
    lc_bodies = [b for b in provider.server.requests if b not in rag_bodies(provider)]
    assert not any(asked_for_the_schema(provider, b) for b in lc_bodies)


async def test_structured_verdict_async_and_streamed(provider: Provider) -> None:
    provider.script(scripted(lambda p: YES if "keep the lamp" in p else NO))
    route = build(provider, verdict="auto")
    rag = await route.ainvoke(LAMP)
    lc = await route.ainvoke(BORN)
    assert (rag.route, rag.answer) == (Route.RAG, "Thirty-one years.")
    assert (lc.route, lc.answer) == (Route.LONG_CONTEXT, "In 1901.")
    assert rag.steps[0].structured and lc.steps[0].structured
    chunks = [c async for c in route.astream(BORN)]
    total = functools.reduce(operator.add, chunks)
    assert total.text == "In 1901." and total.output is not None
    assert total.output.route is Route.LONG_CONTEXT
    assert [s.usage.input_tokens for s in total.output.steps] == [120, 1500]
    streamed_rag = functools.reduce(operator.add, route.stream(LAMP))
    assert streamed_rag.text == "Thirty-one years." and streamed_rag.output.route is Route.RAG
    assert all(asked_for_the_schema(provider, b) for b in rag_bodies(provider))


@pytest.mark.parametrize(
    "reply", ['{"answerable": tru', "Thirty-one years.", '{"answer": "maybe"}']
)
def test_garbled_structured_verdict_fails_safe(provider: Provider, reply: str) -> None:
    provider.script(scripted(reply))
    out = build(provider, verdict="structured").invoke(LAMP)
    assert (out.route, out.reason, out.rag_verdict) == (
        Route.LONG_CONTEXT,
        Reason.EMPTY_OUTPUT,
        "garbled",
    )
    assert out.answer == "In 1901."


# grounded mode ------------------------------------------------------------------------------
def test_grounded_long_context_fabrication_abstains(openai: Provider) -> None:
    openai.script(scripted("unanswerable", FABRICATED))
    route = build(openai, grounded=True)
    out = route.invoke("What was Mara Holt's favourite song?")
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.DECLINED)
    assert out.abstained and out.abstention is Abstention.UNGROUNDED and out.verified is False
    assert out.answer == "unanswerable" and "Shenandoah" in (out.unverified_answer or "")
    assert out.citations and not out.citations[0].found
    sent = prompts_sent(openai.server)
    assert all(p.startswith(sr.GROUNDING_PREFIX) for p in sent)
    # Streamed, the fabricated answer never reaches the user.
    chunks = list(route.stream("What was Mara Holt's favourite song?"))
    assert "".join(c.text for c in chunks) == "unanswerable"
    assert "Shenandoah" not in functools.reduce(operator.add, chunks).text
    # An agent reading the tool's content is told plainly.
    tool = create_selfroute_tool(route)
    content = tool.invoke({"question": "What was Mara Holt's favourite song?"})
    assert content.startswith(NOT_FOUND)


def test_grounded_answers_are_verified(openai: Provider) -> None:
    openai.script(
        scripted(
            lambda p: f"Thirty-one years.\n{QUOTE_31}" if "keep the lamp" in p else "unanswerable",
            f"In 1901.\n{QUOTE_BORN}",
        )
    )
    route = build(openai, grounded=True)
    rag = route.invoke(LAMP)
    assert (rag.route, rag.answer, rag.verified) == (Route.RAG, "Thirty-one years.", True)
    assert rag.citations[0].found and rag.citations[0].source_index == 0
    lc = route.invoke(BORN)
    assert (lc.route, lc.answer, lc.verified) == (Route.LONG_CONTEXT, "In 1901.", True)
    assert not lc.abstained and not lc.disputed
    start, end = lc.citations[0].start, lc.citations[0].end
    assert start is not None and end is not None


def test_grounded_fabricated_rag_quote_escalates(openai: Provider) -> None:
    openai.script(
        scripted(
            'Forty years.\nQuote: "Mara Holt kept the lamp for forty years."',
            f"Thirty-one years.\n{QUOTE_31}",
        )
    )
    out = build(openai, grounded=True).invoke(LAMP)
    assert (out.route, out.reason, out.answer) == (
        Route.LONG_CONTEXT,
        Reason.UNGROUNDED,
        "Thirty-one years.",
    )
    assert out.verified is True


# k-ladder and pre-routing -------------------------------------------------------------------
def test_k_ladder_and_pre_route_with_the_real_client(openai: Provider) -> None:
    openai.script(scripted("unanswerable", "A keeper's life at Grey Point."))
    route = build(openai, k=1, k_ladder=(2,), pre_route=sr.PreRoute())
    out = route.invoke(BORN)
    assert [(s.stage, s.k) for s in out.steps] == [
        (Stage.RAG, 1),
        (Stage.RAG, 2),
        (Stage.LONG_CONTEXT, None),
    ]
    assert [stage_of(p) for p in prompts_sent(openai.server)] == ["rag", "rag", "long_context"]
    openai.server.reset()
    out = route.invoke("Summarize the whole document.")
    assert (out.route, out.reason) == (Route.LONG_CONTEXT, Reason.GLOBAL_QUESTION)
    assert [stage_of(p) for p in prompts_sent(openai.server)] == ["long_context"]
