"""SelfRoute with the real ChatOpenAI and ChatGoogleGenerativeAI clients against loopback servers.

Usage, model names and streamed text come from each client's own parsing of the provider's wire
format (OpenAI chat completions with SSE and ``include_usage``; Gemini ``generateContent`` and
``streamGenerateContent?alt=sse`` with ``usageMetadata``).
"""

from __future__ import annotations

import functools
import operator

import pytest

import selfroute as sr
from langchain_selfroute import SelfRoute, SelfRouteChunk
from selfroute import Reason, Route, Stage
from tests.conformance.scenarios import (
    ALL_SCENARIOS,
    BY_NAME,
    DOCUMENT,
    LC_MODEL,
    RAG_MODEL,
    Scenario,
    check,
)
from tests.integration.langchain_selfroute.helpers import (
    Provider,
    prompts_sent,
    scripted,
    stage_of,
)
from tests.unit.langchain_selfroute.fakes import ListRetriever, scenario_docs

pytestmark = pytest.mark.integration

ANSWERED, DECLINED = BY_NAME["answered"], BY_NAME["sentinel"]


def by_question(prompt: str) -> str:
    """The RAG model answers the lamp question and declines the birth question."""
    return "Thirty-one years." if "keep the lamp" in prompt else "unanswerable"


def build(provider: Provider, **kwargs: object) -> SelfRoute:
    params: dict[str, object] = {
        "retriever": ListRetriever(docs=scenario_docs(ANSWERED)),
        "llm": provider.llm(),
        "document": DOCUMENT,
        **kwargs,
    }
    return SelfRoute(**params)  # type: ignore[arg-type]


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=[s.name for s in ALL_SCENARIOS])
def test_conformance_scenarios_through_the_real_client(
    provider: Provider, scenario: Scenario
) -> None:
    provider.script(scripted(scenario.rag_output, scenario.lc_output))
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=provider.llm(),
        document=scenario.document,
        **scenario.settings,
    )
    out = route.invoke(scenario.question)
    check(out.result, scenario)
    assert [s.model for s in out.steps] == [
        RAG_MODEL if s.stage is Stage.RAG else LC_MODEL for s in out.steps
    ]


def test_invoke_both_routes_with_provider_usage(provider: Provider) -> None:
    provider.script(scripted(by_question))
    route = build(provider)
    rag = route.invoke(ANSWERED.question)
    assert (rag.route, rag.reason, rag.answer) == (Route.RAG, Reason.ANSWERED, "Thirty-one years.")
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in rag.steps] == [(120, 6)]
    assert rag.usage.source == "provider" and rag.steps[0].model == RAG_MODEL
    assert rag.long_context_tokens and rag.token_ratio == 120 / rag.long_context_tokens
    lc = route.invoke(DECLINED.question)
    assert (lc.route, lc.reason, lc.answer) == (Route.LONG_CONTEXT, Reason.DECLINED, "In 1901.")
    assert [(s.usage.input_tokens, s.usage.output_tokens) for s in lc.steps] == [
        (120, 6),
        (1500, 9),
    ]
    assert lc.long_context_tokens == 1500 and lc.long_context_tokens_source == "provider"
    sent = prompts_sent(provider.server)
    assert [stage_of(p) for p in sent] == ["rag", "rag", "long_context"]
    assert "Mara Holt retired to Dunmore" in sent[-1]  # the whole document went to the LC call


async def test_ainvoke_both_routes(provider: Provider) -> None:
    provider.script(scripted(by_question))
    route = build(provider)
    rag = await route.ainvoke(ANSWERED.question)
    lc = await route.ainvoke({"question": DECLINED.question})
    assert rag.route is Route.RAG and rag.usage.input_tokens == 120
    assert lc.route is Route.LONG_CONTEXT and lc.usage.input_tokens == 1620
    assert provider.server.calls == 3


def test_batch_and_abatch(provider: Provider) -> None:
    provider.script(scripted(by_question))
    route = build(provider)
    questions = [ANSWERED.question, DECLINED.question, ANSWERED.question]
    outs = route.batch(questions, config={"max_concurrency": 2})
    assert [o.route for o in outs] == [Route.RAG, Route.LONG_CONTEXT, Route.RAG]
    assert sum(o.usage.input_tokens for o in outs) == 120 * 3 + 1500
    assert provider.server.calls == 4


