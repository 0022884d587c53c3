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
    settings: dict[str, Any] = field(default_factory=dict)
    """Routing options, passed under the same names to ``RouteConfig``, ``SelfRoute`` and
    ``SelfRouteQueryEngine``."""
    abstention: sr.Abstention | None = None
    verified: bool | None = None
    stages: tuple[sr.Stage, ...] | None = None
    """The model calls expected (default: RAG, then LC when routed there)."""


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

_RAG, _LC = sr.Stage.RAG, sr.Stage.LONG_CONTEXT
_QUOTE_31 = 'Quote: "Mara Holt, kept the lamp at Grey Point for thirty-one years."'
_QUOTE_BORN = 'Quote: "She was born in Dunmore in 1901"'


def german_declines(text: str, question: str | None) -> bool | None:
    """A user's own decline detector (``decline_detector``): a model that declines in German."""
    return True if text.lower().startswith(("keine angaben", "dazu steht nichts")) else None


#: Scenarios of the policies beyond the paper (abstention, grounded mode, k-ladder, pre-routing,
#: structured verdicts). Same contract: identical results in the core and both adapters.
POLICY_SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "lc_declines",
        "What was Mara Holt's favourite song?",
        "unanswerable",
        lc_output="unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="unanswerable",
        abstention=sr.Abstention.DECLINED,
    ),
    Scenario(
        "lc_refuses_in_words",
        "What was Mara Holt's favourite song?",
        "The passage does not say.",
        lc_output="The document does not mention her favourite song.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="The document does not mention her favourite song.",
        abstention=sr.Abstention.DECLINED,
    ),
    Scenario(
        "grounded_rag_answer",
        "How long did Mara Holt keep the lamp?",
        f"Thirty-one years.\n{_QUOTE_31}",
        answer="Thirty-one years.",
        settings={"grounded": True},
        verified=True,
    ),
    Scenario(
        "grounded_rag_fabricated_quote",
        "How long did Mara Holt keep the lamp?",
        'Forty years.\nQuote: "Mara Holt kept the lamp for forty years."',
        lc_output=f"Thirty-one years.\n{_QUOTE_31}",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.UNGROUNDED,
        answer="Thirty-one years.",
        settings={"grounded": True},
        verified=True,
    ),
    Scenario(
        "grounded_lc_answer",
        "When was Mara Holt born?",
        "unanswerable",
        lc_output=f"In 1901.\n{_QUOTE_BORN}",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
        settings={"grounded": True},
        verified=True,
    ),
    Scenario(
        "grounded_lc_fabricates",
        "What was Mara Holt's favourite song?",
        "unanswerable",
        lc_output='"Shenandoah".\nQuote: "Mara Holt sang Shenandoah every night on the steps."',
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="unanswerable",
        settings={"grounded": True},
        abstention=sr.Abstention.UNGROUNDED,
        verified=False,
    ),
    Scenario(
        "grounded_lc_declines",
        "What was Mara Holt's favourite song?",
        "unanswerable",
        lc_output="unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="unanswerable",
        settings={"grounded": True},
        abstention=sr.Abstention.DECLINED,
    ),
    Scenario(
        "k_ladder_climbs",
        "When was Mara Holt born?",
        "unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
        settings={"k": 1, "k_ladder": (2,)},
        stages=(_RAG, _RAG, _LC),
    ),
    Scenario(
        "k_ladder_nothing_more",
        "When was Mara Holt born?",
        "unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
        settings={"k": 2, "k_ladder": (5, 10)},
        stages=(_RAG, _LC),
    ),
    Scenario(
        "pre_route_global_question",
        "Summarize the whole document.",
        "should not be called",
        lc_output="A keeper's life at Grey Point.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.GLOBAL_QUESTION,
        answer="A keeper's life at Grey Point.",
        settings={"pre_route": sr.PreRoute()},
        stages=(_LC,),
    ),
    Scenario(
        "pre_route_specific_question",
        "How long did Mara Holt keep the lamp?",
        "Thirty-one years.",
        answer="Thirty-one years.",
        settings={"pre_route": sr.PreRoute()},
    ),
    Scenario(
        "decline_detector_declines",
        "When was Mara Holt born?",
        "Keine Angaben in den Textstellen.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="In 1901.",
        settings={"decline_detector": german_declines},
    ),
    Scenario(
        "decline_detector_leaves_answer",
        "How long did Mara Holt keep the lamp?",
        "Thirty-one years.",
        answer="Thirty-one years.",
        settings={"decline_detector": german_declines},
    ),
    Scenario(
        "decline_detector_keeps_rules",
        "When was Mara Holt born?",
        "The passages do not mention when she was born.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="In 1901.",
        settings={"decline_detector": german_declines},
    ),
    Scenario(
        "decline_detector_lc_abstains",
        "What was Mara Holt's favourite song?",
        "Keine Angaben.",
        lc_output="Dazu steht nichts im Dokument.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="Dazu steht nichts im Dokument.",
        settings={"decline_detector": german_declines},
        abstention=sr.Abstention.DECLINED,
    ),
    Scenario(
        "decline_detector_strict",
        "When was Mara Holt born?",
        "Keine Angaben.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.REFUSED,
        answer="In 1901.",
        settings={"decline_detector": german_declines, "strict": True},
    ),
    Scenario(
        "verdict_auto_without_structured_output",
        "When was Mara Holt born?",
        "unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        answer="In 1901.",
        settings={"verdict": "auto"},
    ),
)

