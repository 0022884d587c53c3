"""``FunctionHandler(stream_structured=...)``: a plain function that yields a structured verdict's
JSON text piece by piece streams the ``answer`` as it arrives (the caller sees text before the
function is asked for the rest of the object), exactly, equal to the unstreamed call; a declined
object shows nothing; a cut-off or malformed object goes to long context."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

import selfroute as sr
from selfroute.flow import ResultEvent, TokenEvent, adrive, drive, self_route_flow

DOC = (
    "Mara Holt kept the lamp at Grey Point for thirty-one years. The lamp was electrified in 1951."
)
QUESTION = "How long did Mara Holt keep the lamp?"
ANSWER = 'Thirty-one "years" \\ café — 東京 😀 𝄞\nline two'
LC = "From the whole document: thirty-one years."


def handler(wire: str, seen: list[str], marks: list[str]) -> sr.FunctionHandler:
    """The object's JSON text ``wire`` in 3-character pieces; before each piece, ``marks`` gets
    what the caller had been shown so far (``seen``)."""

    def pieces(prompt: str, schema: Any) -> Iterator[str]:
        assert schema["properties"]["answerable"]
        for i in range(0, len(wire), 3):
            marks.append("".join(seen))
            yield wire[i : i + 3]

    index = sr.LexicalIndex.from_text(DOC, doc_id="d")
    return sr.FunctionHandler(
        retrieve=index.search,
        generate=lambda prompt: LC,
        long_context=DOC,
        stream_structured=pieces,
    )


def run(wire: str) -> tuple[list[Any], list[str], sr.RouteResult]:
    seen: list[str] = []
    marks: list[str] = []
    flow = self_route_flow(QUESTION, sr.RouteConfig(verdict="structured"))
    events = []
    for event in drive(flow, handler(wire, seen, marks), stream=True):
        events.append(event)
        if isinstance(event, TokenEvent):
            seen.append(event.text)
    result = events[-1].result
    return events, marks, result


def test_the_answer_streams_before_the_rest_of_the_object_is_asked_for() -> None:
    wire = json.dumps({"answerable": True, "answer": ANSWER})  # \\u escapes, split surrogates
    events, marks, result = run(wire)
    text = "".join(e.text for e in events if isinstance(e, TokenEvent))
    assert text == ANSWER and result.answer == ANSWER and result.route is sr.Route.RAG
    assert any(m and len(m) < len(ANSWER) for m in marks), "nothing was shown before the end"
    flow = self_route_flow(QUESTION, sr.RouteConfig(verdict="structured"))
    whole = sr.flow.run_flow(flow, handler(wire, [], []))
    assert whole.answer == ANSWER


def test_a_declined_object_shows_nothing_of_itself() -> None:
    events, _, result = run(json.dumps({"answerable": False, "answer": "Mara, perhaps."}))
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == LC
    assert result.route is sr.Route.LONG_CONTEXT


@pytest.mark.parametrize(
    "wire",
    ['{"answerable": true, "answer": "Thirty-one ye', '{"answerable": true, "answer": "a" "b"}'],
    ids=["cut-off", "malformed"],
)
def test_a_broken_object_goes_to_long_context(wire: str) -> None:
    _, _, result = run(wire)
    assert (result.route, result.answer) == (sr.Route.LONG_CONTEXT, LC)


def test_an_async_generator_streams_too() -> None:
    wire = json.dumps({"answerable": True, "answer": ANSWER})

    async def pieces(prompt: str, schema: Any) -> AsyncIterator[str]:
        for i in range(0, len(wire), 4):
            yield wire[i : i + 4]

    index = sr.LexicalIndex.from_text(DOC, doc_id="d")
    h = sr.FunctionHandler(
        retrieve=index.search, generate=lambda p: LC, long_context=DOC, stream_structured=pieces
    )

    async def main() -> tuple[list[Any], sr.RouteResult]:
        flow = self_route_flow(QUESTION, sr.RouteConfig(verdict="structured"))
        events = [e async for e in adrive(flow, h, stream=True)]
        whole = await sr.flow.arun_flow(
            self_route_flow(QUESTION, sr.RouteConfig(verdict="structured")), h
        )
        return events, whole

    events, whole = asyncio.run(main())
    tokens = [e.text for e in events if isinstance(e, TokenEvent)]
    assert "".join(tokens) == ANSWER == whole.answer
    assert len(tokens) > 1 and isinstance(events[-1], ResultEvent)
