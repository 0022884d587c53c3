"""Streaming output: the drivers' flow events as :class:`SelfRouteChunk` mappings."""

from __future__ import annotations

from typing import Any

from langchain_selfroute._output import SelfRouteChunk, SelfRouteOutput
from selfroute import Route
from selfroute.flow import FlowEvent, ResultEvent, RouteEvent, TokenEvent

__all__ = ["EventChunker"]


class EventChunker:
    """Flow events -> :class:`SelfRouteChunk` mappings whose sum equals the invoke output."""

    def __init__(self, passthrough: dict[str, Any]) -> None:
        self.passthrough = passthrough
        self.route: Route | None = None
        self.shown = ""

    def chunks(self, event: FlowEvent) -> list[SelfRouteChunk]:
        """The chunks for one flow event (a result may need a correction first)."""
        if isinstance(event, RouteEvent):
            self.route = event.route
            if event.retracted:
                self.shown = ""
            return [
                SelfRouteChunk(route=event.route, reason=event.reason, retracted=event.retracted)
            ]
        if isinstance(event, TokenEvent):
            self.shown += event.text
            return [SelfRouteChunk(route=self.route, text=event.text, stage=event.stage)]
        assert isinstance(event, ResultEvent)
        result = event.result
        output = SelfRouteOutput.from_result(result, self.passthrough)
        answer = result.answer or ""
        out: list[SelfRouteChunk] = []
        if answer.startswith(self.shown):
            rest = answer[len(self.shown) :]
        else:  # the answer is not what was shown (e.g. quotes cleaned off): send it again
            out.append(SelfRouteChunk(route=result.route, text=answer, retracted=True))
            rest = ""
        # The final chunk closes the mapping: every other key, and the rest of the answer.
        fields = {**output, "answer": rest}
        out.append(SelfRouteChunk(fields, route=result.route, reason=result.reason, output=output))
        return out
