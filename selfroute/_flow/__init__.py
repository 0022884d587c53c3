"""The Self-Route flow, written once, and the two drivers that run it.

:func:`self_route_flow` is a generator that never does I/O: it *yields* step requests
(:class:`Retrieve`, :class:`Generate`, :class:`LoadLongContext`) and receives their results. The
sync driver :func:`drive` and the async driver :func:`adrive` send each step to a handler (an
adapter's translation into framework calls) and feed the answer back -- the way httpx writes one
``auth_flow`` and drives it from ``Client`` and ``AsyncClient``. A handler failure is thrown back
into the flow, which decides what to do (escalate or raise). Cancellation
(:class:`asyncio.CancelledError`, ``KeyboardInterrupt``) is never caught.

The flow is a short top-level function (``_core``) over one stage generator per policy, each
taking and returning an immutable :class:`~selfroute._flow._state.FlowState`:

* ``_retrieve`` -- the top chunks; retriever failures.
* ``_pre_route`` -- skip the RAG step for predictably futile questions.
* ``_speculation`` -- start the long-context call alongside the RAG step on weak evidence.
* ``_rag`` -- the RAG step, one k-ladder rung at a time (verdicts, grounding).
* ``_long_context`` -- load, fit, budget, call and classify the long-context step.
* ``_counterfactual`` -- price always-LC when the RAG step answered.
* ``_finish`` -- the one place a :class:`~selfroute.RouteResult` is built.
"""

from __future__ import annotations

from selfroute._flow._config import OnError, RouteConfig, clean_answer, validate_question
from selfroute._flow._core import self_route_flow
from selfroute._flow._drivers import (
    FlowEvent,
    ResultEvent,
    RouteEvent,
    TokenEvent,
    adrive,
    arun_flow,
    drive,
    run_flow,
)
from selfroute._flow._fit import fit_long_context
from selfroute._flow._steps import (
    AsyncStepHandler,
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    Retrieve,
    Settle,
    Speculate,
    Step,
    StepHandler,
    StructuredRequest,
)

__all__ = [
    "AsyncStepHandler",
    "FlowEvent",
    "Generate",
    "Generation",
    "GenerationChunk",
    "LoadLongContext",
    "OnError",
    "ResultEvent",
    "Retrieve",
    "RouteConfig",
    "RouteEvent",
    "Settle",
    "Speculate",
    "Step",
    "StepHandler",
    "StructuredRequest",
    "TokenEvent",
    "adrive",
    "arun_flow",
    "clean_answer",
    "drive",
    "fit_long_context",
    "run_flow",
    "self_route_flow",
    "validate_question",
]
