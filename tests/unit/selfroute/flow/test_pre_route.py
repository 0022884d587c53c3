"""Stage 2 alone: ``selfroute._flow._pre_route.pre_route``."""

from __future__ import annotations

import selfroute as sr
from selfroute._flow._pre_route import pre_route
from selfroute._flow._state import start
from tests.unit.selfroute.flow._stage import passages, retrieved, state


def test_off_by_default() -> None:
    st = retrieved(state(), passages(2))
    assert pre_route(st) is st


def test_a_global_question_goes_straight_to_long_context() -> None:
    cfg = sr.RouteConfig(pre_route=sr.PreRoute())
    st = start("Summarize the whole document.", cfg)
    st = st.evolve(ranked=passages(2), passages=passages(2))
    assert pre_route(st).reason is sr.Reason.GLOBAL_QUESTION
    assert st.reason is None


def test_weak_retrieval_routes_weak_retrieval() -> None:
    st = retrieved(state(pre_route=sr.PreRoute(min_top_score=0.5)), passages(2, score=0.1))
    assert pre_route(st).reason is sr.Reason.WEAK_RETRIEVAL
    strong = retrieved(state(pre_route=sr.PreRoute(min_top_score=0.5)), passages(2, score=0.9))
    assert pre_route(strong).reason is None


def test_a_reason_already_set_is_kept() -> None:
    st = state(pre_route=sr.PreRoute(min_top_score=0.5)).evolve(reason=sr.Reason.NO_CHUNKS)
    assert pre_route(st).reason is sr.Reason.NO_CHUNKS
