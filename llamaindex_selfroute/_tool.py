"""The engine as an agent tool (``FunctionAgent``, ``ReActAgent``, any LlamaIndex agent)."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.response.schema import AsyncStreamingResponse, StreamingResponse
from llama_index.core.tools import QueryEngineTool, ToolMetadata, ToolOutput

from llamaindex_selfroute._engine import SelfRouteQueryEngine
from llamaindex_selfroute._response import ABSTENTION_MESSAGES, RESULT_KEY, abstention_message
from selfroute import ConfigurationError, RouteResult

__all__ = [
    "ABSTENTION_MESSAGES",
    "DEFAULT_TOOL_DESCRIPTION",
    "SelfRouteTool",
    "create_selfroute_tool",
]

DEFAULT_TOOL_DESCRIPTION = (
    "Answers a question from the indexed documents. Input: one self-contained natural-language "
    "question. Output: a short answer taken from the documents, or a note that the documents do "
    "not contain the answer."
)


class SelfRouteTool(QueryEngineTool):
    """A ``QueryEngineTool`` that also works with a streaming engine.

    The output's ``content`` is the answer -- or, when the engine abstained (the documents do not
    contain the answer, or grounded mode could not verify one), a plain "NOT FOUND: ..." note
    (:data:`ABSTENTION_MESSAGES`) so the agent does not mistake a decline for an answer.
    ``raw_output`` is the ``Response`` whose ``metadata["selfroute"]`` holds the route, reason,
    abstention, usage and counterfactual (a streamed answer is collected first, so an agent always
    gets the finished answer and metadata).
    """

    def _output(self, query: str, response: Any) -> ToolOutput:
        content = str(response.response or "")
        info = (getattr(response, "metadata", None) or {}).get(RESULT_KEY)
        result = getattr(info, "result", None)
        if isinstance(result, RouteResult):
            content = abstention_message(result) or content
        return ToolOutput(
            content=content,
            tool_name=self.metadata.get_name(),
            raw_input={"input": query},
            raw_output=response,
        )

    def call(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Answer the question (sync)."""
        query = self._get_query_str(*args, **kwargs)
        response = self.query_engine.query(query)
        if isinstance(response, StreamingResponse):
            response = response.get_response()
        return self._output(query, response)

    async def acall(self, *args: Any, **kwargs: Any) -> ToolOutput:
        """Answer the question (async)."""
        query = self._get_query_str(*args, **kwargs)
        response = await self.query_engine.aquery(query)
        if isinstance(response, AsyncStreamingResponse):
            response = await response.get_response()
        return self._output(query, response)


def create_selfroute_tool(
    engine: SelfRouteQueryEngine,
    *,
    name: str = "selfroute_search",
    description: str = DEFAULT_TOOL_DESCRIPTION,
    return_direct: bool = False,
) -> SelfRouteTool:
    """Wrap a :class:`SelfRouteQueryEngine` as an agent tool.

    Args:
        engine: The engine.
        name: Tool name shown to the agent's LLM.
        description: What the tool does (the agent's LLM reads this to decide when to call it).
        return_direct: Return the tool's answer as the agent's final answer.

    Raises:
        ConfigurationError: ``engine`` is not a ``SelfRouteQueryEngine`` or ``name`` is empty.
    """
    if not isinstance(engine, SelfRouteQueryEngine):
        raise ConfigurationError(
            f"engine must be a SelfRouteQueryEngine, got {type(engine).__name__}"
        )
    if not isinstance(name, str) or not name.strip():
        raise ConfigurationError("tool name must be a non-empty string")
    metadata = ToolMetadata(name=name, description=description, return_direct=return_direct)
    return SelfRouteTool(query_engine=engine, metadata=metadata)
