"""Streaming with sentinel sniffing: declines never leak, answers stream early, chunks add up."""

from __future__ import annotations

import functools
import operator

import pytest
from langchain_core.runnables import RunnableLambda

from langchain_selfroute import SelfRoute, SelfRouteChunk
from selfroute import Reason, Route, Stage
from tests.conformance.scenarios import BY_NAME, SCENARIOS, Scenario
from tests.unit.langchain_selfroute.fakes import ListRetriever, ScriptedChatModel, scenario_docs

DECLINES = [s for s in SCENARIOS if s.route is Route.LONG_CONTEXT and s.name != "no_chunks"]
LONG_ANSWER = (
    "Mara Holt kept the lamp at Grey Point for thirty-one years, climbing the ninety-two steps "
    "every night to trim the wick."
)


def make(
    rag_output: str, lc_output: str = "In 1901.", **kw: object
) -> tuple[SelfRoute, ScriptedChatModel]:
    scenario = BY_NAME["answered"]
    model = ScriptedChatModel(rag_output=rag_output, lc_output=lc_output, piece_chars=3)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=model,
        document=scenario.document,
        **kw,
    )
    return route, model


def text_of(chunks: list[SelfRouteChunk], stage: Stage | None = None) -> str:
    return "".join(c.text for c in chunks if stage is None or c.stage is stage)


@pytest.mark.parametrize("scenario", DECLINES, ids=[s.name for s in DECLINES])
def test_declined_rag_text_never_streams(scenario: Scenario) -> None:
    route, model = make(scenario.rag_output, "Mara Holt was born in 1901.")
    chunks = list(route.stream(scenario.question))
    assert text_of(chunks, Stage.RAG) == ""
    assert not any(c.retracted for c in chunks)
    assert text_of(chunks) == "Mara Holt was born in 1901."
    assert chunks[0].route is Route.LONG_CONTEXT
    # the RAG call really streamed its decline, piece by piece
    assert [c[0] for c in model.calls] == ["sync_stream", "sync_stream"]


@pytest.mark.parametrize("scenario", DECLINES, ids=[s.name for s in DECLINES])
async def test_declined_rag_text_never_astreams(scenario: Scenario) -> None:
    route, _ = make(scenario.rag_output, "Mara Holt was born in 1901.")
    chunks = [c async for c in route.astream(scenario.question)]
    assert text_of(chunks, Stage.RAG) == ""
    assert text_of(chunks) == "Mara Holt was born in 1901."


def test_answer_streams_while_the_model_is_still_writing() -> None:
    route, model = make(LONG_ANSWER)
    total_pieces = len(LONG_ANSWER) // 3 + 2  # text pieces plus the final usage chunk
    seen_at: list[int] = []
    chunks = []
    for chunk in route.stream("How long did Mara Holt keep the lamp?"):
        if chunk.text and not seen_at:
            seen_at.append(model.emitted)
        chunks.append(chunk)
    assert seen_at and seen_at[0] < total_pieces // 2, (seen_at, total_pieces)
    assert chunks[0].route is Route.RAG and chunks[0].reason is Reason.ANSWERED
    assert text_of(chunks, Stage.RAG) == LONG_ANSWER
    assert chunks[-1].output is not None and chunks[-1].output.answer == LONG_ANSWER


async def test_answer_astreams_while_the_model_is_still_writing() -> None:
    route, model = make(LONG_ANSWER)
    first_at = None
    chunks = []
    async for chunk in route.astream("How long did Mara Holt keep the lamp?"):
        if chunk.text and first_at is None:
            first_at = model.emitted
        chunks.append(chunk)
    assert first_at is not None and first_at < len(LONG_ANSWER) // 6
    assert text_of(chunks) == LONG_ANSWER


