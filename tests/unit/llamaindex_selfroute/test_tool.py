"""The engine as an agent tool in FunctionAgent and ReActAgent, keeping the route metadata."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from llama_index.core.agent.workflow import FunctionAgent, ReActAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import QueryEngineTool

import selfroute as sr
from llamaindex_selfroute import (
    SelfRouteQueryEngine,
    SelfRouteTool,
    create_selfroute_tool,
    get_route_result,
)
from tests.conformance.scenarios import BY_NAME
from tests.unit.llamaindex_selfroute._scripted import scenario_parts

QUESTION = BY_NAME["sentinel"].question


def _engine(**kwargs: Any) -> SelfRouteQueryEngine:
    scenario = BY_NAME["sentinel"]
    retriever, rag, lc = scenario_parts(scenario)
    return SelfRouteQueryEngine(retriever, rag, lc, long_context=scenario.document, **kwargs)


def _function_calling_agent_llm(tool_name: str) -> MockFunctionCallingLLM:
    """Calls ``tool_name`` once with the question, then answers with the tool's output."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        results = [m for m in messages if m.role == MessageRole.TOOL]
        if results:
            return ChatMessage(role="assistant", content=f"Agent says: {results[-1].content}")
        call = ToolCallBlock(
            tool_call_id="call-1", tool_name=tool_name, tool_kwargs={"input": QUESTION}
        )
        return ChatMessage(role="assistant", blocks=[call])

    return MockFunctionCallingLLM(response_generator=respond)


def _react_agent_llm(tool_name: str) -> MockFunctionCallingLLM:
    """Writes ReAct steps: one action on ``tool_name``, then the final answer."""

    def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        observed = [
            m
            for m in messages
            if m.role != MessageRole.SYSTEM and (m.content or "").startswith("Observation:")
        ]
        if observed:
            seen = observed[-1].content.split("Observation:", 1)[1].strip()
            text = (
                f"Thought: I can answer without using any more tools.\nAnswer: Agent says: {seen}"
            )
        else:
            action = json.dumps({"input": QUESTION})
            text = f"Thought: I need to look this up.\nAction: {tool_name}\nAction Input: {action}"
        return ChatMessage(role="assistant", content=text)

    return MockFunctionCallingLLM(response_generator=respond, is_chat_model=True)


async def _run(agent: Any) -> tuple[str, list[ToolCallResult]]:
    handler = agent.run(user_msg="When was the keeper born?")
    results = [ev async for ev in handler.stream_events() if isinstance(ev, ToolCallResult)]
    output = await handler
    return str(output), results


def _check_tool_result(results: list[ToolCallResult], name: str) -> sr.RouteResult:
    assert len(results) == 1
    out = results[0].tool_output
    assert out.tool_name == name and not out.is_error
    assert out.content == "In 1901."
    # the route metadata travels with the tool output
    assert out.raw_output.metadata["selfroute"]["route"] == "long_context"
    result = get_route_result(out)
    assert result.reason is sr.Reason.DECLINED
    return result


@pytest.mark.parametrize("streaming_engine", [False, True])
async def test_function_agent_with_query_engine_tool(streaming_engine: bool) -> None:
    if streaming_engine:
        tool: QueryEngineTool = create_selfroute_tool(_engine(streaming=True), name="lighthouse")
    else:
        tool = QueryEngineTool.from_defaults(
            _engine(), name="lighthouse", description="Lighthouse docs"
        )
    agent = FunctionAgent(tools=[tool], llm=_function_calling_agent_llm("lighthouse"))
    output, results = await _run(agent)
    result = _check_tool_result(results, "lighthouse")
    assert output == "Agent says: In 1901."
    assert result.usage.input_tokens > 0


async def test_react_agent_with_selfroute_tool() -> None:
    tool = create_selfroute_tool(_engine(), name="lighthouse")
    agent = ReActAgent(tools=[tool], llm=_react_agent_llm("lighthouse"))
    output, results = await _run(agent)
    _check_tool_result(results, "lighthouse")
    assert output.endswith("Agent says: In 1901.")


def test_tool_sync_call_and_validation() -> None:
    tool = create_selfroute_tool(_engine(streaming=True), description="Lighthouse docs")
    assert isinstance(tool, SelfRouteTool)
    assert tool.metadata.name == "selfroute_search"
    out = tool.call(input=QUESTION)
    assert out.content == "In 1901."
    assert get_route_result(out).route is sr.Route.LONG_CONTEXT
    with pytest.raises(sr.ConfigurationError, match="SelfRouteQueryEngine"):
        create_selfroute_tool(object())  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="name"):
        create_selfroute_tool(_engine(), name=" ")
