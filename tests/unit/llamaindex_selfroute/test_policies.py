"""The routing policies through SelfRouteQueryEngine: structured verdicts (tool calling),
k-ladder, pre-routing, grounded mode and abstention -- in query, aquery and both streams."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse

import selfroute as sr
from llamaindex_selfroute import (
    HashingEmbedding,
    LlamaIndexHandler,
    SelfRouteQueryEngine,
    SelfRouteStoreRetriever,
    WordChunkNodeParser,
    create_selfroute_tool,
    get_route_result,
)
from llamaindex_selfroute._response import NOT_FOUND_MESSAGES
from llamaindex_selfroute._tool import ABSTENTION_MESSAGES
from tests.conformance.scenarios import DOCUMENT, LC_USAGE, PASSAGES, RAG_USAGE
from tests.unit.llamaindex_selfroute._scripted import (
    ScriptedLLM,
    ScriptedRetriever,
    ScriptedToolLLM,
    make_node,
    usage_tuple,
)

LAMP = "How long did Mara Holt keep the lamp?"
BORN = "When was Mara Holt born?"
SONG = "What was Mara Holt's favourite song?"
SENTINEL_MARK = 'write "unanswerable"'  # the sentinel RAG prompt (and the LC prompt) say this

MODES = ["query", "aquery", "stream", "astream"]


async def _ask(engine: SelfRouteQueryEngine, question: str, mode: str) -> tuple[Any, str]:
    """The response (finished) and the text a user saw, in one of the four ways of asking."""
    if mode == "query":
        response = engine.query(question)
        return response, str(response.response)
    if mode == "aquery":
        response = await engine.aquery(question)
        return response, str(response.response)
    if mode == "stream":
        response = engine.query(question)
        assert isinstance(response, StreamingResponse)
        return response, "".join(response.response_gen)
    response = await engine.aquery(question)
    assert isinstance(response, AsyncStreamingResponse)
    return response, "".join([t async for t in response.async_response_gen()])


def _engine(
    mode: str = "query",
    *,
    rag: Any = None,
    lc: Any = None,
    retriever: Any = None,
    **settings: Any,
) -> tuple[SelfRouteQueryEngine, Any, Any, Any]:
    retriever = retriever or ScriptedRetriever(
        [make_node(t, score=0.9 - i / 10) for i, t in enumerate(PASSAGES)]
    )
    rag = rag if rag is not None else ScriptedLLM(reply="unanswerable", usage=RAG_USAGE)
    lc = lc if lc is not None else ScriptedLLM(reply="In 1901.", usage=LC_USAGE, model="strong")
    settings.setdefault("long_context", DOCUMENT)
    engine = SelfRouteQueryEngine(
        retriever, rag, lc, streaming=mode in ("stream", "astream"), **settings
    )
    return engine, retriever, rag, lc


def _tool_llm(tool_reply: Any, reply: str = "unanswerable", **kw: Any) -> ScriptedToolLLM:
    return ScriptedToolLLM(
        reply=reply, tool_reply=tool_reply, usage=RAG_USAGE, model="cheap-tools", **kw
    )


def _tool_method(mode: str) -> str:
    """The tool-calling method a mode uses (streamed engines stream the tool call)."""
    streamed = "stream_" if mode.endswith("stream") else ""
    return ("a" if mode.startswith("a") else "") + streamed + "chat_with_tools"


# -- structured verdicts ---------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("verdict", ["structured", "auto"])
async def test_structured_answerable_answers_from_chunks(mode: str, verdict: str) -> None:
    rag = _tool_llm({"answerable": True, "answer": "Thirty-one years."})
    engine, _, rag, lc = _engine(mode, rag=rag, verdict=verdict)
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert (result.route, result.reason, result.answer) == (
        sr.Route.RAG,
        sr.Reason.ANSWERED,
        "Thirty-one years.",
    )
    assert shown == "Thirty-one years."  # the answer, never the JSON object
    assert rag.calls == [_tool_method(mode)] and lc.calls == []
    step = result.steps[0]
    assert step.structured is True and step.verdict == "answered"
    assert usage_tuple(step.usage) == usage_tuple(RAG_USAGE) and step.usage.source == "provider"
    assert step.model == "cheap-tools"
    assert json.loads(step.output) == {"answerable": True, "answer": "Thirty-one years."}
    # one required tool, the core's schema as its parameters, the structured prompt as the message
    (request,) = rag.tool_requests
    assert request["tool_required"] is True
    (spec,) = request["tools"]
    assert spec["function"]["name"] == "rag_verdict"
    params = spec["function"]["parameters"]
    assert list(params["properties"]) == ["answerable", "answer"]
    assert params["required"] == ["answerable", "answer"]
    assert rag.prompts[0].startswith("Answer the question based only on the provided passage.")
    assert SENTINEL_MARK not in rag.prompts[0] and PASSAGES[0] in rag.prompts[0]
    assert response.metadata["selfroute"]["rag_verdict"] == "answered"


@pytest.mark.parametrize("mode", MODES)
async def test_structured_not_answerable_goes_to_long_context(mode: str) -> None:
    rag = _tool_llm({"answerable": False, "answer": ""})
    engine, _, rag, lc = _engine(mode, rag=rag, verdict="structured")
    response, shown = await _ask(engine, BORN, mode)
    result = get_route_result(response)
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "In 1901.",
    )
    assert shown == "In 1901."
    assert rag.calls == [_tool_method(mode)] and len(lc.calls) == 1
    assert result.steps[0].structured is True and result.rag_verdict == "sentinel"
    assert response.metadata["selfroute"]["disputed"] is True  # chunks said no, LC said yes


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "tool_reply",
    ['{"answerable": tr', {"answerable": "perhaps", "answer": "Thirty-one years."}, {}],
    ids=["broken-json", "not-a-boolean", "no-arguments"],
)
async def test_garbled_structured_verdict_goes_to_long_context(mode: str, tool_reply: Any) -> None:
    engine, _, _, lc = _engine(mode, rag=_tool_llm(tool_reply), verdict="structured")
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.EMPTY_OUTPUT)
    assert result.steps[0].verdict == "garbled" and result.steps[0].structured is True
    assert shown == "In 1901." and len(lc.calls) == 1


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"answerable": true, "answer": "Thirty-one years."}', sr.Reason.ANSWERED),
        ("unanswerable", sr.Reason.DECLINED),
        ("Thirty-one years.", sr.Reason.EMPTY_OUTPUT),
    ],
    ids=["json-in-text", "decline-in-text", "answer-in-text"],
)
@pytest.mark.parametrize("mode", MODES)
async def test_no_tool_call_is_never_taken_for_an_answer(
    mode: str, text: str, reason: sr.Reason
) -> None:
    engine, *_ = _engine(mode, rag=_tool_llm(None, reply=text), verdict="structured")
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert result.reason is reason and result.steps[0].structured is True
    if reason is sr.Reason.ANSWERED:
        assert result.answer == shown == "Thirty-one years."
    else:  # a plain decline is a decline; a text answer instead of the tool call is garbled
        assert result.route is sr.Route.LONG_CONTEXT and shown == "In 1901."


def test_structured_verdict_needs_a_function_calling_llm() -> None:
    with pytest.raises(sr.ConfigurationError, match=r"verdict='structured'.*FunctionCallingLLM"):
        _engine(verdict="structured")  # ScriptedLLM: a CustomLLM, no tool calling
    no_tools = _tool_llm({"answerable": True, "answer": "x"}, function_calling=False)
    with pytest.raises(sr.ConfigurationError, match="is_function_calling_model=False"):
        _engine(rag=no_tools, verdict="structured")
    # the long-context LLM is not asked for structured output: only the RAG one matters
    engine, *_ = _engine(rag=_tool_llm({"answerable": True, "answer": "x"}), verdict="structured")
    assert engine.config.verdict is sr.VerdictMode.STRUCTURED


def test_handler_refuses_a_required_structured_step_without_tool_calling() -> None:
    handler = LlamaIndexHandler(
        retriever=ScriptedRetriever([make_node(PASSAGES[0])]), llm=ScriptedLLM(reply="x")
    )
    config = sr.RouteConfig(verdict="structured")
    with pytest.raises(sr.ConfigurationError, match="verdict='structured'"):
        sr.flow.run_flow(sr.flow.self_route_flow(LAMP, config), handler)


@pytest.mark.parametrize("mode", MODES)
async def test_auto_without_tool_calling_uses_the_sentinel(mode: str) -> None:
    engine, _, rag, _ = _engine(mode, verdict="auto")
    response, shown = await _ask(engine, BORN, mode)
    result = get_route_result(response)
    assert (result.route, result.reason, shown) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "In 1901.",
    )
    assert len(rag.calls) == 1 and "with_tools" not in rag.calls[0]
    assert SENTINEL_MARK in rag.prompts[0]
    assert result.steps[0].structured is False


def test_auto_with_a_tool_llm_that_cannot_call_tools_uses_the_sentinel() -> None:
    rag = _tool_llm({"answerable": True, "answer": "x"}, function_calling=False)
    engine, _, rag, _ = _engine(rag=rag, verdict="auto")
    engine.query(BORN)
    assert rag.calls == ["chat"] and SENTINEL_MARK in rag.prompts[0]


def test_sentinel_mode_never_calls_tools() -> None:
    engine, _, rag, _ = _engine(rag=_tool_llm({"answerable": True, "answer": "x"}))
    engine.query(BORN)
    assert rag.calls == ["chat"] and rag.tool_requests == []


@pytest.mark.parametrize("mode", MODES)
async def test_structured_grounded_quotes_are_checked(mode: str) -> None:
    quote = "Mara Holt, kept the lamp at Grey Point for thirty-one years."
    rag = _tool_llm({"answerable": True, "answer": "Thirty-one years.", "quotes": [quote]})
    engine, _, rag, lc = _engine(mode, rag=rag, verdict="structured", grounded=True)
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert (result.route, result.verified, shown) == (sr.Route.RAG, True, "Thirty-one years.")
    params = rag.tool_requests[0]["tools"][0]["function"]["parameters"]
    assert params["required"] == ["answerable", "answer", "quotes"]
    (citation,) = response.metadata["selfroute"]["citations"]
    assert citation["found"] is True and citation["source_index"] == 0

    fabricated = {
        "answerable": True,
        "answer": "Forty years.",
        "quotes": ["She kept it forty years."],
    }
    lc = ScriptedLLM(reply=f'Thirty-one years.\nQuote: "{quote}"', usage=LC_USAGE)
    engine, _, rag, lc = _engine(
        mode, rag=_tool_llm(fabricated), lc=lc, verdict="structured", grounded=True
    )
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.UNGROUNDED)
    assert result.rag_answer == "Forty years." and shown == "Thirty-one years."
    assert result.verified is True


# -- k-ladder ----------------------------------------------------------------------------------
def _ladder_reply(prompt: str) -> str:
    return "Six weeks." if PASSAGES[1] in prompt else "unanswerable"


@pytest.mark.parametrize("mode", MODES)
async def test_k_ladder_climbs_before_long_context(mode: str) -> None:
    rag = ScriptedLLM(reply=_ladder_reply, usage=RAG_USAGE)
    engine, _, rag, lc = _engine(mode, rag=rag, k=1, k_ladder=(2,))
    response, shown = await _ask(engine, "How long could the supply boat not land?", mode)
    result = get_route_result(response)
    assert (result.route, result.answer, shown) == (sr.Route.RAG, "Six weeks.", "Six weeks.")
    assert [s.k for s in result.steps] == [1, 2] and result.k_used == 2
    assert len(rag.calls) == 2 and lc.calls == []
    assert PASSAGES[1] not in rag.prompts[0] and PASSAGES[1] in rag.prompts[1]
    assert [n.node.get_content() for n in response.source_nodes][:1] == [PASSAGES[0]]
    assert response.metadata["selfroute"]["k_used"] == 2


def _index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="grey-point")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=20)],
    )


def test_from_index_retrieves_the_largest_rung() -> None:
    index, llm = _index(), ScriptedLLM(reply="unanswerable")
    engine = SelfRouteQueryEngine.from_index(index, llm)
    assert engine.retriever.similarity_top_k == 5  # no ladder: k, as before
    engine = SelfRouteQueryEngine.from_index(index, llm, k=2, k_ladder=(4, 8))
    assert engine.retriever.similarity_top_k == 8
    engine = SelfRouteQueryEngine.from_index(index, llm, config=sr.RouteConfig(k=2, k_ladder=(6,)))
    assert engine.retriever.similarity_top_k == 6
    # an explicit top-k smaller than the ladder is raised to its largest rung; a larger one stays
    engine = SelfRouteQueryEngine.from_index(index, llm, similarity_top_k=3, k_ladder=(8,))
    assert engine.retriever.similarity_top_k == 8
    engine = SelfRouteQueryEngine.from_index(index, llm, similarity_top_k=12, k_ladder=(8,))
    assert engine.retriever.similarity_top_k == 12
    with pytest.raises(sr.ConfigurationError, match="k_ladder"):
        SelfRouteQueryEngine.from_index(index, llm, k=5, k_ladder=(3,))


def test_from_index_ladder_shows_more_chunks_each_rung() -> None:
    llm = ScriptedLLM(reply="unanswerable", usage=RAG_USAGE)
    lc = ScriptedLLM(reply="In 1901.", usage=LC_USAGE)
    engine = SelfRouteQueryEngine.from_index(_index(), llm, lc, k=2, k_ladder=(4, 8))
    result = get_route_result(engine.query(BORN))
    assert [s.k for s in result.steps] == [2, 4, 8, None]
    assert result.route is sr.Route.LONG_CONTEXT and len(llm.calls) == 3


def test_store_retriever_engine_retrieves_the_largest_rung() -> None:
    core = sr.stores.HybridRetriever(object(), k=3)  # type: ignore[arg-type]  # never queried
    retriever = SelfRouteStoreRetriever(core)
    engine = retriever.as_query_engine(ScriptedLLM(), k_ladder=(10,))
    assert engine.retriever.k == 10 and engine.retriever.retriever is core
    assert engine.config.k == 3 and engine.config.k_ladder == (10,)
    assert retriever.as_query_engine(ScriptedLLM()).retriever is retriever


# -- pre-routing -------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_pre_route_global_question_skips_the_rag_llm(mode: str) -> None:
    lc = ScriptedLLM(reply="A keeper's life at Grey Point.", usage=LC_USAGE)
    engine, retriever, rag, lc = _engine(mode, lc=lc, pre_route=sr.PreRoute())
    response, shown = await _ask(engine, "Summarize the whole document.", mode)
    result = get_route_result(response)
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.GLOBAL_QUESTION)
    assert shown == "A keeper's life at Grey Point."
    assert rag.calls == [] and len(lc.calls) == 1 and len(retriever.calls) == 1
    assert [s.stage for s in result.steps] == [sr.Stage.LONG_CONTEXT]


@pytest.mark.parametrize("mode", MODES)
async def test_pre_route_weak_retrieval_skips_the_rag_llm(mode: str) -> None:
    retriever = ScriptedRetriever([make_node(t, score=0.2) for t in PASSAGES])
    pre_route = sr.PreRoute(global_questions=False, min_top_score=0.5)
    engine, _, rag, _ = _engine(mode, retriever=retriever, pre_route=pre_route)
    response, _ = await _ask(engine, BORN, mode)
    result = get_route_result(response)
    assert result.reason is sr.Reason.WEAK_RETRIEVAL and rag.calls == []
    # a strong enough retrieval tries the RAG step as usual
    retriever = ScriptedRetriever([make_node(t, score=0.8) for t in PASSAGES])
    engine, _, rag, _ = _engine(mode, retriever=retriever, pre_route=pre_route)
    response, _ = await _ask(engine, BORN, mode)
    assert get_route_result(response).reason is sr.Reason.DECLINED and len(rag.calls) == 1


def test_pre_route_must_be_a_pre_route() -> None:
    with pytest.raises(sr.ConfigurationError, match="pre_route"):
        _engine(pre_route={"min_top_score": 0.5})


# -- grounded mode and abstention ----------------------------------------------------------
FABRICATED = '"Shenandoah".\nQuote: "Mara Holt sang Shenandoah every night on the steps."'


@pytest.mark.parametrize("mode", MODES)
async def test_grounded_long_context_fabrication_abstains(mode: str) -> None:
    lc = ScriptedLLM(reply=FABRICATED, usage=LC_USAGE)
    engine, _, rag, lc = _engine(mode, lc=lc, grounded=True)
    response, shown = await _ask(engine, SONG, mode)
    result = get_route_result(response)
    # the fabricated answer is never shown: people read the same "not found" in every style
    assert shown == NOT_FOUND_MESSAGES[sr.Abstention.UNGROUNDED]
    assert "Quote:" in rag.prompts[0] and "Quote:" in lc.prompts[0]  # both asked to quote
    data = response.metadata["selfroute"]
    assert data["abstained"] is True and data["abstention"] == "ungrounded"
    assert data["verified"] is False and data["disputed"] is False
    assert data["unverified_answer"].startswith('"Shenandoah"')
    assert [c["found"] for c in data["citations"]] == [False]
    assert result.abstention is sr.Abstention.UNGROUNDED
    json.dumps(data)


@pytest.mark.parametrize("mode", MODES)
async def test_grounded_answers_carry_citations(mode: str) -> None:
    lc = ScriptedLLM(reply='In 1901.\nQuote: "She was born in Dunmore in 1901"', usage=LC_USAGE)
    engine, *_ = _engine(mode, lc=lc, grounded=True)
    response, shown = await _ask(engine, BORN, mode)
    data = response.metadata["selfroute"]
    assert shown == "In 1901." and data["verified"] is True and data["abstained"] is False
    (citation,) = data["citations"]
    assert citation["found"] is True
    assert DOCUMENT[citation["start"] : citation["end"]] == "She was born in Dunmore in 1901"


def test_metadata_keys_of_an_ordinary_answer() -> None:
    engine, *_ = _engine(rag=ScriptedLLM(reply="Thirty-one years.", usage=RAG_USAGE))
    data = engine.query(LAMP).metadata["selfroute"]
    assert data["route"] == "rag" and data["reason"] == "answered"  # the existing keys stay
    assert (data["abstained"], data["abstention"], data["verified"], data["disputed"]) == (
        False,
        None,
        None,
        False,
    )
    assert data["citations"] == []


# -- the agent tool ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "lc_reply", "abstention"),
    [
        ({}, "unanswerable", sr.Abstention.DECLINED),
        ({}, "The document does not mention her favourite song.", sr.Abstention.DECLINED),
        ({"grounded": True}, FABRICATED, sr.Abstention.UNGROUNDED),
        (
            {"budget": sr.LongContextBudget(max_calls=0)},
            "never asked",
            sr.Abstention.OVER_BUDGET,
        ),
    ],
    ids=["lc-declines", "lc-refuses", "grounded-fabrication", "over-budget"],
)
@pytest.mark.parametrize("use_async", [False, True])
async def test_tool_says_when_the_documents_do_not_answer(
    settings: dict[str, Any], lc_reply: str, abstention: sr.Abstention, use_async: bool
) -> None:
    lc = ScriptedLLM(reply=lc_reply, usage=LC_USAGE)
    engine, *_ = _engine(lc=lc, **settings)
    tool = create_selfroute_tool(engine)
    out = await tool.acall(input=SONG) if use_async else tool.call(input=SONG)
    assert out.content == ABSTENTION_MESSAGES[abstention]
    assert out.content.startswith("NOT FOUND")
    result = get_route_result(out)
    assert result.abstention is abstention and result.abstained
    assert out.raw_output.metadata["selfroute"]["abstention"] == abstention.value


def test_tool_passes_answers_through() -> None:
    engine, *_ = _engine(
        grounded=True, lc=ScriptedLLM(reply='In 1901.\nQuote: "born in Dunmore in 1901"')
    )
    out = create_selfroute_tool(engine).call(input=BORN)
    assert out.content == "In 1901."
    assert "not contain the answer" in create_selfroute_tool(engine).metadata.description


@pytest.mark.parametrize("mode", MODES)
async def test_structured_call_failure_escalates_or_raises(mode: str) -> None:
    failing = _tool_llm({"answerable": True, "answer": "x"}, fail=TimeoutError("slow tools"))
    engine, *_ = _engine(mode, rag=failing, verdict="structured")
    response, shown = await _ask(engine, BORN, mode)
    result = get_route_result(response)
    assert (result.route, result.reason, shown) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.RAG_ERROR,
        "In 1901.",
    )
    assert "slow tools" in result.error
    engine, *_ = _engine(mode, rag=failing, verdict="structured", on_rag_error="raise")
    with pytest.raises(sr.ModelOutputError, match="slow tools"):
        await _ask(engine, BORN, mode)


# -- speculative long context ----------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_speculative_long_context(mode: str) -> None:
    # weak evidence (best score 0.9 < 0.95): the LC call starts alongside the RAG step
    engine, _, rag, lc = _engine(mode, speculate_below=0.95)
    response, shown = await _ask(engine, BORN, mode)
    result = get_route_result(response)
    assert (result.route, result.reason, shown) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "In 1901.",
    )
    assert len(rag.calls) == 1 and len(lc.calls) == 1  # the speculative call was the answer
    assert not any(s.wasted for s in result.steps)
    # the RAG step answers: the speculative call is cancelled or its result marked wasted
    rag = ScriptedLLM(reply="Thirty-one years.", usage=RAG_USAGE)
    engine, _, rag, lc = _engine(mode, rag=rag, speculate_below=0.95)
    response, shown = await _ask(engine, LAMP, mode)
    result = get_route_result(response)
    assert (result.route, shown) == (sr.Route.RAG, "Thirty-one years.")
    assert all(s.wasted for s in result.steps if s.stage is sr.Stage.LONG_CONTEXT)