def test_refusal_that_looked_like_an_answer_is_retracted() -> None:
    refusal = "Mara Holt's birth year is not mentioned in the passages."
    route, _ = make(refusal, "She was born in 1901.")
    chunks = list(route.stream("When was Mara Holt born?"))
    leaked = text_of(chunks, Stage.RAG)
    assert leaked and refusal.startswith(leaked)  # some text went out before the refusal showed
    (retraction,) = [c for c in chunks if c.retracted]
    # the retraction rides on the first long-context text (no text-less chunk is sent)
    assert retraction.route is Route.LONG_CONTEXT and retraction.stage is Stage.LONG_CONTEXT
    assert retraction.text and "She was born in 1901.".startswith(retraction.text)
    # chunks are mappings (equal when their keys are): find the retraction by identity
    after = chunks[next(i for i, c in enumerate(chunks) if c is retraction) :]
    assert text_of(after) == "She was born in 1901."
    total = functools.reduce(operator.add, chunks)
    assert total.text == "She was born in 1901."  # adding chunks drops the retracted text
    assert total.route is Route.LONG_CONTEXT and total.reason is Reason.REFUSED
    assert total.output is not None and total.output.reason is Reason.REFUSED


def test_strict_mode_streams_a_natural_refusal_as_the_answer() -> None:
    refusal = "The text does not mention when Mara Holt was born."
    route, model = make(refusal, strict=True)
    chunks = list(route.stream("When was Mara Holt born?"))
    assert text_of(chunks) == refusal
    assert chunks[-1].output is not None and chunks[-1].output.route is Route.RAG
    assert len(model.calls) == 1


def test_last_chunk_carries_usage_and_counterfactual() -> None:
    route, _ = make(LONG_ANSWER)
    chunks = list(route.stream("How long did Mara Holt keep the lamp?"))
    out = chunks[-1].output
    assert out is not None and chunks[-1].is_final
    assert out.usage.input_tokens == 120 and out.usage.source == "provider"
    assert out.long_context_tokens and out.long_context_tokens > 120
    assert out.token_ratio == pytest.approx(120 / out.long_context_tokens)


def test_stream_without_provider_usage_is_estimated_and_labelled() -> None:
    route, model = make(LONG_ANSWER)
    model.report_usage = False
    chunks = list(route.stream("How long did Mara Holt keep the lamp?"))
    out = chunks[-1].output
    assert out is not None
    assert out.usage.source in ("tokenizer", "heuristic")
    assert out.usage.input_tokens > 0 and out.usage.output_tokens > 0


def test_transform_joins_a_streamed_question() -> None:
    route, _ = make(LONG_ANSWER)
    upstream = RunnableLambda(lambda q: q.upper()) | route
    chunks = list(upstream.stream("how long did mara holt keep the lamp?"))
    assert chunks[-1].output is not None
    assert chunks[-1].output.question == "HOW LONG DID MARA HOLT KEEP THE LAMP?"
    joined = list(route.transform(iter(["How long did ", "Mara Holt keep the lamp?"])))
    assert joined[-1].output is not None
    assert joined[-1].output.question == "How long did Mara Holt keep the lamp?"


def test_chunk_addition_rules() -> None:
    a = SelfRouteChunk(route=Route.RAG, reason=Reason.ANSWERED)
    b = SelfRouteChunk(route=Route.RAG, text="Thirty", stage=Stage.RAG)
    c = SelfRouteChunk(route=Route.LONG_CONTEXT, retracted=True)
    d = SelfRouteChunk(route=Route.LONG_CONTEXT, text="1901", stage=Stage.LONG_CONTEXT)
    assert (a + b).text == "Thirty" and (a + b).reason is Reason.ANSWERED
    merged = a + b + c + d
    assert merged.text == "1901" and merged.route is Route.LONG_CONTEXT
    assert merged.reason is None and merged.retracted
    with pytest.raises(TypeError):
        _ = a + "text"  # type: ignore[operator]


LATE_REFUSAL = "Mara Holt's birth year is not mentioned in the passages."


