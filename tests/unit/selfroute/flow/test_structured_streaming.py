"""The drivers with a handler that streams a structured verdict's JSON text
(``GenerationChunk.structured_delta``): the answer is shown once ``answerable`` is true and
before the object has ended, declines and grounded answers are never shown early, and an object
that never closed is no verdict, whatever the client's parser made of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import selfroute as sr
import selfroute.flow as srflow
from tests.unit.selfroute._scripted import Scripted

ANSWER = "Mara Holt kept the lamp for thirty-one years."


@dataclass
class StreamedObject(Scripted):
    """Streams the RAG step's object text in ``piece_chars`` pieces, then the object as the
    client parsed it (``parsed``: what a repairing partial-JSON parser would return)."""

    object_text: str = ""
    parsed: Any = None
    piece_chars: int = 3
    final_sent: bool = False

    def _object_chunks(self, step: srflow.Generate) -> Iterator[srflow.GenerationChunk]:
        self.seen.append(step)
        text = self.object_text
        for i in range(0, len(text), self.piece_chars):
            yield srflow.GenerationChunk(structured_delta=text[i : i + self.piece_chars])
        self.final_sent = True
        yield srflow.GenerationChunk(
            text=text, usage=self.rag_usage, model="rag-model", structured=self.parsed
        )

    def stream(self, step: srflow.Generate) -> Iterator[srflow.GenerationChunk]:
        if step.stage is sr.Stage.RAG and step.structured is not None:
            yield from self._object_chunks(step)
        else:
            yield from super().stream(step)


def _events(script: StreamedObject, **config: Any) -> tuple[list[Any], bool | None]:
    """The events, and whether the first RAG text came before the handler's final piece."""
    flow = srflow.self_route_flow("How long did Mara Holt keep the lamp?", sr.RouteConfig(**config))
    events, early = [], None
    for event in srflow.drive(flow, script, stream=True):
        events.append(event)
        if early is None and isinstance(event, srflow.TokenEvent) and event.stage is sr.Stage.RAG:
            early = not script.final_sent
    return events, early


def _shown(events: list[Any]) -> str:
    return "".join(e.text for e in events if isinstance(e, srflow.TokenEvent))


def _obj(answerable: Any, answer: str) -> tuple[str, dict[str, Any]]:
    obj = {"answerable": answerable, "answer": answer}
    return json.dumps(obj), obj


@pytest.mark.parametrize("verdict", ["structured", "auto"])
def test_answer_is_shown_before_the_object_ends(verdict: str) -> None:
    text, obj = _obj(True, ANSWER)
    events, early = _events(StreamedObject(object_text=text, parsed=obj), verdict=verdict)
    assert early is True
    result = events[-1].result
    assert result.route is sr.Route.RAG and _shown(events) == result.answer == ANSWER
    assert not any(isinstance(e, srflow.RouteEvent) and e.retracted for e in events)


@pytest.mark.parametrize(
    "answer", ["Thirty-one years, I think.", "The passage does not say how long she kept it."]
)
def test_declines_are_never_shown(answer: str) -> None:
    text, obj = _obj(answer.startswith("The passage"), answer)
    events, early = _events(StreamedObject(object_text=text, parsed=obj), verdict="structured")
    assert early is None  # no RAG text at all
    assert events[-1].result.route is sr.Route.LONG_CONTEXT
    assert _shown(events) == "In 1901."
    assert not any(isinstance(e, srflow.RouteEvent) and e.route is sr.Route.RAG for e in events)


def test_grounded_answers_wait_for_their_quotes() -> None:
    quote = "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years."
    obj = {"answerable": True, "answer": "Thirty-one years.", "quotes": [quote]}
    script = StreamedObject(object_text=json.dumps(obj), parsed=obj)
    events, early = _events(script, verdict="structured", grounded=True)
    assert early is False  # shown only once the whole object was checked
    assert events[-1].result.route is sr.Route.RAG


def test_an_object_that_never_closed_is_no_verdict() -> None:
    text, _ = _obj(True, ANSWER)
    cut = text[: text.index("thirty")]
    # the client's partial-JSON parser "repaired" the cut object into an answer
    repaired = {"answerable": True, "answer": "Mara Holt kept the lamp for "}
    events, early = _events(StreamedObject(object_text=cut, parsed=repaired), verdict="auto")
    result = events[-1].result
    assert early is True  # its opening was shown ...
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.EMPTY_OUTPUT)
    assert any(
        isinstance(e, srflow.RouteEvent) and e.retracted for e in events
    )  # ... and taken back
    assert result.answer == "In 1901."


def test_reordered_keys_are_held_until_the_object_ends() -> None:
    obj = {"answer": ANSWER, "answerable": True}
    script = StreamedObject(object_text=json.dumps(obj), parsed=obj)
    events, early = _events(script, verdict="structured")
    assert early is False and _shown(events) == ANSWER
