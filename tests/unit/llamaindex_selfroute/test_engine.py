"""SelfRouteQueryEngine behaviour beyond the conformance scenarios."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.prompts import PromptTemplate
from llama_index.core.schema import MetadataMode, QueryBundle

import selfroute as sr
from llamaindex_selfroute import SelfRouteQueryEngine, get_route_result
from tests.conformance.scenarios import BY_NAME, DOCUMENT, LC_USAGE, PASSAGES, RAG_USAGE
from tests.unit.llamaindex_selfroute._scripted import (
    SYNC_METHODS,
    ScriptedLLM,
    ScriptedRetriever,
    make_node,
    scenario_parts,
)

QUESTION = "When was Mara Holt born?"


def _engine(rag_output="unanswerable", lc_output="In 1901.", **kwargs):
    retriever = kwargs.pop("retriever", None) or ScriptedRetriever([make_node(t) for t in PASSAGES])
    rag = kwargs.pop("rag", None) or ScriptedLLM(reply=rag_output, usage=RAG_USAGE, model="cheap")
    lc = kwargs.pop("lc", None) or ScriptedLLM(reply=lc_output, usage=LC_USAGE, model="strong")
    kwargs.setdefault("long_context", DOCUMENT)
    return SelfRouteQueryEngine(retriever, rag, lc, **kwargs), retriever, rag, lc


# -- response --------------------------------------------------------------------------------
def test_response_sources_and_serializable_metadata() -> None:
    engine, *_ = _engine(rag_output="Thirty-one years.")
    response = engine.query("How long did Mara Holt keep the lamp?")
    result = get_route_result(response)
    assert result.route is sr.Route.RAG
    # the source nodes are the retriever's own NodeWithScore objects, in rank order
    assert [n.node.get_content() for n in response.source_nodes] == list(PASSAGES)
    assert response.source_nodes[0].node.ref_doc_id == "doc-1"
    data = json.loads(json.dumps(response.metadata["selfroute"]))
    assert data["route"] == "rag"
    assert data["usage_by_stage"]["rag"]["input_tokens"] == RAG_USAGE.input_tokens
    assert data["long_context_tokens"] == result.long_context_tokens > 0
    assert data["token_ratio"] == pytest.approx(result.token_ratio)
    assert str(response) == "Thirty-one years."


def test_long_context_route_uses_the_strong_llm() -> None:
    engine, _, rag, lc = _engine()
    result = get_route_result(engine.query(QUESTION))
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "In 1901.",
    )
    assert result.rag_answer == "unanswerable"
    assert [s.model for s in result.steps] == ["cheap", "strong"]
    assert "Document:" in lc.prompts[0] and DOCUMENT.strip() in lc.prompts[0]
    assert "Passage:" in rag.prompts[0] and "Passage:" not in lc.prompts[0]
    assert 'write "unanswerable"' in rag.prompts[0]
    assert result.stage_usage("long_context").input_tokens == LC_USAGE.input_tokens


def test_get_route_result_rejects_foreign_responses() -> None:
    from llama_index.core.base.response.schema import Response

    with pytest.raises(sr.SelfRouteError, match="carries no Self-Route result"):
        get_route_result(Response("x", metadata={}))


def test_usage_estimated_and_labelled_when_not_reported() -> None:
    rag = ScriptedLLM(reply="unanswerable", usage=None)
    lc = ScriptedLLM(reply="In 1901.", usage=None)
    engine, *_ = _engine(rag=rag, lc=lc)
    result = get_route_result(engine.query(QUESTION))
    assert [s.usage.source for s in result.steps] == ["tokenizer", "tokenizer"]
    assert all(s.usage.input_tokens > 0 for s in result.steps)
    assert result.usage.is_estimate


# -- async never blocks ----------------------------------------------------------------------
async def test_aquery_is_truly_async() -> None:
    scenario = BY_NAME["sentinel"]
    retriever, rag, lc = scenario_parts(scenario, delay_s=0.02)
    engine = SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document)
    ticks = 0
    stop = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0.002)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    response = await engine.aquery(scenario.question)
    stop.set()
    await task
    assert get_route_result(response).route is sr.Route.LONG_CONTEXT
    # the loop kept running while the retriever and both LLM calls awaited
    assert ticks - before >= 3
    assert retriever.calls == ["aretrieve"]
    assert rag.calls == ["achat"] and lc.calls == ["achat"]
    assert not set(SYNC_METHODS) & set(rag.calls + lc.calls)


async def test_concurrent_aqueries_overlap() -> None:
    scenario = BY_NAME["answered"]
    retriever, rag, lc = scenario_parts(scenario, delay_s=0.05)
    engine = SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document)
    responses = await asyncio.gather(
        *(engine.aquery(f"{scenario.question} #{i}") for i in range(5))
    )
    assert [get_route_result(r).answer for r in responses] == [scenario.answer] * 5
    assert rag.calls == ["achat"] * 5


# -- settings --------------------------------------------------------------------------------
def test_route_config_settings_as_keywords() -> None:
    engine, _, rag, _ = _engine(rag_output="Thirty-one years.", k=1, strict=True)
    assert engine.config.k == 1 and engine.config.strict is True
    result = get_route_result(engine.query("How long?"))
    assert [p.text for p in result.sources] == [PASSAGES[0]]
    assert PASSAGES[1] not in rag.prompts[0]


def test_unknown_setting_is_named() -> None:
    with pytest.raises(sr.ConfigurationError, match="similarity_topk"):
        _engine(similarity_topk=3)


def test_bad_arguments() -> None:
    with pytest.raises(sr.ConfigurationError, match="BaseRetriever"):
        SelfRouteQueryEngine(object(), ScriptedLLM())  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="LLM"):
        SelfRouteQueryEngine(ScriptedRetriever(), object())  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="k must be"):
        _engine(k=0)
    with pytest.raises(sr.InvalidInputError, match="holds no text"):
        _engine(long_context="   ")


def test_long_context_window_defaults_to_the_llm_window() -> None:
    lc = ScriptedLLM(reply="In 1901.", window=32_000, model="strong")
    engine, *_ = _engine(lc=lc)
    assert engine.config.long_context_window == 32_000
    assert engine.config.long_context_model == "strong"
    engine, *_ = _engine(long_context_window=None)
    assert engine.config.long_context_window is None
    engine, *_ = _engine(config=sr.RouteConfig(long_context_window=1000))
    assert engine.config.long_context_window == 1000


def test_long_context_is_fitted_to_a_small_window() -> None:
    lc = ScriptedLLM(reply="In 1901.", window=260)
    engine, _, _, lc = _engine(lc=lc, answer_tokens=20, chunk_words=40)
    result = get_route_result(engine.query(QUESTION))
    assert result.context["truncated"] is True
    assert result.context["tokens"] < result.context["original_tokens"]
    assert "[...]" in lc.prompts[0]


def test_invalid_question() -> None:
    engine, retriever, rag, _ = _engine()
    with pytest.raises(sr.InvalidInputError, match="empty"):
        engine.query("   ")
    assert retriever.calls == [] and rag.calls == []


def test_query_bundle_with_custom_embedding_reaches_the_retriever() -> None:
    engine, retriever, *_ = _engine(rag_output="Thirty-one years.")
    bundle = QueryBundle("How long?", embedding=[0.1, 0.2])
    engine.query(bundle)
    assert retriever.bundles[0] is bundle


def test_system_prompt_of_the_llm_is_kept() -> None:
    rag = ScriptedLLM(reply="unanswerable", system_prompt="Be terse.")
    engine, *_ = _engine(rag=rag)
    engine.query(QUESTION)
    assert [m.role.value for m in rag.messages[0]] == ["system", "user"]
    assert rag.messages[0][0].content == "Be terse."


def test_node_postprocessors_apply() -> None:
    retriever = ScriptedRetriever(
        [make_node(PASSAGES[0], score=0.9), make_node(PASSAGES[1], score=0.1)]
    )
    engine, _, rag, _ = _engine(
        retriever=retriever, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)]
    )
    result = get_route_result(engine.query(QUESTION))
    assert [p.text for p in result.sources] == [PASSAGES[0]]
    assert engine.retrieve(QueryBundle(QUESTION))[0].score == 0.9
    # a cut-off that removes everything goes straight to long context
    engine, _, rag, _ = _engine(
        retriever=retriever, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.95)]
    )
    result = get_route_result(engine.query(QUESTION))
    assert result.reason is sr.Reason.NO_CHUNKS and rag.calls == []


def test_metadata_mode_controls_what_the_rag_step_sees() -> None:
    retriever = ScriptedRetriever([make_node(PASSAGES[0], metadata={"title": "Grey Point log"})])
    engine, _, rag, _ = _engine(retriever=retriever)
    engine.query(QUESTION)
    assert "Grey Point log" not in rag.prompts[0]
    engine, _, rag, _ = _engine(retriever=retriever, metadata_mode=MetadataMode.LLM)
    engine.query(QUESTION)
    assert "title: Grey Point log" in rag.prompts[0]


async def test_retrieve_and_aretrieve() -> None:
    engine, retriever, rag, _ = _engine(k=1)
    assert [n.node.get_content() for n in engine.retrieve(QueryBundle("q"))] == [PASSAGES[0]]
    assert [n.node.get_content() for n in await engine.aretrieve(QueryBundle("q"))] == [PASSAGES[0]]
    assert retriever.calls == ["retrieve", "aretrieve"] and rag.calls == []


# -- long context sources --------------------------------------------------------------------
def test_long_context_function_gets_question_and_nodes() -> None:
    seen = {}

    def loader(question, nodes):
        seen["args"] = (question, [n.node.ref_doc_id for n in nodes])
        return [DOCUMENT]

    engine, *_ = _engine(long_context=loader)
    assert get_route_result(engine.query(QUESTION)).answer == "In 1901."
    assert seen["args"] == (QUESTION, ["doc-1", "doc-1"])


async def test_async_long_context_function_is_awaited() -> None:
    calls = []

    async def aloader(question, nodes):
        calls.append("async")
        await asyncio.sleep(0)
        return DOCUMENT

    def loader(question, nodes):
        calls.append("sync")
        return DOCUMENT

    engine, *_ = _engine(long_context=loader, along_context=aloader)
    await engine.aquery(QUESTION)
    engine.query(QUESTION)
    # the counterfactual is priced only on the RAG route; here each query loads once
    assert calls == ["async", "sync"]


def test_no_long_context_available_is_a_clear_error() -> None:
    engine, *_ = _engine(long_context=None)
    assert engine.long_context_source is None
    with pytest.raises(sr.LongContextError, match="no long context is available") as err:
        engine.query(QUESTION)
    assert err.value.partial.rag_answer == "unanswerable"
    assert err.value.partial.usage.input_tokens == RAG_USAGE.input_tokens


# -- failures --------------------------------------------------------------------------------
def test_long_context_failure_keeps_the_partial_result() -> None:
    lc = ScriptedLLM(fail=RuntimeError("provider down"))
    engine, *_ = _engine(lc=lc)
    with pytest.raises(sr.LongContextError, match="provider down") as err:
        engine.query(QUESTION)
    assert err.value.partial.reason is sr.Reason.DECLINED
    assert err.value.partial.stage_usage("rag").input_tokens == RAG_USAGE.input_tokens


@pytest.mark.parametrize("use_async", [False, True])
async def test_rag_failure_escalates(use_async: bool) -> None:
    rag = ScriptedLLM(fail=TimeoutError("slow"))
    engine, *_ = _engine(rag=rag)
    response = await engine.aquery(QUESTION) if use_async else engine.query(QUESTION)
    result = get_route_result(response)
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.RAG_ERROR,
        "In 1901.",
    )
    assert "slow" in result.error


def test_rag_failure_can_raise() -> None:
    rag = ScriptedLLM(fail=TimeoutError("slow"))
    engine, *_ = _engine(rag=rag, on_rag_error="raise")
    with pytest.raises(sr.ModelOutputError):
        engine.query(QUESTION)


@pytest.mark.parametrize("streaming", [False, True])
def test_retrieval_failure_escalates(streaming: bool) -> None:
    retriever = ScriptedRetriever(fail=ConnectionError("vector db unreachable"))
    engine, _, rag, _ = _engine(retriever=retriever, streaming=streaming)
    response = engine.query(QUESTION)
    if streaming:
        assert response.source_nodes == []
        assert "".join(response.response_gen) == "In 1901."
    result = get_route_result(response)
    assert result.reason is sr.Reason.RETRIEVAL_ERROR and rag.calls == []


def test_retrieval_failure_can_raise() -> None:
    retriever = ScriptedRetriever(fail=ConnectionError("vector db unreachable"))
    engine, *_ = _engine(retriever=retriever, on_retrieval_error="raise")
    with pytest.raises(sr.RetrievalError, match="unreachable"):
        engine.query(QUESTION)


# -- streaming details -----------------------------------------------------------------------
def test_stream_metadata_is_filled_when_the_stream_ends() -> None:
    engine, *_ = _engine(streaming=True)
    response = engine.query(QUESTION)
    assert "selfroute" not in response.metadata
    with pytest.raises(sr.SelfRouteError, match="not been consumed"):
        get_route_result(response)
    final = response.get_response()
    assert final.response == "In 1901."
    assert final.metadata["selfroute"]["reason"] == "declined"


def test_stream_retraction_is_marked() -> None:
    # streams as an answer, then turns out to be a decline
    engine, *_ = _engine(rag_output="She was born... unanswerable", streaming=True)
    response = engine.query(QUESTION)
    text = "".join(response.response_gen)
    result = get_route_result(response)
    assert result.route is sr.Route.LONG_CONTEXT
    assert response.metadata["selfroute_retracted"] is True
    assert text.endswith("\n\nIn 1901.")
    assert text.startswith("She was born")


def test_stream_decline_never_leaks() -> None:
    engine, *_ = _engine(rag_output="The text does not mention when she was born.", streaming=True)
    response = engine.query(QUESTION)
    assert "".join(response.response_gen) == "In 1901."
    assert "selfroute_retracted" not in response.metadata


# -- prompts ---------------------------------------------------------------------------------
def test_prompts_are_visible_and_replaceable() -> None:
    engine, _, rag, lc = _engine(rag_output="NOPE")
    prompts = engine.get_prompts()
    assert set(prompts) == {"rag_prompt", "long_context_prompt", "structured_rag_prompt"}
    assert prompts["rag_prompt"].get_template() == sr.DEFAULT_RAG_PROMPT
    assert prompts["long_context_prompt"].get_template() == sr.DEFAULT_LONG_CONTEXT_PROMPT
    assert prompts["structured_rag_prompt"].get_template() == sr.DEFAULT_STRUCTURED_RAG_PROMPT
    text = prompts["rag_prompt"].format(context="CTX", question="Q?")
    assert "CTX" in text and "unanswerable" in text
    engine.update_prompts(
        {
            "rag_prompt": PromptTemplate(
                "Excerpts:\n{context_str}\nQ: {query_str}\nIf unsure say {sentinel}."
            ).partial_format(sentinel="NOPE"),
            "long_context_prompt": "Document:\n{context}\n\nQuestion: {question}",
        }
    )
    assert engine.config.prompts.sentinel == "NOPE"
    assert get_route_result(engine.query(QUESTION)).reason is sr.Reason.DECLINED
    assert rag.prompts[0].startswith("Excerpts:\n" + PASSAGES[0])
    assert rag.prompts[0].endswith("If unsure say NOPE.")
    assert lc.prompts[0].startswith("Document:\n")
    assert engine.get_prompts()["rag_prompt"].get_template().startswith("Excerpts:\n{context}")


def test_prompt_partials_and_mappings() -> None:
    engine, _, rag, _ = _engine()
    template = PromptTemplate(
        "Tone: {tone}. {ctx} -- {q} (or unanswerable)",
        template_var_mappings={"context": "ctx", "question": "q"},
    ).partial_format(tone="dry {x}")
    engine.update_prompts({"rag_prompt": template})
    engine.query(QUESTION)
    assert rag.prompts[0].startswith("Tone: dry {x}. " + PASSAGES[0])
    assert rag.prompts[0].endswith(f"-- {QUESTION} (or unanswerable)")


def test_bad_prompt_updates_are_rejected() -> None:
    engine, *_ = _engine()
    with pytest.raises(sr.ConfigurationError, match="question"):
        engine.update_prompts({"rag_prompt": PromptTemplate("{context} unanswerable")})
    with pytest.raises(sr.ConfigurationError, match="PromptTemplate"):
        engine.update_prompts({"long_context_prompt": 42})
    assert engine.config.prompts == sr.Prompts()  # unchanged after a failed update


def test_with_retriever_keeps_settings() -> None:
    engine, _, rag, _ = _engine(k=1, strict=True)
    other = ScriptedRetriever([make_node("The lamp was electric from 1947.")])
    engine2 = engine.with_retriever(other)
    assert engine2.config == engine.config and engine2.llm is rag
    engine2.query(QUESTION)
    assert other.calls == ["retrieve"]
    assert "1947" in rag.prompts[0]


async def _streamed(engine: SelfRouteQueryEngine, use_async: bool) -> tuple[str, Any]:
    """The streamed text of one query (``aquery`` or ``query``) and the response."""
    if use_async:
        response = await engine.aquery(QUESTION)
        return "".join([t async for t in response.async_response_gen()]), response
    response = engine.query(QUESTION)
    return "".join(response.response_gen), response


@pytest.mark.parametrize("use_async", [False, True])
async def test_stream_hold_keeps_a_late_decline_from_showing(use_async: bool) -> None:
    late = "Her birth year is not mentioned in the passages."
    engine, *_ = _engine(rag_output=late, streaming=True, stream_hold_chars=80)
    text, response = await _streamed(engine, use_async)
    assert text == "In 1901."
    assert "selfroute_retracted" not in response.metadata
    assert get_route_result(response).reason is sr.Reason.REFUSED
    plain, *_ = _engine(rag_output=late, streaming=True)  # without the hold: shown, retracted
    response = plain.query(QUESTION)
    assert "".join(response.response_gen).endswith("In 1901.")
    assert response.metadata["selfroute_retracted"] is True


@pytest.mark.parametrize("use_async", [False, True])
async def test_a_decline_detector_escalates_and_holds_the_stream(use_async: bool) -> None:
    from tests.conformance.scenarios import german_declines

    german = "Keine Angaben zu ihrem Geburtsjahr in den Textstellen. Nur ihre Laufbahn."
    engine, *_ = _engine(rag_output=german, decline_detector=german_declines)
    query = engine.aquery if use_async else None
    result = get_route_result(await query(QUESTION) if query else engine.query(QUESTION))
    assert result.reason is sr.Reason.REFUSED and result.answer == "In 1901."
    streaming, *_ = _engine(rag_output=german, streaming=True, decline_detector=german_declines)
    text, response = await _streamed(streaming, use_async)
    assert text == "In 1901." and "selfroute_retracted" not in response.metadata
    plain, *_ = _engine(rag_output=german)
    assert get_route_result(plain.query(QUESTION)).route is sr.Route.RAG


def test_a_decline_detector_that_is_not_callable_is_refused() -> None:
    with pytest.raises(sr.ConfigurationError, match="decline_detector must be a callable"):
        _engine(decline_detector=42)
