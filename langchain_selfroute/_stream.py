"""Streaming output: the drivers' flow events as :class:`SelfRouteChunk` mappings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.documents import Document

from langchain_selfroute._output import SelfRouteChunk, SelfRouteOutput
from selfroute import Reason, Route
from selfroute.flow import FlowEvent, ResultEvent, RouteEvent, TokenEvent

__all__ = ["EventChunker"]


class EventChunker:
    """Flow events -> :class:`SelfRouteChunk` mappings whose sum equals the invoke output.

    Nothing is sent before there is answer text or the result: a route event is held and rides
    on the next text chunk (or the final one). So a stream has not started when a step fails
    before its first token (the long-context provider down after the RAG step declined), and
    ``with_fallbacks`` (which switches only before the first chunk) can still fall back.
    """

    def __init__(
        self,
        passthrough: dict[str, Any],
        documents: Callable[[], list[Document] | None] = lambda: None,
    ) -> None:
        self.passthrough = passthrough
        self.documents = documents  # the long context's documents, once loaded
        self.route: Route | None = None
        self.reason: Reason | None = None
        self.shown = ""
        # A retraction not yet sent: the next chunk withdraws the text shown before it.
        self.retract = False

    def chunks(self, event: FlowEvent) -> list[SelfRouteChunk]:
        """The chunks for one flow event (none for a route event; a result may need a
        correction first)."""
        if isinstance(event, TokenEvent):  # most events: looked for first
            text = event.text
            if not text:
                return []
            self.shown += text
            chunk = SelfRouteChunk.delta(
                text,
                route=self.route,
                stage=event.stage,
                reason=self.reason,
                retracted=self.retract,
            )
            self.retract = False
            return [chunk]
        if isinstance(event, RouteEvent):
            self.route, self.reason = event.route, event.reason
            if event.retracted:
                self.shown = ""
                self.retract = True
            return []
        assert isinstance(event, ResultEvent)
        result = event.result
        output = SelfRouteOutput.from_result(result, self.passthrough, self.documents())
        answer = result.answer or ""
        out: list[SelfRouteChunk] = []
        if answer.startswith(self.shown):
            rest = answer[len(self.shown) :]
        else:  # the answer is not what was shown (e.g. quotes cleaned off): send it again
            out.append(SelfRouteChunk(route=result.route, text=answer, retracted=True))
            rest = ""
            self.retract = False
        # The final chunk closes the mapping: every other key, and the rest of the answer.
        fields = {**output, "answer": rest}
        out.append(
            SelfRouteChunk(
                fields,
                route=result.route,
                reason=result.reason,
                retracted=self.retract,
                output=output,
            )
        )
        return out
