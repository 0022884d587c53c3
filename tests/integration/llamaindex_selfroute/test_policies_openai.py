"""The routing policies end to end: the real LlamaIndex ``OpenAI`` LLM against the loopback server.

Structured verdicts go out as a real OpenAI tool call (``tools`` + ``tool_choice="required"``) and
come back as ``tool_calls``; grounded mode, the k-ladder and pre-routing run over a real
``VectorStoreIndex``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from llama_index.core import Document, VectorStoreIndex

import selfroute as sr
from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    create_selfroute_tool,
    get_route_result,
)
from llamaindex_selfroute._response import NOT_FOUND_MESSAGES
from tests.conformance.scenarios import DOCUMENT
from tests.support._loopback import last_user_text
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer, tool_call

pytestmark = pytest.mark.integration

LAMP = "How long did Mara Holt keep the lamp?"
BORN = "When was Mara Holt born?"
SONG = "What was Mara Holt's favourite song?"
RAG_MARK = "excerpts retrieved from a longer document"  # the RAG prompts (sentinel or structured)
CHEAP, STRONG = "gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06"


def responder(body: dict) -> Reply:
    """A cheap model that finds only the lamp's years in chunks; an LC model reading it all."""
    prompt = last_user_text(body)
    if RAG_MARK in prompt:
        knows = "keep the lamp" in prompt and "thirty-one years" in prompt
        if body.get("tools"):  # structured verdict
            if "garbled" in prompt:
                return Reply(tool_call('{"answerable": tr'), prompt_tokens=190, model=CHEAP)
            verdict = {"answerable": knows, "answer": "Thirty-one years." if knows else ""}
            return Reply(tool_call(verdict), prompt_tokens=190, completion_tokens=12, model=CHEAP)
        if knows:
            text = "Thirty-one years."
            if "Quote:" in prompt:  # grounded mode
                text += '\nQuote: "Mara Holt, kept the lamp at Grey Point for thirty-one years."'
            return Reply(text, prompt_tokens=210, completion_tokens=4, model=CHEAP)
        return Reply("unanswerable", prompt_tokens=205, completion_tokens=1, model=CHEAP)
    if "favourite song" in prompt:  # no document says: a grounded LC answer cannot quote it
        return Reply(
            '"Shenandoah".\nQuote: "Mara Holt sang Shenandoah every night on the steps."',
            prompt_tokens=1400,
            model=STRONG,
        )
    text = "She was born in 1901."
    if "Quote:" in prompt:
        text += '\nQuote: "She was born in Dunmore in 1901"'
    return Reply(text, prompt_tokens=1400, completion_tokens=6, model=STRONG)


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder) as srv:
        yield srv


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="grey-point")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=40)],
    )


def _engine(server, index, *, streaming: bool = False, **settings) -> SelfRouteQueryEngine:
    return SelfRouteQueryEngine.from_index(
        index,
        llamaindex_openai(server, model="gpt-4o-mini"),
        llamaindex_openai(server, model="gpt-4o"),
        streaming=streaming,
        **settings,
    )


async def _ask(
    engine: SelfRouteQueryEngine, question: str, mode: str
) -> tuple[sr.RouteResult, str]:
    # the text people read (the answer, or "Not found in the documents." when it abstained)
    if mode == "query":
        response = engine.query(question)
        return get_route_result(response), str(response.response)
    if mode == "aquery":
        response = await engine.aquery(question)
        return get_route_result(response), str(response.response)
    if mode == "stream":
        response = engine.query(question)
        text = "".join(response.response_gen)
        return get_route_result(response), text
    response = await engine.aquery(question)
    text = "".join([t async for t in response.async_response_gen()])
    return get_route_result(response), text


MODES = ["query", "aquery", "stream", "astream"]


# -- structured verdicts through OpenAI tool calling -------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_structured_verdict_answers_from_chunks(server, index, mode: str) -> None:
    engine = _engine(server, index, streaming=mode.endswith("stream"), verdict="structured")
    result, shown = await _ask(engine, LAMP, mode)
    assert (result.route, result.answer, shown) == (
        sr.Route.RAG,
        "Thirty-one years.",
        "Thirty-one years.",
    )
    (request,) = server.requests
    # streamed engines stream the tool call too (the answer shows once "answerable" is in)
    assert request["model"] == "gpt-4o-mini"
    assert bool(request.get("stream")) is mode.endswith("stream")
    assert request["tool_choice"] == "required"
    (tool,) = request["tools"]
    assert tool["function"]["name"] == "rag_verdict"
    assert tool["function"]["parameters"]["required"] == ["answerable", "answer"]
    assert 'write "unanswerable"' not in last_user_text(request)  # the structured prompt
    step = result.steps[0]
    assert step.structured is True and step.verdict == "answered"
    assert (step.usage.input_tokens, step.usage.output_tokens, step.usage.source) == (
        190,
        12,
        "provider",
    )
    assert step.model == CHEAP
    assert json.loads(step.output) == {"answerable": True, "answer": "Thirty-one years."}


