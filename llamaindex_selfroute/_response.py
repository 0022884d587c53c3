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
from selfroute import Abstention, RouteConfig, RouteResult, SelfRouteError, Stage
from selfroute.flow import FlowEvent, ResultEvent, RouteEvent, SentinelSniffer, TokenEvent

__all__ = [
    "ABSTENTION_MESSAGES",
    "NOT_FOUND_MESSAGES",
    "RESULT_KEY",
    "RESULT_OBJECT_KEY",
    "ResultDict",
    "SelfRouteResponse",
    "StreamText",
    "abstention_message",
    "astream_text",
    "finish_result",
    "get_route_result",
    "response_of",
    "shown_answer",
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

#: What a person reads when the engine abstained: ``str(response)``, ``response.response`` and the
#: streamed text of every call style (query, aquery, streaming, chat engines). The model's decline
#: word stays in ``metadata["selfroute"]["answer"]``.
NOT_FOUND_MESSAGES = {
    Abstention.DECLINED: "Not found in the documents.",
    Abstention.UNGROUNDED: (
        "Not found in the documents: a candidate answer could not be verified against their text."
    ),
    Abstention.OVER_BUDGET: (
        "Not found in the retrieved passages; the full documents were not read (long-context "
        "budget exhausted)."
    ),
}

#: What an agent is told instead of the answer when the engine abstained (the tool output's
#: ``content``): the same finding, with an instruction not to guess.
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
    """The agent's "NOT FOUND" note for an abstained result (``None`` when it answers)."""
    if result.abstention is None:
        return None
    return ABSTENTION_MESSAGES.get(result.abstention, ABSTENTION_MESSAGES[Abstention.DECLINED])


def shown_answer(result: RouteResult) -> str | None:
    """The text a person reads: the answer, or :data:`NOT_FOUND_MESSAGES` when it abstained."""
    if result.abstention is None:
        return result.answer
    return NOT_FOUND_MESSAGES.get(result.abstention, NOT_FOUND_MESSAGES[Abstention.DECLINED])


class ResultDict(dict[str, Any]):
    """``RouteResult.to_dict()`` (``json.dumps`` sees a plain dict) carrying the live result."""

    def __init__(self, result: RouteResult) -> None:
        super().__init__(result.to_dict())
        self.result = result


@dataclasses.dataclass
class SelfRouteResponse(Response):
    """A LlamaIndex ``Response`` whose text never is a bare decline word.

    ``response.response`` and ``str(response)`` -- what people, ``RouterQueryEngine``,
    ``SubQuestionQueryEngine`` and the chat engines read -- are the answer, or "Not found in the
    documents." (:data:`NOT_FOUND_MESSAGES`) when the engine abstained; a streamed query yields
    the same text. The agent tool says it with an instruction instead
    (:data:`ABSTENTION_MESSAGES`); the model's own words are in ``metadata["selfroute"]``.
    """


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
    return SelfRouteResponse(response=shown_answer(result), source_nodes=nodes, metadata=metadata)


class StreamText:
    """The text a streamed query yields for the driver's events: the same text a query gives.

    The long-context step's text is held while it may still be the start of a decline (as the
    drivers hold the RAG step's), so an abstention streams "Not found in the documents." rather
    than the model's decline word. Should text already shown turn out to be withdrawn (a
    retraction, rare), ``retraction_text`` is streamed and ``metadata["selfroute_retracted"]``
    set: the joined stream then differs from ``str(response)``.

    Args:
        metadata: The streaming response's metadata (the result goes there at the end).
        retraction_text: Streamed after text that is withdrawn.
        config: The route config (its sentinel, ``strict``, ``stream_hold_chars`` and
            ``decline_detector`` judge the long-context text as they judge the RAG step's).
        question: The question (for the decline detector).
    """

    def __init__(
        self,
        metadata: dict[str, Any],
        retraction_text: str,
        *,
        config: RouteConfig,
        question: str,
    ) -> None:
        self.metadata = metadata
        self.retraction_text = retraction_text
        self.config = config
        self.question = question
        self.sniffer: SentinelSniffer | None = None
        self.shown = False  # text shown since the last retraction

    def _retract(self) -> str:
        self.metadata["selfroute_retracted"] = True
        self.shown = False
        return self.retraction_text

    def text(self, event: FlowEvent) -> str:
        """Text to stream for one driver event (``""``: nothing)."""
        out = ""
        if isinstance(event, TokenEvent):
            if event.stage is Stage.LONG_CONTEXT:
                if self.sniffer is None:
                    self.sniffer = SentinelSniffer(
                        sentinel=self.config.prompts.sentinel,
                        strict=self.config.strict,
                        hold_chars=self.config.stream_hold_chars,
                        question=self.question,
                        detector=self.config.decline_detector,
                    )
                out = self.sniffer.feed(event.text)
            else:
                out = event.text
        elif isinstance(event, RouteEvent):
            dispatcher.event(
                SelfRouteRouteEvent(
                    route=event.route.value,
                    reason=event.reason.value if event.reason is not None else None,
                    retracted=event.retracted,
                )
            )
            self.sniffer = None
            if event.retracted and self.shown:
                out = self._retract()
        elif isinstance(event, ResultEvent):
            out = self._finish(event.result)
        self.shown = self.shown or bool(out)
        return out

    def _finish(self, result: RouteResult) -> str:
        finish_result(result, self.metadata)
        if result.abstention is not None:
            note = shown_answer(result) or ""
            return (self._retract() + note) if self.shown else note
        if self.sniffer is not None:  # the held rest of the long-context answer
            return self.sniffer.remainder(result.answer or "")
        return ""


def stream_text(events: Iterator[FlowEvent], texts: StreamText) -> Generator[str, None, None]:
    """The text a ``StreamingResponse`` yields for the driver's events."""
    for event in events:
        if text := texts.text(event):
            yield text


async def astream_text(
    events: AsyncIterator[FlowEvent], texts: StreamText
) -> AsyncGenerator[str, None]:
    """Async :func:`stream_text` (for an ``AsyncStreamingResponse``)."""
    async for event in events:
        if text := texts.text(event):
            yield text
