"""Streaming a structured verdict through LangChain: the model under ``with_structured_output``.

``with_structured_output(schema, include_raw=True)`` is ``{"raw": model} | parser``; streamed
whole, it yields the raw message only once the model has finished. The handler instead streams the
bound model (its response format or tool binding kept) and hands the core each piece of the
object's JSON text as it arrives -- the message content for a JSON-schema response format, the
first tool call's argument deltas for tool calling -- then runs LangChain's own parser on the
merged message, so the object that decides the route is exactly the one ``invoke`` gets.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableParallel, RunnableSequence

__all__ = ["ObjectDeltas", "split_structured"]


def split_structured(runnable: Runnable[Any, Any]) -> tuple[Runnable[Any, Any], Any] | None:
    """The ``(model, parser)`` of a ``with_structured_output(..., include_raw=True)`` runnable.

    ``model`` is the bound chat model (stream it), ``parser`` takes ``{"raw": message}`` and
    returns ``{"raw", "parsed", "parsing_error"}`` as the whole runnable does. ``None`` when the
    runnable is not built that way (a custom ``with_structured_output``): call it whole.
    """
    if not isinstance(runnable, RunnableSequence):
        return None
    first = runnable.first
    if not isinstance(first, RunnableParallel) or list(first.steps__) != ["raw"]:
        return None
    rest = [*runnable.middle, runnable.last]
    parser: Runnable[Any, Any] = rest[0] if len(rest) == 1 else RunnableSequence(*rest)
    return first.steps__["raw"], parser


class ObjectDeltas:
    """The pieces of the object's JSON text in a stream of message chunks.

    A chunk with tool-call chunks gives the arguments delta of the first tool call (by its
    ``index``); once a tool call has been seen, content (a preamble some models write) is not
    part of the object. Without tool calls the content is the object (JSON-schema responses).
    """

    def __init__(self) -> None:
        self._tool_seen = False
        self._index: Any = None

    def delta(self, piece: Any, content: str) -> str:
        """The object text in ``piece`` (``content`` is its text content)."""
        calls = getattr(piece, "tool_call_chunks", None) or []
        if calls:
            out = []
            for call in calls:
                index = call.get("index")
                if not self._tool_seen:
                    self._tool_seen, self._index = True, index
                if index == self._index:
                    out.append(call.get("args") or "")
            return "".join(out)
        return "" if self._tool_seen else content