@pytest.mark.parametrize("mode", MODES)
async def test_structured_verdict_not_answerable_reads_the_document(server, index, mode) -> None:
    engine = _engine(server, index, streaming=mode.endswith("stream"), verdict="auto")
    result, shown = await _ask(engine, BORN, mode)
    assert (result.route, result.reason, shown) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "She was born in 1901.",
    )
    assert [r["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]
    assert DOCUMENT.strip() in last_user_text(server.requests[1])
    assert [s.structured for s in result.steps] == [True, False]
    assert [(s.usage.input_tokens, s.usage.source) for s in result.steps] == [
        (190, "provider"),
        (1400, "provider"),
    ]


def test_garbled_tool_arguments_go_to_long_context(server, index) -> None:
    engine = _engine(server, index, verdict="structured")
    result = get_route_result(engine.query("A garbled question about Mara Holt?"))
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.EMPTY_OUTPUT)
    assert result.rag_verdict == "garbled"


@pytest.mark.parametrize(
    ("text", "reason"),
    [("unanswerable", sr.Reason.DECLINED), ("Thirty-one years.", sr.Reason.EMPTY_OUTPUT)],
    ids=["decline", "answer"],
)
def test_a_model_that_writes_text_instead_of_calling_the_tool(
    server, index, text: str, reason: sr.Reason
) -> None:
    def plain(body: dict) -> Reply:  # ignores the tools and writes text
        if RAG_MARK in last_user_text(body):
            return Reply(text, model=CHEAP)
        return responder(body)

    server.responder = plain
    result = get_route_result(_engine(server, index, verdict="structured").query(LAMP))
    # a plain decline is a decline; an answer that skipped the tool is not trusted
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, reason)
    assert result.steps[0].structured is True and result.answer == "She was born in 1901."


# -- grounded mode -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_grounded_long_context_fabrication_abstains(server, index, mode: str) -> None:
    engine = _engine(server, index, streaming=mode.endswith("stream"), grounded=True)
    result, shown = await _ask(engine, SONG, mode)
    # the invented answer never reaches the user: every style shows the same "not found"
    assert result.answer == "unanswerable"
    assert shown == NOT_FOUND_MESSAGES[sr.Abstention.UNGROUNDED]
    data = result.to_dict()
    assert (data["abstained"], data["abstention"], data["verified"]) == (True, "ungrounded", False)
    assert data["unverified_answer"].startswith('"Shenandoah"')
    assert [c["found"] for c in data["citations"]] == [False]
    assert [r["model"] for r in server.requests] == ["gpt-4o-mini", "gpt-4o"]
    assert all("Quote:" in last_user_text(r) for r in server.requests)


def test_grounded_answers_metadata_and_tool(server, index) -> None:
    engine = _engine(server, index, grounded=True)
    response = engine.query(BORN)
    meta = response.metadata["selfroute"]
    assert str(response) == "She was born in 1901."
    assert (meta["verified"], meta["abstained"], meta["disputed"]) == (True, False, False)
    (citation,) = meta["citations"]
    assert citation["found"] and citation["doc_id"] is None
    assert "She was born in Dunmore in 1901" in last_user_text(server.requests[1])
    json.dumps(meta)
    # the agent tool says plainly that the documents hold no answer
    tool = create_selfroute_tool(engine)
    out = tool.call(input=SONG)
    assert out.content.startswith("NOT FOUND")
    assert "Shenandoah" not in out.content
    assert get_route_result(out).abstention is sr.Abstention.UNGROUNDED
    out = tool.call(input=LAMP)
    assert out.content == "Thirty-one years."
    assert get_route_result(out).verified is True


# -- k-ladder and pre-routing --------------------------------------------------------------
def test_k_ladder_over_a_real_index(server, index) -> None:
    engine = _engine(server, index, k=1, k_ladder=(3, 6))
    assert engine.retriever.similarity_top_k == 6
    result = get_route_result(engine.query(BORN))
    assert [s.k for s in result.steps] == [1, 3, 6, None]
    assert [r["model"] for r in server.requests] == ["gpt-4o-mini"] * 3 + ["gpt-4o"]
    sizes = [len(last_user_text(r)) for r in server.requests[:3]]
    assert sizes == sorted(sizes) and len(set(sizes)) == 3  # each rung showed more


def test_pre_route_sends_global_questions_straight_to_long_context(server, index) -> None:
    engine = _engine(server, index, pre_route=sr.PreRoute())
    result = get_route_result(engine.query("Summarize the whole document about Mara Holt."))
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.GLOBAL_QUESTION)
    assert [r["model"] for r in server.requests] == ["gpt-4o"]  # no RAG call at all
