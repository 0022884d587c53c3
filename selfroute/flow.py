"""The step protocol, for whoever writes their own driver or adapter.

An application calls :func:`selfroute.self_route` (or an adapter: ``langchain_selfroute``,
``llamaindex_selfroute``) and never needs this module. An adapter translates the flow's requests
into framework calls:

* :func:`self_route_flow` is a generator that does no I/O: it *yields* step requests
  (:class:`Retrieve`, :class:`Generate`, :class:`LoadLongContext`, :class:`Speculate`,
  :class:`Settle`; any of them is a :data:`Step`) and receives their answers (a sequence of
  :class:`~selfroute.Passage`, a :class:`~selfroute.Generation`, a sequence of
  :class:`~selfroute.ContextDocument`). It returns the :class:`~selfroute.RouteResult`.
* A handler answers the steps: :class:`StepHandler` (sync) or :class:`AsyncStepHandler` (async).
  A handler that streams yields :class:`GenerationChunk` pieces; a handler whose model supports
  structured output answers a :class:`StructuredRequest` (see :func:`load_structured` and
  :func:`structured_unsupported`).
* :func:`run_flow` and :func:`arun_flow` run a flow on a handler and return the result;
  :func:`drive` and :func:`adrive` also stream it as :data:`FlowEvent` values
  (:class:`TokenEvent`, :class:`RouteEvent`, :class:`ResultEvent`), holding RAG text back with
  a :class:`SentinelSniffer` (:func:`could_start_decline`) while it could still become a decline.
* :func:`validate_question` and :func:`clean_answer` are the checks the flow applies to a
  question and an answer, for an adapter that needs them before or after the flow.

Every name here is public and pinned by the tests (``tests/unit/selfroute/test_package.py``);
``docs/api.md`` lists them.
"""

from __future__ import annotations

from selfroute._flow import (
    AsyncStepHandler,
    FlowEvent,
    Generate,
    GenerationChunk,
    LoadLongContext,
    ResultEvent,
    Retrieve,
    RouteEvent,
    Settle,
    Speculate,
    Step,
    StepHandler,
    StructuredRequest,
    TokenEvent,
    adrive,
    arun_flow,
    clean_answer,
    drive,
    run_flow,
    self_route_flow,
    validate_question,
)
from selfroute._streaming import SentinelSniffer
from selfroute._structured import load_structured, structured_unsupported
from selfroute._verdict import could_start_decline

__all__ = [
    "AsyncStepHandler",
    "FlowEvent",
    "Generate",
    "GenerationChunk",
    "LoadLongContext",
    "ResultEvent",
    "Retrieve",
    "RouteEvent",
    "SentinelSniffer",
    "Settle",
    "Speculate",
    "Step",
    "StepHandler",
    "StructuredRequest",
    "TokenEvent",
    "adrive",
    "arun_flow",
    "clean_answer",
    "could_start_decline",
    "drive",
    "load_structured",
    "run_flow",
    "self_route_flow",
    "structured_unsupported",
    "validate_question",
]
