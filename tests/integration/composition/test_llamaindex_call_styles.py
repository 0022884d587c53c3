"""One question, one answer, whatever the LlamaIndex call style.

Through the real LlamaIndex ``OpenAI`` and ``OpenAILike`` clients on a loopback server, a question
the RAG step answers, one it escalates and one both steps decline (the engine abstains) are asked
with ``query``, ``aquery``, a streaming engine (``response_gen``), an async streaming engine
(``async_response_gen``), a ``CondenseQuestionChatEngine`` (``chat``, ``achat``, ``stream_chat``,
``astream_chat``) and the tools. People read the same text everywhere: the answer, or "Not found
in the documents." when the engine abstained (never the model's decline word, never the agent's
instruction); ``metadata["selfroute"]`` is the same result. The SelfRoute tool's content is the
answer or the agent's "NOT FOUND: ... Do not guess" instruction.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.chat_engine import CondenseQuestionChatEngine
from llama_index.core.tools import QueryEngineTool

from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    get_route_result,
)
from llamaindex_selfroute._response import ABSTENTION_MESSAGES, NOT_FOUND_MESSAGES
from selfroute import Abstention, Route
from tests.integration.composition._shared import (
    DECLINE_Q,
    DECLINED_TEXT,
    LC_ANSWER,
    RAG_ANSWER,
    RAG_Q,
    UNKNOWN_Q,
    manual_text,
)
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

NOT_FOUND = NOT_FOUND_MESSAGES[Abstention.DECLINED]
#: question -> (what people read, route, abstained)
CASES = {
    RAG_Q: (RAG_ANSWER, Route.RAG, False),
    DECLINE_Q: (LC_ANSWER, Route.LONG_CONTEXT, False),
    UNKNOWN_Q: (NOT_FOUND, Route.LONG_CONTEXT, True),
}
_VOLATILE = ("latency_s",)


def _openai_like(server: ScriptedOpenAIServer, model: str) -> Any:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=model,
        api_base=server.base_url,
        api_key="dummy",
        is_chat_model=True,
        context_window=128_000,
        max_retries=0,
        timeout=10,
        additional_kwargs={"stream_options": {"include_usage": True}},
    )


CLIENTS: dict[str, Callable[[ScriptedOpenAIServer, str], Any]] = {
    "openai": lambda server, model: llamaindex_openai(server, model=model),
    "openai_like": _openai_like,
}


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=manual_text(), id_="zephyr")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser()],
    )


@pytest.fixture(params=list(CASES), ids=["answered", "escalated", "abstained"])
def case(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=list(CLIENTS))
def client(request: pytest.FixtureRequest) -> Callable[[ScriptedOpenAIServer, str], Any]:
    return CLIENTS[str(request.param)]


def _canon(data: dict[str, Any]) -> dict[str, Any]:
    """The result without wall times (they differ per call)."""
    out = {k: v for k, v in data.items() if k not in _VOLATILE}
    out["steps"] = [{k: v for k, v in s.items() if k not in _VOLATILE} for s in data["steps"]]
    return out


def test_every_call_style_gives_the_same_text_and_metadata(
    server: ScriptedOpenAIServer, index: VectorStoreIndex, case: str, client: Any
) -> None:
    def engine(streaming: bool) -> Any:  # query() returns a union of response types
        return SelfRouteQueryEngine.from_index(
            index, client(server, "gpt-4o-mini"), client(server, "gpt-4o"), k=2, streaming=streaming
        )

    plain, streaming = engine(False), engine(True)
    shown: dict[str, str] = {}
    responses: dict[str, Any] = {}

    response = plain.query(case)
    shown["query"], shown["query.response"] = str(response), str(response.response)
    responses["query"] = response
    streamed = streaming.query(case)
    shown["stream"] = "".join(streamed.response_gen)
    responses["stream"] = streamed
    shown["stream.str"] = str(streaming.query(case))  # str() consumes the stream itself
    chat = CondenseQuestionChatEngine.from_defaults(
        query_engine=plain, llm=client(server, "gpt-4o")
    )
    shown["chat"] = str(chat.chat(case))
    schat = CondenseQuestionChatEngine.from_defaults(
        query_engine=streaming, llm=client(server, "gpt-4o")
    )
    shown["stream_chat"] = "".join(schat.stream_chat(case).response_gen)
    tool_out = plain.as_tool().call(input=case)
    stool_out = streaming.as_tool().call(input=case)
    generic = QueryEngineTool.from_defaults(plain).call(input=case)

    async def run_async() -> None:
        aresponse = await plain.aquery(case)
        shown["aquery"] = str(aresponse)
        responses["aquery"] = aresponse
        astreamed = await streaming.aquery(case)
        shown["astream"] = "".join([t async for t in astreamed.async_response_gen()])
        responses["astream"] = astreamed
        achat = CondenseQuestionChatEngine.from_defaults(
            query_engine=plain, llm=client(server, "gpt-4o")
        )
        shown["achat"] = str(await achat.achat(case))
        aschat = CondenseQuestionChatEngine.from_defaults(
            query_engine=streaming, llm=client(server, "gpt-4o")
        )
        stream = await aschat.astream_chat(case)
        shown["astream_chat"] = "".join([t async for t in stream.async_response_gen()])
        shown["atool"] = (await plain.as_tool().acall(input=case)).content

    asyncio.run(run_async())

    text, route, abstained = CASES[case]
    # people read one text, whatever the call style (the generic QueryEngineTool reads str())
    shown.pop("atool")
    people = {**shown, "generic_tool": generic.content}
    assert people == dict.fromkeys(people, text), people
    assert all(DECLINED_TEXT not in t.lower() for t in people.values())
    # the agent tool: the answer, or the instruction not to guess
    agent_text = ABSTENTION_MESSAGES[Abstention.DECLINED] if abstained else text
    assert tool_out.content == stool_out.content == agent_text
    # one result behind every style
    results = {name: r.metadata["selfroute"] for name, r in responses.items()}
    results["tool"] = tool_out.raw_output.metadata["selfroute"]
    results["stream_tool"] = stool_out.raw_output.metadata["selfroute"]
    first = _canon(results["query"])
    for name, data in results.items():
        assert _canon(data) == first, name
    assert first["route"] == route.value and first["abstained"] is abstained
    if abstained:  # the model's own words stay in the metadata
        assert first["answer"] == DECLINED_TEXT
    for r in responses.values():
        assert get_route_result(r).route is route


def test_abstention_text_is_for_people_and_the_tool_note_for_agents(
    server: ScriptedOpenAIServer, index: VectorStoreIndex
) -> None:
    engine = SelfRouteQueryEngine.from_index(
        index, llamaindex_openai(server), llamaindex_openai(server, model="gpt-4o"), k=2
    )
    response = engine.query(UNKNOWN_Q)
    assert str(response) == "Not found in the documents."
    assert "guess" not in str(response).lower()
    note = engine.as_tool().call(input=UNKNOWN_Q).content
    assert note.startswith("NOT FOUND:") and "Do not guess" in note