async def test_abatch(provider: Provider) -> None:
    provider.script(scripted(by_question))
    route = build(provider)
    outs = await route.abatch([DECLINED.question, ANSWERED.question], {"max_concurrency": 2})
    assert [o.answer for o in outs] == ["In 1901.", "Thirty-one years."]


@pytest.mark.parametrize("question", [ANSWERED.question, DECLINED.question])
def test_stream_both_routes(provider: Provider, question: str) -> None:
    long_answer = "Mara Holt kept the lamp at Grey Point for thirty-one years."
    provider.script(
        scripted(lambda p: long_answer if "keep the lamp" in p else "Unanswerable.", "In 1901.")
    )
    route = build(provider)
    chunks = list(route.stream(question))
    assert all(isinstance(c, SelfRouteChunk) for c in chunks)
    out = chunks[-1].output
    assert out is not None
    total = functools.reduce(operator.add, chunks)
    if question == ANSWERED.question:
        assert chunks[0].route is Route.RAG and total.text == long_answer
        assert len([c for c in chunks if c.text]) > 1  # it really streamed, piece by piece
        assert [s.usage.input_tokens for s in out.steps] == [120]
    else:
        assert chunks[0].route is Route.LONG_CONTEXT and total.text == "In 1901."
        assert not [c for c in chunks if c.stage is Stage.RAG and c.text]
        assert [s.usage.input_tokens for s in out.steps] == [120, 1500]
    assert out.usage.source == "provider"  # the usage of the streamed calls came from the API


async def test_astream_declined_text_never_leaks(provider: Provider) -> None:
    provider.script(scripted("Unanswerable. The passages do not say.", "In 1901."))
    route = build(provider)
    chunks = [c async for c in route.astream(DECLINED.question)]
    assert "".join(c.text for c in chunks) == "In 1901."
    assert chunks[-1].output is not None and chunks[-1].output.usage.output_tokens == 15


def test_streamed_requests_ask_for_usage(provider: Provider) -> None:
    provider.script(scripted(by_question))
    list(build(provider).stream(DECLINED.question))
    paths = provider.server.paths
    if provider.name == "openai":
        bodies = provider.server.requests
        assert all(b["stream"] and b["stream_options"] == {"include_usage": True} for b in bodies)
    else:
        assert all(":streamGenerateContent" in p for p in paths), paths


def test_cheap_and_strong_models(provider: Provider) -> None:
    provider.script(scripted(by_question, rag_model=None, lc_model=None))
    cheap = provider.llm(model="cheap-model")
    strong = provider.llm(model="strong-model")
    prices = sr.PriceTable({"cheap-model": (0.15, 0.6), "strong-model": (2.5, 10.0)})
    route = build(provider, llm=cheap, long_context_llm=strong, prices=prices)
    out = route.invoke(DECLINED.question)
    assert [s.model for s in out.steps] == ["cheap-model", "strong-model"]
    assert out.cost == pytest.approx((120 * 0.15 + 6 * 0.6 + 1500 * 2.5 + 9 * 10.0) / 1e6)
    rag = route.invoke(ANSWERED.question)
    assert rag.long_context_cost is not None and rag.long_context_cost > rag.cost  # type: ignore[operator]


def test_cached_tokens_are_read(provider: Provider) -> None:
    provider.script(scripted(by_question, cached_tokens=64))
    out = build(provider).invoke(ANSWERED.question)
    assert out.steps[0].usage.cached_input_tokens == 64


def test_provider_errors(provider: Provider) -> None:
    provider.script(scripted("unanswerable", status=500))
    route = build(provider)
    with pytest.raises(sr.LongContextError):
        route.invoke(DECLINED.question)

    def rag_fails(body: dict[str, object]) -> object:
        from tests.support._loopback import Reply, last_user_text

        if stage_of(last_user_text(body)) == "rag":
            return Reply("", status=429)
        return Reply("In 1901.", prompt_tokens=1500, completion_tokens=9)

    provider.script(rag_fails)  # type: ignore[arg-type]
    out = route.invoke(DECLINED.question)
    assert out.reason is Reason.RAG_ERROR and out.answer == "In 1901." and out.error
