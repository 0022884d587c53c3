"""What a query returns: :class:`SelfRouteResponse`, the result in its metadata, and the stream.

A finished query's :class:`selfroute.RouteResult` goes into ``response.metadata[RESULT_KEY]`` (as
``RouteResult.to_dict()``, carrying the live result for :func:`get_route_result`) and fires a
:class:`~llamaindex_selfroute.SelfRouteResultEvent`; a streamed query's driver events become the
response's text (:func:`stream_text`, :func:`astream_text`) and
:class:`~llamaindex_selfroute.SelfRouteRouteEvent` events.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import Any

from llama_index.core.base.response.schema import Response
from llama_index.core.schema import NodeWithScore
from llama_index_instrumentation import get_dispatcher

from llamaindex_selfroute._events import SelfRouteResultEvent, SelfRouteRouteEvent
from selfroute import Abstention, RouteResult, SelfRouteError
from selfroute.flow import FlowEvent, ResultEvent, RouteEvent, TokenEvent

__all__ = [
    "ABSTENTION_MESSAGES",
    "RESULT_KEY",
    "RESULT_OBJECT_KEY",
    "ResultDict",
    "SelfRouteResponse",
    "abstention_message",
    "astream_text",
    "event_text",
    "finish_result",
    "get_route_result",
    "response_of",
    "stream_text",
]

#: The engine's dispatcher (the events keep the source they had when the engine fired them).
dispatcher = get_dispatcher("llamaindex_selfroute._engine")

#: ``response.metadata[RESULT_KEY]`` holds ``RouteResult.to_dict()`` (JSON-serializable; the
#: :class:`selfroute.RouteResult` itself is :func:`get_route_result`). The other metadata entries
#: are LlamaIndex's usual ones: each source node's metadata under its node id.
RESULT_KEY = "selfroute"
#: Formerly the metadata key of the live ``RouteResult``; no longer set, so that
#: ``json.dumps(response.metadata)`` works: use :func:`get_route_result`.
RESULT_OBJECT_KEY = "selfroute_result"

#: What an agent is told instead of the answer when the engine abstained (``str(response)``).
ABSTENTION_MESSAGES = {
    Abstention.DECLINED: (
        "NOT FOUND: the documents do not contain the answer to this question. Do not guess; "
        "say that the documents do not answer it, or try a different question."
    ),
    Abstention.UNGROUNDED: (
        "NOT FOUND: no answer supported by the documents' text was found for this question "
        "(a candidate answer could not be verified against the documents). Do not guess."
    ),
    Abstention.OVER_BUDGET: (
        "NOT FOUND: the retrieved passages do not contain the answer, and the full documents "
        "were not read (long-context budget exhausted). Do not guess."
    ),
}


def abstention_message(result: RouteResult) -> str | None:
    """The "NOT FOUND" note for an abstained result (``None`` when it answers)."""
    if result.abstention is None:
        return None
    return ABSTENTION_MESSAGES.get(result.abstention, ABSTENTION_MESSAGES[Abstention.DECLINED])


class ResultDict(dict[str, Any]):
    """``RouteResult.to_dict()`` (``json.dumps`` sees a plain dict) carrying the live result."""

    def __init__(self, result: RouteResult) -> None:
        super().__init__(result.to_dict())
        self.result = result


@dataclasses.dataclass
class SelfRouteResponse(Response):
    """A LlamaIndex ``Response`` whose ``str()`` never is a bare decline word.

    ``response.response`` is the answer (the sentinel when the engine abstained); ``str(response)``
    -- what ``QueryEngineTool``, ``RouterQueryEngine`` and ``SubQuestionQueryEngine`` read -- is
    the answer, or a plain "NOT FOUND: ..." note (:data:`ABSTENTION_MESSAGES`) when it abstained.
    """

    def __str__(self) -> str:
        info = self.metadata.get(RESULT_KEY) if self.metadata else None
        result = getattr(info, "result", None)
        if isinstance(result, RouteResult):
            note = abstention_message(result)
            if note is not None:
                return note
        return super().__str__()


def get_route_result(response: Any) -> RouteResult:
    """The :class:`selfroute.RouteResult` behind a response of :class:`SelfRouteQueryEngine`.

    Works on ``Response``, on a finished ``StreamingResponse``/``AsyncStreamingResponse`` and on
    an agent's ``ToolOutput`` (its ``raw_output``).

    Raises:
        SelfRouteError: The response carries no result (not from this engine, or a stream that
            has not finished yet).
    """
    raw = getattr(response, "raw_output", None)
    if raw is not None and not hasattr(response, "metadata"):
        response = raw
    metadata = getattr(response, "metadata", None) or {}
    result = getattr(metadata.get(RESULT_KEY), "result", None)
    if not isinstance(result, RouteResult):
        raise SelfRouteError(
            "this response carries no Self-Route result: it did not come from "
            "SelfRouteQueryEngine, or it is a stream that has not been consumed yet"
        )
    return result


def finish_result(result: RouteResult, metadata: dict[str, Any]) -> None:
    """Put ``result`` into a response's ``metadata`` and fire :class:`SelfRouteResultEvent`."""
    for passage in result.sources:  # LlamaIndex's usual entries: node id -> node metadata
        if isinstance(passage.source, NodeWithScore):
            node = passage.source.node
            metadata.setdefault(node.node_id, dict(node.metadata))
    metadata[RESULT_KEY] = ResultDict(result)
    dispatcher.event(
        SelfRouteResultEvent(
            route=result.route.value, reason=result.reason.value, result=result.to_dict()
        )
    )


def response_of(result: RouteResult) -> Response:
    """The :class:`SelfRouteResponse` of a finished (non-streaming) query."""
    nodes = [p.source for p in result.sources if isinstance(p.source, NodeWithScore)]
    metadata: dict[str, Any] = {}
    finish_result(result, metadata)
    return SelfRouteResponse(response=result.answer, source_nodes=nodes, metadata=metadata)


def event_text(event: FlowEvent, metadata: dict[str, Any], retraction_text: str) -> str | None:
    """Text to stream for one driver event (``None``: nothing)."""
    if isinstance(event, TokenEvent):
        return event.text
    if isinstance(event, RouteEvent):
        dispatcher.event(
            SelfRouteRouteEvent(
                route=event.route.value,
                reason=event.reason.value if event.reason is not None else None,
                retracted=event.retracted,
            )
        )
        if event.retracted:
            metadata["selfroute_retracted"] = True
            return retraction_text or None
        return None
    if isinstance(event, ResultEvent):
        finish_result(event.result, metadata)
    return None


def stream_text(
    events: Iterator[FlowEvent], metadata: dict[str, Any], retraction_text: str
) -> Generator[str, None, None]:
    """The text a ``StreamingResponse`` yields for the driver's events."""
    for event in events:
        text = event_text(event, metadata, retraction_text)
        if text:
            yield text


async def astream_text(
    events: AsyncIterator[FlowEvent], metadata: dict[str, Any], retraction_text: str
) -> AsyncGenerator[str, None]:
    """Async :func:`stream_text` (for an ``AsyncStreamingResponse``)."""
    async for event in events:
        text = event_text(event, metadata, retraction_text)
        if text:
            yield text
