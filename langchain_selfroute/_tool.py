"""Self-Route as an agent tool."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.callbacks import BaseCallbackManager, Callbacks
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import patch_config
from langchain_core.tools import StructuredTool, ToolException
from pydantic import BaseModel, Field

from langchain_selfroute._output import SelfRouteOutput
from selfroute import Abstention, ConfigurationError, ModelOutputError, SelfRouteError

__all__ = [
    "DEFAULT_TOOL_DESCRIPTION",
    "NOT_FOUND",
    "SelfRouteToolInput",
    "create_selfroute_tool",
    "not_found_message",
]

DEFAULT_TOOL_DESCRIPTION = (
    "Answer a question from the document collection. Ask one self-contained question in plain "
    "language (include names and dates; do not refer to earlier messages). Returns a short answer."
)

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

#: The tool's content when the result abstained: the agent must read it as "not found".
NOT_FOUND = "The answer was not found in the documents."
_WHY_NOT_FOUND = {
    Abstention.DECLINED: "The documents do not contain it.",
    Abstention.UNGROUNDED: (
        "A draft answer could not be verified against the documents, so it was withheld."
    ),
    Abstention.OVER_BUDGET: (
        "The most relevant excerpts do not contain it; the full documents were not searched "
        "(long-context budget exhausted)."
    ),
}


def not_found_message(abstention: Abstention | None) -> str:
    """The tool content for an abstained result: says plainly the answer was not found."""
    why = _WHY_NOT_FOUND.get(abstention) if abstention is not None else None
    return f"{NOT_FOUND} {why}" if why else NOT_FOUND


class SelfRouteToolInput(BaseModel):
    """Arguments of the Self-Route tool."""

    question: str = Field(description="A self-contained question about the documents.")


def _content(output: Any) -> tuple[str, dict[str, Any]]:
    if not isinstance(output, SelfRouteOutput):
        raise ModelOutputError(
            f"the tool's runnable returned {type(output).__name__}; expected SelfRouteOutput "
            "(pass a SelfRoute, optionally wrapped with with_retry/with_fallbacks/with_config)"
        )
    if output.abstained:
        return not_found_message(output.abstention), output.to_dict()
    return output.answer or "", output.to_dict()


def _manager(callbacks: Callbacks) -> BaseCallbackManager | None:
    """The child callback manager LangChain injects (``None`` keeps the config's callbacks)."""
    return callbacks if isinstance(callbacks, BaseCallbackManager) else None


@contextmanager
def _as_tool_error(enabled: bool) -> Iterator[None]:
    """Turn selfroute errors into ``ToolException`` when the tool handles tool errors."""
    try:
        yield
    except SelfRouteError as exc:
        if not enabled:
            raise
        raise ToolException(str(exc)) from exc


def create_selfroute_tool(
    selfroute: Runnable[Any, Any],
    *,
    name: str = "answer_from_documents",
    description: str = DEFAULT_TOOL_DESCRIPTION,
    return_direct: bool = False,
    handle_tool_error: Any = False,
) -> StructuredTool:
    """A ``StructuredTool`` that answers questions with ``selfroute``.

    The tool's content is the answer; its artifact (``ToolMessage.artifact``) is the full result
    dict (route, reason, sources, usage per step, always-LC counterfactual), so an agent sees a
    short answer while the application keeps the accounting. When the result abstained (the
    models declined, or in grounded mode the answer could not be verified), the content says
    plainly that the answer was not found in the documents (:data:`NOT_FOUND`), so the agent
    does not mistake a decline word for an answer. Sync and async; the Self-Route run
    and its model calls are child runs of the tool run.

    Args:
        selfroute: A :class:`~langchain_selfroute.SelfRoute` (or it wrapped with ``with_retry``,
            ``with_fallbacks``, ``with_config``).
        name: Tool name shown to the model (letters, digits, ``_`` and ``-``; at most 64).
        description: Tool description shown to the model: say what the documents are about.
        return_direct: Return the tool output to the user directly.
        handle_tool_error: As ``BaseTool.handle_tool_error``: ``True`` (or a message, or a
            function) turns a selfroute error (e.g. a failed long-context call) into a tool
            message the model can read instead of an exception. By default errors propagate with
            their type (``LongContextError`` keeps the partial result).

    Returns:
        The tool, with ``response_format="content_and_artifact"``.
    """
    if not isinstance(selfroute, Runnable):
        raise ConfigurationError(
            f"create_selfroute_tool needs a SelfRoute runnable, got {type(selfroute).__name__}"
        )
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigurationError(
            f"tool name must match [A-Za-z0-9_-]{{1,64}} (what model APIs accept), got {name!r}"
        )
    if not isinstance(description, str) or not description.strip():
        raise ConfigurationError("tool description must be a non-empty string")

    soften = bool(handle_tool_error)

    # LangChain injects the tool's config and, separately, a child callback manager of the tool
    # run: together they make the Self-Route run a child of the tool run.
    def answer(
        question: str, config: RunnableConfig, callbacks: Callbacks = None
    ) -> tuple[str, dict[str, Any]]:
        with _as_tool_error(soften):
            return _content(
                selfroute.invoke(question, patch_config(config, callbacks=_manager(callbacks)))
            )

    async def aanswer(
        question: str, config: RunnableConfig, callbacks: Callbacks = None
    ) -> tuple[str, dict[str, Any]]:
        with _as_tool_error(soften):
            child = patch_config(config, callbacks=_manager(callbacks))
            return _content(await selfroute.ainvoke(question, child))

    return StructuredTool.from_function(
        func=answer,
        coroutine=aanswer,
        name=name,
        description=description,
        args_schema=SelfRouteToolInput,
        response_format="content_and_artifact",
        return_direct=return_direct,
        handle_tool_error=handle_tool_error,
    )
