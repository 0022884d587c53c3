"""Speculative long context alone: ``selfroute._flow._speculation``."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._flow._fit import fit_long_context
from selfroute._flow._speculation import (
    cancel_speculation,
    settle_speculation,
    start_speculation,
)
from selfroute._flow._state import FlowState, Speculation
from tests.unit.selfroute.flow._stage import (
    QUESTION,
    TEXTS,
    gen,
    passages,
    retrieved,
    run_stage,
    state,
)

DOC = [sr.ContextDocument(" ".join(TEXTS) * 5, "doc-1")]


def _speculating(**config: object) -> FlowState:
    st = retrieved(state(speculate_below=0.5, **config), passages(2, score=0.2))
    _, out = run_stage(start_speculation(st), [DOC, "handle"])
    assert isinstance(out, FlowState) and out.speculation is not None
    return out


def test_weak_evidence_loads_fits_and_starts_the_long_context_call() -> None:
    st = retrieved(state(speculate_below=0.5, grounded=True), passages(2, score=0.2))
    steps, out = run_stage(start_speculation(st), [DOC, "handle"])
    load, spec = steps
    assert load == sr.flow.LoadLongContext(QUESTION, st.parents_of, purpose="answer")
    expected = fit_long_context(QUESTION, DOC, st.config, [p.text for p in st.passages])
    assert spec == sr.flow.Speculate(
        sr.flow.Generate(
            sr.Stage.LONG_CONTEXT, expected.prompt, QUESTION, grounded=True, speculative=True
        )
    )
    assert out.speculation == Speculation("handle", expected)


@pytest.mark.parametrize(
    ("config", "score", "reason"),
    [
        ({}, 0.2, None),  # off
        ({"speculate_below": 0.5}, 0.9, None),  # strong evidence
        ({"speculate_below": 0.5}, None, None),  # no scores
        ({"speculate_below": 0.5}, 0.2, sr.Reason.GLOBAL_QUESTION),  # RAG will not run
    ],
)
def test_no_speculation_without_weak_evidence_before_a_rag_step(
    config: dict[str, object], score: float | None, reason: sr.Reason | None
) -> None:
    st = retrieved(state(**config), passages(2, score=score)).evolve(reason=reason)
    steps, out = run_stage(start_speculation(st), [])
    assert steps == [] and out is st


@pytest.mark.parametrize("loaded", [RuntimeError("loader down"), None, []])
def test_no_long_context_means_no_speculation(loaded: object) -> None:
    st = retrieved(state(speculate_below=0.5), passages(2, score=0.2))
    steps, out = run_stage(start_speculation(st), [loaded])
    assert len(steps) == 1 and out.speculation is None


def test_a_budget_that_refuses_means_no_speculation() -> None:
    budget = sr.LongContextBudget(max_tokens_per_call=5)
    st = retrieved(state(speculate_below=0.5, budget=budget), passages(2, score=0.2))
    steps, out = run_stage(start_speculation(st), [DOC])
    assert len(steps) == 1 and out.speculation is None


def test_cancel_records_the_wasted_call_and_prices_from_the_fitted_context() -> None:
    st = _speculating()
    spec = st.speculation
    assert spec is not None
    steps, (out, priced) = run_stage(cancel_speculation(st), [None])
    assert steps == [sr.flow.Settle("handle", cancel=True)]
    (wasted,) = out.steps
    assert wasted.wasted and wasted.error == "cancelled: the RAG step answered"
    assert wasted.usage.input_tokens == spec.lc.tokens and wasted.usage.output_tokens == 0
    assert (priced.tokens, priced.source, priced.context) == (
        spec.lc.tokens,
        "tokenizer",
        spec.lc.fitted,
    )
    finished = sr.Usage.of(77, 3)
    _, (late, _) = run_stage(cancel_speculation(st), [gen("In 1901.", finished)])
    assert late.steps[0].wasted and late.steps[0].usage == finished


def test_settle_waits_for_the_call_and_rejects_non_generations() -> None:
    st = _speculating()
    steps, out = run_stage(settle_speculation(st), [gen("In 1901.")])
    assert steps == [sr.flow.Settle("handle")] and out.text == "In 1901."
    with pytest.raises(sr.ModelOutputError, match="expected Generation"):
        run_stage(settle_speculation(st), ["text"])
