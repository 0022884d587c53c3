"""Composition conformance for LlamaIndex: SelfRouteQueryEngine where a query engine goes.

Through the real LlamaIndex ``OpenAI`` client on a loopback server, with a question the RAG step
answers and one it declines: ``query``, ``aquery``, the joined sync stream and the joined async
stream agree, for the engine itself, a ``QueryEngineTool`` in a ``FunctionAgent``, a
``RouterQueryEngine`` and a ``SubQuestionQueryEngine`` over it; no stream and no agent or
synthesizer input shows the RAG step's decline; ``Response.metadata`` is JSON.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex, get_response_synthesizer
from llama_index.core.agent.workflow import AgentStream, FunctionAgent, ToolCallResult
from llama_index.core.query_engine import RouterQueryEngine, SubQuestionQueryEngine
from llama_index.core.question_gen import LLMQuestionGenerator
from llama_index.core.selectors import LLMSingleSelector
from llama_index.core.tools import QueryEngineTool

from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    get_route_result,
)
from tests.integration.composition._shared import (
    AGENT_PREFIX,
    ANSWERS,
    DECLINED_TEXT,
    ROUTES,
    UNKNOWN_Q,
    manual_text,
)
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=manual_text(), id_="zephyr")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser()],
    )


def _engine(server: ScriptedOpenAIServer, index: VectorStoreIndex, **kw: Any) -> Any:
    return SelfRouteQueryEngine.from_index(
        index, llamaindex_openai(server), llamaindex_openai(server, model="gpt-4o"), k=2, **kw
    )


def _all_ways(make: Any, question: str) -> tuple[list[str], list[Any]]:
    """``str()`` of the query, aquery, sync-stream and async-stream answers, and the responses
    (``make(streaming)`` builds the composition)."""
    plain, streaming = make(False), make(True)
    response = plain.query(question)
    streamed = streaming.query(question)
    sync_text = "".join(streamed.response_gen)

    async def both() -> tuple[Any, str, Any]:
        aresponse = await plain.aquery(question)
        astreamed = await streaming.aquery(question)
        text = "".join([t async for t in astreamed.async_response_gen()])
        return aresponse, text, astreamed

    aresponse, async_text, astreamed = asyncio.run(both())
    texts = [str(response), str(aresponse), sync_text, async_text]
    return texts, [response, aresponse, streamed, astreamed]


def _check(texts: list[str], question: str) -> None:
    assert texts == [ANSWERS[question]] * 4, texts
    assert all(DECLINED_TEXT not in t.lower() for t in texts)


def test_engine_agrees_every_way_and_metadata_is_json(
    server: ScriptedOpenAIServer, index: VectorStoreIndex, question: str
) -> None:
    texts, responses = _all_ways(
        lambda streaming: _engine(server, index, streaming=streaming), question
    )
    _check(texts, question)
    for response in responses:
        data = json.loads(json.dumps(response.metadata))
        assert data["selfroute"]["route"] == ROUTES[question].value
        assert get_route_result(response).route is ROUTES[question]
    nodes = responses[0].source_nodes
    # LlamaIndex's usual per-node entries are kept next to the Self-Route result
    assert nodes and all(responses[0].metadata[n.node.node_id] == n.node.metadata for n in nodes)


def test_router_query_engine_over_selfroute(
    server: ScriptedOpenAIServer, index: VectorStoreIndex, question: str
) -> None:

    def make(streaming: bool) -> RouterQueryEngine:
        manual = QueryEngineTool.from_defaults(
            _engine(server, index, streaming=streaming),
            name="zephyr_manual",
            description="The Zephyr rover manual.",
        )
        other = QueryEngineTool.from_defaults(
            _engine(server, index, streaming=streaming),
            name="other_manual",
            description="Another manual.",
        )
        return RouterQueryEngine(
            selector=LLMSingleSelector.from_defaults(llm=llamaindex_openai(server)),
            query_engine_tools=[manual, other],
            llm=llamaindex_openai(server),
        )

    texts, responses = _all_ways(make, question)
    _check(texts, question)
    assert responses[0].metadata["selector_result"].ind == 0


def test_sub_question_query_engine_over_selfroute(
    server: ScriptedOpenAIServer, index: VectorStoreIndex, question: str
) -> None:
    llm = llamaindex_openai(server)
    seen: list[str] = []

    def make(streaming: bool) -> SubQuestionQueryEngine:
        tool = QueryEngineTool.from_defaults(
            _engine(server, index), name="zephyr_manual", description="The Zephyr rover manual."
        )
        return SubQuestionQueryEngine.from_defaults(
            query_engine_tools=[tool],
            llm=llm,
            question_gen=LLMQuestionGenerator.from_defaults(llm=llm),
            response_synthesizer=get_response_synthesizer(llm=llm, streaming=streaming),
            use_async=False,
            verbose=False,
        )

    texts, _ = _all_ways(make, question)
    _check(texts, question)
    for request in server.requests:
        seen.extend(m.get("content") or "" for m in request.get("messages", []))
    synthesized = [t for t in seen if isinstance(t, str) and t.startswith("Context information")]
    assert synthesized and all(DECLINED_TEXT not in t.lower() for t in synthesized)


def test_function_agent_with_query_engine_tool(
    server: ScriptedOpenAIServer, index: VectorStoreIndex, question: str
) -> None:
    async def run(tool: Any) -> tuple[str, str, list[Any]]:
        agent = FunctionAgent(tools=[tool], llm=llamaindex_openai(server))
        handler = agent.run(user_msg=question)
        deltas: list[str] = []
        results: list[Any] = []
        async for event in handler.stream_events():
            if isinstance(event, AgentStream):
                deltas.append(event.delta)
            if isinstance(event, ToolCallResult):
                results.append(event.tool_output)
        return str(await handler), "".join(deltas), results

    plain = QueryEngineTool.from_defaults(
        _engine(server, index), name="zephyr_manual", description="The Zephyr rover manual."
    )
    documented = _engine(server, index).as_tool(name="zephyr_manual")
    for tool in (plain, documented):
        output, streamed, results = asyncio.run(run(tool))
        assert output == streamed == AGENT_PREFIX + ANSWERS[question]
        (result,) = results
        assert result.content == ANSWERS[question]
        assert get_route_result(result.raw_output).route is ROUTES[question]


def test_agent_tool_never_hands_over_the_bare_sentinel(
    server: ScriptedOpenAIServer, index: VectorStoreIndex
) -> None:
    """A question both steps decline: LlamaIndex's own tool reads ``str(response)``, the text for
    people ("Not found in the documents."); the SelfRoute tool gives the agent a NOT FOUND note
    with the instruction not to guess. Neither hands over the decline word."""
    engine = _engine(server, index)
    generic = QueryEngineTool.from_defaults(engine).call(input=UNKNOWN_Q)
    own = engine.as_tool().call(input=UNKNOWN_Q)
    for output in (generic, own):
        assert get_route_result(output.raw_output).abstained
        assert DECLINED_TEXT not in output.content.lower()
    assert generic.content == "Not found in the documents."
    assert own.content.startswith("NOT FOUND: the documents do not contain the answer")