def test_a_stream_hold_keeps_a_late_refusal_from_showing() -> None:
    route, _ = make(LATE_REFUSAL, "She was born in 1901.", stream_hold_chars=80)
    assert route.config.stream_hold_chars == 80
    chunks = list(route.stream("When was Mara Holt born?"))
    assert text_of(chunks, Stage.RAG) == "" and not any(c.retracted for c in chunks)
    assert text_of(chunks) == "She was born in 1901."
    assert chunks[-1].output is not None and chunks[-1].output.reason is Reason.REFUSED


async def test_a_stream_hold_keeps_a_late_refusal_from_astreaming() -> None:
    route, _ = make(LATE_REFUSAL, "She was born in 1901.", stream_hold_chars=80)
    chunks = [c async for c in route.astream("When was Mara Holt born?")]
    assert text_of(chunks, Stage.RAG) == "" and not any(c.retracted for c in chunks)
    events = [e async for e in route.astream_events("When was Mara Holt born?", version="v2")]
    streamed = [
        e["data"]["chunk"]
        for e in events
        if e["event"] == "on_chain_stream" and e["name"] == "SelfRoute"
    ]
    assert not any(c.retracted for c in streamed)
    assert "".join(c.text for c in streamed) == "She was born in 1901."


async def test_a_stream_hold_still_streams_an_answer() -> None:
    answer = "Mara Holt kept the lamp for thirty-one years. She climbed the steps every night."
    route, model = make(answer, stream_hold_chars=80)
    first_at = None
    chunks = []
    async for chunk in route.astream("How long did Mara Holt keep the lamp?"):
        if chunk.text and first_at is None:
            first_at = model.emitted
        chunks.append(chunk)
    assert text_of(chunks) == answer
    # released once the first sentence ended (pieces of 3 characters), before the model finished
    assert first_at is not None and answer.index(". ") < 3 * first_at < len(answer) - 3


GERMAN_DECLINE = "Keine Angaben zu ihrem Geburtsjahr in den Textstellen. Nur ihre Laufbahn."


def test_a_decline_detector_is_a_setting_and_its_declines_never_stream() -> None:
    from tests.conformance.scenarios import german_declines

    route, _ = make(GERMAN_DECLINE, "She was born in 1901.", decline_detector=german_declines)
    assert route.config.decline_detector is german_declines
    chunks = list(route.stream("When was Mara Holt born?"))
    assert text_of(chunks, Stage.RAG) == "" and not any(c.retracted for c in chunks)
    assert text_of(chunks) == "She was born in 1901."
    assert chunks[-1].output is not None and chunks[-1].output.reason is Reason.REFUSED
    plain, _ = make(GERMAN_DECLINE, "She was born in 1901.")
    assert plain.invoke("When was Mara Holt born?").route is Route.RAG  # the rules alone serve it


async def test_a_decline_detector_inside_a_chain_through_every_call_style() -> None:
    from langchain_core.runnables import RunnablePassthrough

    from tests.conformance.scenarios import german_declines

    route, _ = make(GERMAN_DECLINE, "She was born in 1901.", decline_detector=german_declines)
    chain = RunnablePassthrough.assign(result=route) | RunnableLambda(
        lambda d: (d["result"].answer, d["result"].route)
    )
    inp = {"question": "When was Mara Holt born?"}
    want = ("She was born in 1901.", Route.LONG_CONTEXT)
    assert chain.invoke(inp) == want
    assert chain.batch([inp, inp]) == [want, want]
    assert await chain.ainvoke(inp) == want
    assert await chain.abatch([inp]) == [want]
    events = [e async for e in route.astream_events(inp, version="v2")]
    streamed = [
        e["data"]["chunk"]
        for e in events
        if e["event"] == "on_chain_stream" and e["name"] == "SelfRoute"
    ]
    assert "".join(c.text for c in streamed) == "She was born in 1901."
    assert not any(c.retracted for c in streamed)


def test_a_decline_detector_that_is_not_callable_is_refused() -> None:
    from selfroute import ConfigurationError

    with pytest.raises(ConfigurationError, match="decline_detector must be a callable"):
        make("In 1901.", decline_detector="keine angaben")
