"""Shared routing scenarios that the core and both adapters must pass identically.

Each adapter's test builds, from a :class:`Scenario`, its own retriever (returning
``scenario.passages`` as chunks of ``scenario.document``) and its own scripted chat model
(answering the RAG prompt with ``scenario.rag_output`` and the long-context prompt with
``scenario.lc_output``, reporting ``RAG_USAGE`` / ``LC_USAGE``), runs the question, and calls
:func:`check` on the :class:`selfroute.RouteResult` it got. ``check`` compares with the result of
the framework-free core on the same script, so routes, reasons, usage and the counterfactual are
the same across the core, LangChain and LlamaIndex.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import selfroute as sr

DOCUMENT = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years. "
    "She was born in Dunmore in 1901 and came to the point after her brother left for the navy. "
    "Every night she climbed the ninety-two steps to trim the wick and wind the clockwork. "
    "In the great storm of 1938 the supply boat could not land for six weeks, and she lived on "
    "dried fish and the potatoes she grew behind the cottage. "
    "The keeper's log records that the lens was replaced in 1947 with an electric lamp, after "
    "which the lighthouse needed no keeper. Mara Holt retired to Dunmore and died in 1972. "
) * 3

PASSAGES = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years.",
    "In the great storm of 1938 the supply boat could not land for six weeks.",
)

RAG_USAGE = sr.Usage.of(120, 6)
LC_USAGE = sr.Usage.of(1500, 9)
RAG_MODEL = "scripted-rag"
LC_MODEL = "scripted-lc"


@dataclass(frozen=True)
class Scenario:
    """One scripted routing case."""

    name: str
    question: str
    rag_output: str
    lc_output: str = "In 1901."
    passages: tuple[str, ...] = PASSAGES
    document: str = DOCUMENT
    route: sr.Route = sr.Route.RAG
    reason: sr.Reason = sr.Reason.ANSWERED
    answer: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "answered",
        "How long did Mara Holt keep the lamp?",
        "Thirty-one years.",
        answer="Thirty-one years.",
    ),
    Scenario(
        "answer_label",
        "How long did Mara Holt keep the lamp?",
        "Answer: **31 years**",
        answer="31 years",
    ),
    Scenario(
        "sentinel",
        "When was Mara Holt born?",
        "unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
    ),
    Scenario(
        "sentinel_markdown",
        "When was Mara Holt born?",
        '**"Unanswerable."**',
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
    ),
    Scenario(
        "sentinel_with_explanation",
        "When was Mara Holt born?",
        "Unanswerable. The passages only cover her years at Grey Point.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
    ),
    Scenario(
        "natural_refusal",
        "When was Mara Holt born?",
        "The text does not mention when Mara Holt was born.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="In 1901.",
    ),
    Scenario(
        "think_then_answer",
        "How long did Mara Holt keep the lamp?",
        "<think>The first passage says thirty-one years; not unanswerable.</think>Thirty-one years.",
        answer="Thirty-one years.",
    ),
    Scenario(
        "empty_output",
        "When was Mara Holt born?",
        "   ",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.EMPTY_OUTPUT,
        answer="In 1901.",
    ),
    Scenario(
        "no_chunks",
        "When was Mara Holt born?",
        "should not be called",
        passages=(),
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.NO_CHUNKS,
        answer="In 1901.",
    ),
)

BY_NAME = {s.name: s for s in SCENARIOS}


def core_result(scenario: Scenario, config: sr.RouteConfig | None = None) -> sr.RouteResult:
    """The framework-free core's result on ``scenario`` (the reference)."""

    def retrieve(question: str, k: int) -> list[sr.Passage]:
        return [sr.Passage(text=t, doc_id="doc-1") for t in scenario.passages[:k]]

    def rag(prompt: str) -> sr.Generation:
        return sr.Generation(scenario.rag_output, usage=RAG_USAGE, model=RAG_MODEL)

    def lc(prompt: str) -> sr.Generation:
        return sr.Generation(scenario.lc_output, usage=LC_USAGE, model=LC_MODEL)

    handler = sr.FunctionHandler(
        retrieve=retrieve, generate=rag, long_context_generate=lc, long_context=scenario.document
    )
    return sr.run_flow(sr.self_route_flow(scenario.question, config), handler)


def comparable(result: sr.RouteResult) -> dict[str, Any]:
    """The parts of a result that must be identical across adapters."""
    return {
        "answer": result.answer,
        "route": result.route,
        "reason": result.reason,
        "rag_answer": result.rag_answer,
        "sources": [p.text.strip() for p in result.sources],
        "stages": [s.stage for s in result.steps],
        "usage": [
            (s.usage.input_tokens, s.usage.output_tokens, s.usage.total_tokens)
            for s in result.steps
        ],
        "usage_source": [s.usage.source for s in result.steps],
        "long_context_tokens": result.long_context_tokens,
        "long_context_tokens_source": result.long_context_tokens_source,
        "token_ratio": result.token_ratio,
    }


def check(result: sr.RouteResult, scenario: Scenario, config: sr.RouteConfig | None = None) -> None:
    """Assert an adapter's ``result`` matches the scenario and the core's reference exactly."""
    assert result.route is scenario.route, (scenario.name, result.route, result.reason)
    assert result.reason is scenario.reason, (scenario.name, result.reason)
    if scenario.answer is not None:
        assert result.answer == scenario.answer, (scenario.name, result.answer)
    assert result.long_context_tokens is not None and result.long_context_tokens > 0
    assert result.token_ratio is not None
    expected_usage = (
        RAG_USAGE
        if scenario.route is sr.Route.RAG
        else (LC_USAGE if scenario.reason is sr.Reason.NO_CHUNKS else RAG_USAGE + LC_USAGE)
    )
    assert result.usage.input_tokens == expected_usage.input_tokens, scenario.name
    assert result.usage.output_tokens == expected_usage.output_tokens, scenario.name
    assert result.usage.total_tokens == expected_usage.total_tokens, scenario.name
    assert comparable(result) == comparable(core_result(scenario, config)), scenario.name
