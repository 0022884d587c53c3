"""The core runs the shared conformance scenarios (the reference both adapters must match)."""

from __future__ import annotations

import asyncio

import pytest

import selfroute as sr
from tests.conformance.scenarios import (
    ALL_SCENARIOS,
    LC_USAGE,
    RAG_USAGE,
    Scenario,
    check,
    core_result,
)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=lambda s: s.name)
def test_core_scenarios(scenario: Scenario) -> None:
    check(core_result(scenario), scenario)


@pytest.mark.parametrize("scenario", ALL_SCENARIOS, ids=lambda s: s.name)
def test_async_driver_matches_sync(scenario: Scenario) -> None:
    async def arag(prompt: str) -> sr.Generation:
        await asyncio.sleep(0)
        return sr.Generation(scenario.rag_output, usage=RAG_USAGE, model="scripted-rag")

    async def alc(prompt: str) -> sr.Generation:
        await asyncio.sleep(0)
        return sr.Generation(scenario.lc_output, usage=LC_USAGE, model="scripted-lc")

    handler = sr.FunctionHandler(
        retrieve=lambda q, k: [sr.Passage(text=t, doc_id="doc-1") for t in scenario.passages[:k]],
        generate=arag,
        long_context_generate=alc,
        long_context=scenario.document,
    )
    config = sr.RouteConfig(**scenario.settings)
    result = asyncio.run(
        sr.flow.arun_flow(sr.flow.self_route_flow(scenario.question, config), handler)
    )
    check(result, scenario)
