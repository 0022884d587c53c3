"""The Self-Route agent tool: content and artifact, sync and async, an agent, standard suites."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_tests.integration_tests import ToolsIntegrationTests
from langchain_tests.unit_tests import ToolsUnitTests

import selfroute as sr
from langchain_selfroute import TAG_LONG_CONTEXT, TAG_RAG, SelfRoute, create_selfroute_tool
from tests.conformance.scenarios import BY_NAME
from tests.unit.langchain_selfroute.fakes import ScriptedChatModel, ToolCallingModel, scenario_route
from tests.unit.langchain_selfroute.test_tracing import Collector

SENTINEL = BY_NAME["sentinel"]


def tool_for(scenario_name: str = "sentinel") -> tuple[StructuredTool, ScriptedChatModel]:
    route, model = scenario_route(BY_NAME[scenario_name])
    return create_selfroute_tool(route, name="lighthouse_docs"), model


def call(tool: BaseTool, question: str) -> ToolMessage:
    return tool.invoke(
        {"type": "tool_call", "name": tool.name, "args": {"question": question}, "id": "c1"}
    )


def test_tool_returns_answer_as_content_and_result_as_artifact() -> None:
    tool, model = tool_for()
    assert tool.response_format == "content_and_artifact"
    msg = call(tool, SENTINEL.question)
    assert isinstance(msg, ToolMessage) and msg.tool_call_id == "c1"
    assert msg.content == "In 1901."
    assert msg.artifact["route"] == "long_context" and msg.artifact["reason"] == "declined"
    assert msg.artifact["usage"]["input_tokens"] == 1620
    assert msg.artifact["sources"][0]["page_content"] == SENTINEL.passages[0]
    assert tool.invoke({"question": SENTINEL.question}) == "In 1901."
    assert model.modes() == {"sync"}


async def test_tool_async_path_is_async() -> None:
    tool, model = tool_for()
    msg = await tool.ainvoke(
        {"type": "tool_call", "name": tool.name, "args": {"question": "When?"}, "id": "c2"}
    )
    assert msg.content == "In 1901." and msg.artifact["route"] == "long_context"
    assert model.modes() == {"async"}


def test_tool_schema_and_validation() -> None:
    tool, _ = tool_for()
    assert tool.name == "lighthouse_docs"
    assert list(tool.get_input_schema().model_json_schema()["properties"]) == ["question"]
    with pytest.raises(sr.ConfigurationError, match="tool name"):
        create_selfroute_tool(tool_for()[0], name="has spaces")  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="needs a SelfRoute"):
        create_selfroute_tool(object())  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="description"):
        create_selfroute_tool(scenario_route(SENTINEL)[0], description=" ")


def test_tool_run_is_the_parent_of_the_selfroute_run() -> None:
    tool, _ = tool_for()
    tracer = Collector()
    tool.invoke({"question": SENTINEL.question}, {"callbacks": [tracer]})
    (root,) = tracer.roots
    assert root.run_type == "tool" and root.name == "lighthouse_docs"
    (chain,) = root.child_runs
    assert chain.name == "SelfRoute"
    assert [c.name for c in chain.child_runs][1:] == [TAG_RAG, TAG_LONG_CONTEXT]


def test_tool_accepts_a_wrapped_selfroute_and_reports_errors() -> None:
    route, _ = scenario_route(SENTINEL)
    tool = create_selfroute_tool(route.with_retry(stop_after_attempt=2))
    assert tool.invoke({"question": "When?"}) == "In 1901."
    broken = SelfRoute(
        retriever=route.retriever,
        llm=ScriptedChatModel(rag_output="unanswerable", fail={"long_context": OSError("down")}),
        document=SENTINEL.document,
    )
    soft = create_selfroute_tool(broken, handle_tool_error=True)
    assert "long-context model call failed" in soft.invoke({"question": "When?"})
    with pytest.raises(sr.LongContextError):
        create_selfroute_tool(broken).invoke({"question": "When?"})
    with pytest.raises(sr.ModelOutputError, match="expected SelfRouteOutput"):
        create_selfroute_tool(route | (lambda r: r.answer)).invoke({"question": "When?"})


def test_agent_uses_the_tool() -> None:
    tool, model = tool_for()
    agent_model = ToolCallingModel()
    agent = create_agent(agent_model, tools=[tool], system_prompt="Use the documents.")
    state = agent.invoke({"messages": [HumanMessage("When was the keeper born?")]})
    messages = state["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert agent_model.tool_names == ["lighthouse_docs"]
    assert len(tool_messages) == 1 and tool_messages[0].content == "In 1901."
    assert tool_messages[0].artifact["route"] == "long_context"
    assert messages[-1].content == "According to the documents: In 1901."
    assert [c[1] for c in model.calls] == ["rag", "long_context"]


async def test_agent_uses_the_tool_async() -> None:
    tool, model = tool_for("answered")
    agent = create_agent(ToolCallingModel(question="How long?"), tools=[tool])
    state = await agent.ainvoke({"messages": [HumanMessage("How long was the lamp kept?")]})
    assert state["messages"][-1].content == "According to the documents: Thirty-one years."
    assert model.modes() == {"async"}


class _SelfRouteTool:
    """What LangChain's standard tool suites need: the tool and example arguments."""

    @property
    def tool_constructor(self) -> type[BaseTool] | BaseTool:
        return tool_for()[0]

    @property
    def tool_invoke_params_example(self) -> dict[str, Any]:
        return {"question": SENTINEL.question}


class TestSelfRouteToolUnit(_SelfRouteTool, ToolsUnitTests):
    """LangChain's standard tool unit suite."""


class TestSelfRouteToolStandardIntegration(_SelfRouteTool, ToolsIntegrationTests):
    """The standard tool integration suite, run against fakes (no network)."""
