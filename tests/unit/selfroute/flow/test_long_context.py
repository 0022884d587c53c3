"""The long-context stage alone: ``selfroute._flow._long_context``."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._flow._fit import fit_long_context
from selfroute._flow._long_context import long_context
from selfroute._flow._speculation import start_speculation
from selfroute._flow._state import FlowState
from tests.unit.selfroute.flow._stage import (
    QUESTION,
    TEXTS,
    gen,
    passages,
    retrieved,
    run_stage,
    state,
)

DOC = [sr.ContextDocument(" ".join(TEXTS), "doc-1")]


def _declined(**config: object) -> FlowState:
    st = retrieved(state(**config), passages(2))
    return st.evolve(reason=sr.Reason.DECLINED, rag_answer="unanswerable")


def test_loads_fits_calls_and_classifies() -> None:
    st = _declined()
    steps, result = run_stage(long_context(st), [DOC, gen("In 1901.", sr.Usage.of(300, 4))])
    lc = fit_long_context(QUESTION, DOC, st.config, [p.text for p in st.passages])
    assert steps == [
        sr.flow.LoadLongContext(QUESTION, st.parents_of, purpose="answer"),
        sr.flow.Generate(sr.Stage.LONG_CONTEXT, lc.prompt, QUESTION),
    ]
    assert (result.route, result.reason, result.answer) == (
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        "In 1901.",
    )
    assert result.rag_answer == "unanswerable" and result.abstention is None
    assert result.long_context_tokens == 300 and result.long_context_tokens_source == "provider"
    assert result.steps[-1].verdict == "answered"


def test_a_long_context_decline_abstains() -> None:
    _, result = run_stage(long_context(_declined()), [DOC, gen("unanswerable")])
    assert result.abstention is sr.Abstention.DECLINED and result.answer == "unanswerable"


def test_grounded_mode_withholds_an_unverified_answer() -> None:
    _, result = run_stage(
        long_context(_declined(grounded=True)), [DOC, gen('In 1950.\nQuote: "not in the text"')]
    )
    assert result.abstention is sr.Abstention.UNGROUNDED
    assert result.answer == "unanswerable" and result.unverified_answer == "In 1950."


def test_over_budget_answers_with_the_rag_output_and_records_why() -> None:
    st = _declined(budget=sr.LongContextBudget(max_tokens_per_call=5))
    steps, result = run_stage(long_context(st), [DOC])
    assert len(steps) == 1  # no model call
    assert (result.route, result.reason, result.abstention) == (
        sr.Route.RAG,
        sr.Reason.OVER_BUDGET,
        sr.Abstention.OVER_BUDGET,
    )
    assert result.answer == "unanswerable" and "per-call cap of 5" in str(result.error)


@pytest.mark.parametrize("loaded", [None, [], RuntimeError("loader down")])
def test_no_long_context_raises_with_the_partial(loaded: object) -> None:
    with pytest.raises(sr.LongContextError) as info:
        run_stage(long_context(_declined()), [loaded])
    partial = info.value.partial
    assert partial.answer is None and partial.rag_answer == "unanswerable"
    assert partial.long_context_tokens is None


def test_without_retrieval_there_is_nothing_to_answer_from() -> None:
    st = state().evolve(
        retrieval_failed=True, reason=sr.Reason.RETRIEVAL_ERROR, error="retrieval: down"
    )
    with pytest.raises(sr.RetrievalError, match=r"retrieval failed \(retrieval: down\)"):
        run_stage(long_context(st), [None])
    with pytest.raises(sr.RetrievalError, match="could not be loaded"):
        run_stage(long_context(st), [RuntimeError("x")])


def test_a_failed_call_raises_with_the_partial_priced() -> None:
    with pytest.raises(sr.LongContextError, match="long-context model call failed") as info:
        run_stage(long_context(_declined()), [DOC, TimeoutError("slow")])
    partial = info.value.partial
    assert partial.long_context_tokens is not None and partial.context is not None


def test_a_speculative_call_is_settled_instead_of_loading() -> None:
    st = retrieved(state(speculate_below=0.5), passages(2, score=0.1))
    _, st = run_stage(start_speculation(st), [DOC, "handle"])
    st = st.evolve(reason=sr.Reason.DECLINED)
    steps, result = run_stage(long_context(st), [gen("In 1901.")])
    assert steps == [sr.flow.Settle("handle")] and result.answer == "In 1901."
    with pytest.raises(sr.LongContextError):
        run_stage(long_context(st), [RuntimeError("died")])


def test_the_long_context_verdict_reads_the_question() -> None:
    """The abstention check uses the same detector, question included (issue #15)."""
    st = _declined().evolve(question="Was the keeper paid?")
    _, result = run_stage(long_context(st), [DOC, gen("No, the text does not mention any pay.")])
    assert result.abstention is None  # "No, ..." answers a yes/no question
    st = _declined().evolve(question="How much was the keeper paid?")
    _, result = run_stage(long_context(st), [DOC, gen("No, the text does not mention any pay.")])
    assert result.abstention is sr.Abstention.DECLINED
