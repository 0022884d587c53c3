"""Helpers to run one stage generator alone: send it step answers, collect what it yields."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

import selfroute as sr
from selfroute._flow._state import FlowState, start
from tests.unit.selfroute._scripted import WordCounter

QUESTION = "Who kept the lamp?"
TEXTS = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years.",
    "She was born in Dunmore in 1901.",
    "In the great storm of 1938 the supply boat could not land for six weeks.",
)


def passages(n: int = 3, score: float | None = 0.9) -> tuple[sr.Passage, ...]:
    """``n`` passages over :data:`TEXTS` (cycled), all scoring ``score``."""
    return tuple(
        sr.Passage(text=TEXTS[i % len(TEXTS)], doc_id="doc-1", score=score) for i in range(n)
    )


def state(**config: Any) -> FlowState:
    """A fresh state for :data:`QUESTION` (word-counting tokens unless told otherwise)."""
    config.setdefault("token_counter", WordCounter())
    return start(QUESTION, sr.RouteConfig(**config))


def retrieved(st: FlowState, ranked: Sequence[sr.Passage]) -> FlowState:
    """``st`` as the retrieve stage leaves it after ``ranked`` came back."""
    top = tuple(ranked[: st.config.k])
    return st.evolve(ranked=tuple(ranked), passages=top, parents_of=top)


def gen(text: str, usage: sr.Usage | None = None, **kw: Any) -> sr.Generation:
    """A model answer."""
    return sr.Generation(text, usage=usage, model=kw.pop("model", "m"), **kw)


def run_stage(
    stage: Generator[sr.flow.Step, Any, Any], answers: Sequence[Any]
) -> tuple[list[Any], Any]:
    """Drive ``stage`` to its end: each yielded step gets the next of ``answers`` (an exception
    is thrown in). Returns the steps it yielded and its return value."""
    steps: list[Any] = []
    pending = list(answers)
    send: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = stage.throw(error) if error is not None else stage.send(send)
        except StopIteration as stop:
            assert not pending, f"stage ended with answers left over: {pending!r}"
            return steps, stop.value
        steps.append(step)
        assert pending, f"stage asked for more than was scripted: {step!r}"
        answer = pending.pop(0)
        send, error = (None, answer) if isinstance(answer, BaseException) else (answer, None)
