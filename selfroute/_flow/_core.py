"""The Self-Route decision, stage by stage, as the paper writes it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Generator
from typing import Any, Protocol

from selfroute._flow._config import RouteConfig
from selfroute._flow._counterfactual import price_always_lc
from selfroute._flow._finish import build_result
from selfroute._flow._long_context import long_context
from selfroute._flow._pre_route import pre_route
from selfroute._flow._rag import rag_ladder
from selfroute._flow._retrieve import retrieve
from selfroute._flow._speculation import cancel_speculation, start_speculation
from selfroute._flow._state import Outcome, Steps, start
from selfroute._flow._steps import Step
from selfroute._result import Reason, Route, RouteResult

__all__ = ["FlowMaker", "RouteFlow", "route_flow", "self_route_flow"]


class RouteFlow(Generator[Step, Any, RouteResult]):
    """The flow of one question: a generator of step requests that also carries its question and
    settings, so that the drivers can read what applies to the whole run (``config.tracing``).

    Attributes:
        question: The question as given.
        config: The flow's settings.
    """

    __slots__ = ("_steps", "config", "question")

    def __init__(self, steps: Steps[RouteResult], question: str, config: RouteConfig) -> None:
        self._steps = steps
        self.question = question
        self.config = config

    def send(self, value: Any) -> Step:
        """Resume the flow with a step's answer; the next step (``StopIteration``: the result)."""
        return self._steps.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None, /) -> Step:
        """Resume the flow with a step's failure."""
        if val is None and tb is None:
            return self._steps.throw(typ)
        return self._steps.throw(typ, val, tb)  # pragma: no cover - the old three-argument form

    def close(self) -> None:
        """Stop the flow."""
        self._steps.close()


class FlowMaker(Protocol):
    """What :func:`route_flow` makes of a flow function."""

    def __call__(self, question: str, config: RouteConfig | None = None) -> RouteFlow: ...


def route_flow(fn: Callable[[str, RouteConfig | None], Steps[RouteResult]]) -> FlowMaker:
    """Make a flow function return a :class:`RouteFlow` (its generator with question and config)."""

    @functools.wraps(fn)
    def flow(question: str, config: RouteConfig | None = None) -> RouteFlow:
        cfg = config or RouteConfig()
        return RouteFlow(fn(question, cfg), question, cfg)

    return flow


@route_flow
def self_route_flow(question: str, config: RouteConfig | None = None) -> Steps[RouteResult]:
    """The Self-Route decision as a generator of step requests (run it with a driver).

    Retrieve the top-k chunks; unless pre-routing sends the question straight to long context,
    ask the RAG model to answer from them or decline, climbing the k-ladder while it declines.
    If it answered, that is the result (priced against always-LC); if not, answer from the whole
    document in the long-context model, whose decline is an abstention.

    Args:
        question: The question.
        config: Settings; defaults to :class:`RouteConfig` ().

    Returns:
        (as the generator's return value) the :class:`~selfroute.RouteResult`.

    Raises:
        InvalidInputError: Bad question, raised before any step is yielded.
        RetrievalError: Retrieval failed and there is no long context (or ``on_retrieval_error``
            is ``raise``).
        ModelOutputError: The RAG call failed and ``on_rag_error`` is ``raise``.
        LongContextError: The LC call failed; carries the partial result.
        ContextOverflowError: The document does not fit and ``overflow`` is ``error``.
    """
    state = start(question, config or RouteConfig())
    state = yield from retrieve(state)  # reason set if nothing came back
    state = pre_route(state)  # reason set if RAG is predictably futile
    state = yield from start_speculation(state)  # weak evidence: start the LC call now
    if state.reason is None:
        state = yield from rag_ladder(state)  # reason: answered, or why not
    if state.reason is not Reason.ANSWERED:
        return (yield from long_context(state))
    if state.speculation is not None:
        state, priced = yield from cancel_speculation(state)
    else:
        priced = yield from price_always_lc(state)
    return build_result(
        state,
        Outcome(state.rag_answer, Route.RAG, Reason.ANSWERED, priced, grounding=state.grounding),
    )
