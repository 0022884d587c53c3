"""Stage 1 alone: ``selfroute._flow._retrieve.retrieve``."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._flow._retrieve import retrieve
from selfroute._flow._state import start
from tests.unit.selfroute.flow._stage import QUESTION, passages, run_stage, state


def test_asks_for_the_largest_rung_and_keeps_the_top_k() -> None:
    st = state(k=2, k_ladder=(4,), retrieval_timeout_s=3.0)
    ranked = passages(6)
    steps, out = run_stage(retrieve(st), [ranked])
    assert steps == [sr.flow.Retrieve(QUESTION, 4, 3.0)]
    assert out.ranked == ranked[:4]  # a retriever that returns more is cut to the largest rung
    assert out.passages == out.parents_of == ranked[:2]
    assert out.reason is None and out.error is None and not out.retrieval_failed
    assert st.ranked == ()  # the input state is not mutated


@pytest.mark.parametrize("answer", [[], None])
def test_nothing_retrieved_routes_no_chunks(answer: object) -> None:
    _, out = run_stage(retrieve(state()), [answer])
    assert out.reason is sr.Reason.NO_CHUNKS and out.passages == ()


def test_a_failure_escalates_with_the_error_recorded() -> None:
    _, out = run_stage(retrieve(state()), [TimeoutError("store hung")])
    assert out.retrieval_failed and out.reason is sr.Reason.RETRIEVAL_ERROR
    assert (
        out.error is not None and out.error.startswith("retrieval:") and "store hung" in out.error
    )


def test_raise_mode_wraps_the_failure_in_retrieval_error() -> None:
    with pytest.raises(sr.RetrievalError, match="retrieval failed") as info:
        run_stage(retrieve(state(on_retrieval_error="raise")), [OSError("refused")])
    assert isinstance(info.value.__cause__, OSError)
    own = sr.RetrievalError("store says no")
    with pytest.raises(sr.RetrievalError) as again:
        run_stage(retrieve(state(on_retrieval_error="raise")), [own])
    assert again.value is own


def test_caller_errors_surface_and_wrong_types_are_rejected() -> None:
    with pytest.raises(sr.ConfigurationError):
        run_stage(retrieve(state()), [sr.ConfigurationError("bad store")])
    with pytest.raises(sr.SelfRouteError, match="position 1; expected Passage"):
        run_stage(retrieve(state()), [[passages(1)[0], "text"]])


def test_start_checks_the_question() -> None:
    with pytest.raises(sr.InvalidInputError):
        start("   ", sr.RouteConfig())
    with pytest.raises(sr.InvalidInputError, match="over max_question_tokens=2"):
        state(max_question_tokens=2)
    assert state().question == QUESTION