ALL_SCENARIOS: tuple[Scenario, ...] = SCENARIOS + POLICY_SCENARIOS

BY_NAME = {s.name: s for s in ALL_SCENARIOS}


def expected_stages(scenario: Scenario) -> tuple[sr.Stage, ...]:
    """The model calls the scenario makes, in order."""
    if scenario.stages is not None:
        return scenario.stages
    if scenario.route is sr.Route.RAG:
        return (_RAG,)
    if scenario.reason is sr.Reason.NO_CHUNKS:
        return (_LC,)
    return (_RAG, _LC)


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
    if config is None:
        config = sr.RouteConfig(**scenario.settings)
    return sr.flow.run_flow(sr.flow.self_route_flow(scenario.question, config), handler)


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
        "abstained": result.abstained,
        "abstention": result.abstention,
        "verified": result.verified,
        "unverified_answer": result.unverified_answer,
        "citations": [(c.quote, c.found, c.source_index, c.start, c.end) for c in result.citations],
        "verdicts": [s.verdict for s in result.steps],
        "k": [s.k for s in result.steps],
        "disputed": result.disputed,
    }


def check(result: sr.RouteResult, scenario: Scenario, config: sr.RouteConfig | None = None) -> None:
    """Assert an adapter's ``result`` matches the scenario and the core's reference exactly."""
    assert result.route is scenario.route, (scenario.name, result.route, result.reason)
    assert result.reason is scenario.reason, (scenario.name, result.reason)
    if scenario.answer is not None:
        assert result.answer == scenario.answer, (scenario.name, result.answer)
    assert result.long_context_tokens is not None and result.long_context_tokens > 0
    assert result.token_ratio is not None
    stages = expected_stages(scenario)
    assert tuple(s.stage for s in result.steps) == stages, (scenario.name, result.steps)
    expected_usage = sr.Usage.zero()
    for stage in stages:
        expected_usage = expected_usage + (RAG_USAGE if stage is _RAG else LC_USAGE)
    assert result.abstention is scenario.abstention, (scenario.name, result.abstention)
    assert result.verified is scenario.verified, (scenario.name, result.verified)
    assert result.usage.input_tokens == expected_usage.input_tokens, scenario.name
    assert result.usage.output_tokens == expected_usage.output_tokens, scenario.name
    assert result.usage.total_tokens == expected_usage.total_tokens, scenario.name
    assert comparable(result) == comparable(core_result(scenario, config)), scenario.name
