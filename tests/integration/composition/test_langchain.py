"""Composition conformance: SelfRoute composes like any LangChain/LangGraph component.

Every composition runs through the real ``ChatOpenAI`` on a loopback server, with a question the
RAG step answers and one it declines, five ways: ``invoke``, ``batch``, joined ``stream``,
joined ``astream`` and the final ``astream_events`` output must agree, and no stream (nor any
``on_chat_model_stream`` event not tagged ``nostream``) may show the RAG step's decline.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from operator import itemgetter
from typing import Any

import pytest
from langchain_core.chat_history import InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import (
    ConfigurableField,
    Runnable,
    RunnableLambda,
    RunnableParallel,
    RunnablePassthrough,
)
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.vectorstores import InMemoryVectorStore

from langchain_selfroute import (
    CHECKPOINT_TYPES,
    HashingEmbeddings,
    SelfRoute,
    SelfRouteOutput,
    index_documents,
)
from selfroute import Route
from tests.integration.composition._shared import (
    AGENT_PREFIX,
    ANSWERS,
    DECLINE_Q,
    DECLINED_TEXT,
    LC_ANSWER,
    RAG_ANSWER,
    RAG_Q,
    ROUTES,
    canon,
    json_round_trip,
    manual_documents,
    run_all,
)
from tests.support.clients import chat_openai
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated"),
]


@pytest.fixture(scope="module")
def route(server: ScriptedOpenAIServer) -> SelfRoute:
    """SelfRoute over an InMemoryVectorStore: parents come back through get_by_ids."""
    store = InMemoryVectorStore(HashingEmbeddings())
    index_documents(store, manual_documents())
    return SelfRoute.from_vectorstore(store, llm=chat_openai(server), k=2)


def compositions(route: SelfRoute, server: ScriptedOpenAIServer) -> dict[str, Any]:
    """name -> (runnable, input for a question, expected output for a question)."""
    llm = chat_openai(server)
    rewrite = ChatPromptTemplate.from_template("Rewrite as a standalone question: {q}")
    backup = SelfRoute(llm=llm, document=manual_documents()[0])
    histories: dict[str, InMemoryChatMessageHistory] = {}

    def history(session_id: str) -> InMemoryChatMessageHistory:
        return histories.setdefault(session_id, InMemoryChatMessageHistory())

    with_history = RunnableWithMessageHistory(
        route,  # type: ignore[arg-type]
        history,
        input_messages_key="question",
        history_messages_key="chat_history",
        output_messages_key="answer",
    )
    return {
        "itemgetter": (route | itemgetter("answer"), lambda q: q, lambda q: ANSWERS[q]),
        "lambda_attribute": (
            route | RunnableLambda(lambda r: r.answer),
            lambda q: q,
            lambda q: ANSWERS[q],
        ),
        "mapping_input": (
            {"question": itemgetter("q")} | route | itemgetter("answer"),
            lambda q: {"q": q},
            lambda q: ANSWERS[q],
        ),
        "assign_extra_keys": (
            RunnablePassthrough.assign(r=route),
            lambda q: {"question": q, "user": "ann"},
            None,
        ),
        "parallel": (
            RunnableParallel(answer=route | itemgetter("answer"), full=route),
            lambda q: q,
            None,
        ),
        "pick": (route.pick("answer"), lambda q: q, lambda q: ANSWERS[q]),
        "answer_only_str_parser": (
            route.answer_only() | StrOutputParser(),
            lambda q: q,
            lambda q: ANSWERS[q],
        ),
        "prompt_llm_feeds_route": (
            rewrite | llm | StrOutputParser() | route | itemgetter("answer"),
            lambda q: {"q": q},
            lambda q: ANSWERS[q],
        ),
        "input_key_convention": (route, lambda q: {"input": q, "chat_history": []}, None),
        "messages_input": (route, lambda q: [HumanMessage(q)], None),
        "prompt_value_input": (
            ChatPromptTemplate.from_messages([("human", "{q}")]) | route,
            lambda q: {"q": q},
            None,
        ),
        "with_message_history": (with_history, lambda q: {"question": q}, None),
        "with_retry": (route.with_retry(stop_after_attempt=2), lambda q: q, None),
        "with_fallbacks": (route.with_fallbacks([backup]), lambda q: q, None),
        "configurable_fields": (
            route.configurable_fields(k=ConfigurableField(id="k")).with_config(
                configurable={"k": 3}
            ),
            lambda q: q,
            None,
        ),
    }


NAMES = [
    "itemgetter",
    "lambda_attribute",
    "mapping_input",
    "assign_extra_keys",
    "parallel",
    "pick",
    "answer_only_str_parser",
    "prompt_llm_feeds_route",
    "input_key_convention",
    "messages_input",
    "prompt_value_input",
    "with_message_history",
    "with_retry",
    "with_fallbacks",
    "configurable_fields",
]


def _session() -> Callable[[], dict[str, Any]]:
    return lambda: {"configurable": {"session_id": uuid.uuid4().hex}}


@pytest.mark.parametrize("name", NAMES)
def test_composition_agrees_every_way(
    name: str, question: str, route: SelfRoute, server: ScriptedOpenAIServer
) -> None:
    runnable, make_input, expected = compositions(route, server)[name]
    config = _session() if name == "with_message_history" else None
    runs = run_all(runnable, make_input(question), config)
    runs.check()
    out = runs.invoke
    if expected is not None:
        assert out == expected(question)
    elif name == "assign_extra_keys":
        assert out["user"] == "ann" and out["r"]["user"] == "ann"
        assert out["r"]["answer"] == ANSWERS[question] and out["r"].route is ROUTES[question]
    elif name == "parallel":
        assert out["answer"] == out["full"]["answer"] == ANSWERS[question]
    else:
        assert isinstance(out, SelfRouteOutput)
        assert out.answer == ANSWERS[question] and out.route is ROUTES[question]
        if name == "input_key_convention":  # create_retrieval_chain's keys pass through
            assert out["chat_history"] == [] and out.question == question
        if name == "configurable_fields":
            assert len(out.sources) == 3 and out.k_used == 3  # k=2 at construction


def test_message_history_accumulates(route: SelfRoute) -> None:
    histories: dict[str, InMemoryChatMessageHistory] = {}
    chain = RunnableWithMessageHistory(
        route,  # type: ignore[arg-type]
        lambda sid: histories.setdefault(sid, InMemoryChatMessageHistory()),
        input_messages_key="question",
        history_messages_key="chat_history",
        output_messages_key="answer",
    )
    config: Any = {"configurable": {"session_id": "s"}}
    chain.invoke({"question": RAG_Q}, config)
    second = chain.invoke({"question": DECLINE_Q}, config)
    assert [m.text for m in second["chat_history"]] == [RAG_Q, RAG_ANSWER]
    assert [type(m) for m in histories["s"].messages] == [HumanMessage, AIMessage] * 2


def test_output_is_json_and_round_trips(route: SelfRoute, question: str) -> None:
    out = route.invoke({"question": question, "chat_history": [HumanMessage("hi")]})
    again = SelfRouteOutput.model_validate_json(out.model_dump_json())
    # everything the JSON form holds comes back typed (raw model outputs of the steps are not
    # part of it, as in the core's RouteResult.to_dict())
    assert again.to_dict() == out.to_dict() == json_round_trip(out.to_dict())
    assert {k: v for k, v in again.items() if k != "steps"} == {
        k: v for k, v in out.items() if k != "steps"
    }
    assert again.route is out.route and again.usage == out.usage
    assert again["chat_history"] == [HumanMessage("hi")] and again.sources == out.sources
    assert [s.to_dict() for s in again.steps] == [s.to_dict() for s in out.steps]
    assert again.token_ratio == out.token_ratio and again.answer == out.answer


def test_langgraph_node_with_extra_state_keys_and_checkpoint(
    route: SelfRoute, question: str, server: ScriptedOpenAIServer
) -> None:
    from typing import TypedDict

    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        question: str
        user: str
        result: dict[str, Any]

    def answer(state: State) -> dict[str, Any]:
        return {"result": route.invoke(state)}  # type: ignore[arg-type]

    builder = StateGraph(State)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    saver = MemorySaver()
    graph = builder.compile(checkpointer=saver)
    threads = iter(range(10))

    def config() -> dict[str, Any]:
        return {"configurable": {"thread_id": f"t{next(threads)}"}}

    value = {"question": question, "user": "ann"}
    invoked = graph.invoke(value, config())  # type: ignore[arg-type]
    streamed = list(graph.stream(value, config(), stream_mode="values"))  # type: ignore[arg-type]
    messages = list(graph.stream(value, config(), stream_mode="messages"))  # type: ignore[arg-type]

    async def events() -> tuple[Any, Any]:
        last = [c async for c in graph.astream(value, config(), stream_mode="values")]  # type: ignore[arg-type]
        final = None
        async for event in graph.astream_events(value, config(), version="v2"):  # type: ignore[arg-type]
            if event["event"] == "on_chain_end" and not event["parent_ids"]:
                final = event["data"]["output"]
        return last[-1], final

    astreamed, final = asyncio.run(events())
    expected = canon(invoked)
    assert canon(streamed[-1]) == canon(astreamed) == canon(final) == expected
    result = invoked["result"]
    assert result.answer == ANSWERS[question] and result["user"] == "ann"
    # stream_mode="messages": the RAG step's run is tagged nostream, so a decline never shows
    texts = [m.text for m, _ in messages]
    assert DECLINED_TEXT not in " ".join(texts).lower()
    if question == DECLINE_Q:
        assert "".join(texts) == LC_ANSWER
    # the checkpoint round trip: the restored result is equal, and typed again on request
    restored = graph.get_state({"configurable": {"thread_id": "t0"}}).values["result"]
    assert canon(restored) == canon(result)
    typed = SelfRouteOutput.model_validate(restored)
    assert typed.answer == result.answer and typed.route is result.route
    assert typed.usage.input_tokens == result.usage.input_tokens


@pytest.mark.parametrize("allowlist", [False, True], ids=["default", "strict_allowlist"])
def test_langgraph_checkpoint_with_json_serde(
    route: SelfRoute, allowlist: bool, caplog: pytest.LogCaptureFixture
) -> None:
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    out = route.invoke({"question": DECLINE_Q, "user": "ann"})
    serde = (
        JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)
        if allowlist
        else JsonPlusSerializer()
    )
    restored = serde.loads_typed(serde.dumps_typed(out))
    assert restored == out and restored["route"] == Route.LONG_CONTEXT
    assert SelfRouteOutput.model_validate(restored).to_dict() == out.to_dict()
    # the output's values are plain: no selfroute type reaches the checkpoint, allowlist or not
    assert "unregistered type" not in caplog.text


def test_agent_with_as_tool(route: SelfRoute, server: ScriptedOpenAIServer, question: str) -> None:
    from langchain.agents import create_agent

    tool = route.as_tool(name="zephyr_manual", description="Answers about the Zephyr manual.")
    agent: Runnable[Any, Any] = create_agent(chat_openai(server, model="gpt-4o"), tools=[tool])
    value = {"messages": [HumanMessage(question)]}

    # an agent streams its states: the last "values" chunk is the final state
    runs = run_all(agent, value, graph=True)
    runs.check()
    messages = runs.invoke["messages"]
    tool_message = messages[-2]
    assert tool_message.content == ANSWERS[question]
    assert tool_message.artifact["route"] == ROUTES[question].value
    assert messages[-1].text == AGENT_PREFIX + ANSWERS[question]
