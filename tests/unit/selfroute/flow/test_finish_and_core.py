"""The one result builder (``selfroute._flow._finish``) and the top-level flow (``_core``)."""

from __future__ import annotations

import ast
import inspect
import pathlib

import pytest

import selfroute as sr
from selfroute._flow import _core
from selfroute._flow._finish import build_result
from selfroute._flow._state import Outcome, Priced, record_step
from tests.unit.selfroute.flow._stage import gen, passages, retrieved, state


def test_build_result_prices_the_steps_and_always_lc() -> None:
    prices = sr.PriceTable({"m": (1.0, 2.0), "lc": (10.0, 20.0)})
    st = retrieved(state(prices=prices, long_context_model="lc"), passages(2))
    rag = record_step(sr.Stage.RAG, gen("A.", sr.Usage.of(1000, 10)), "p", st.counter, None)
    st = st.with_step(rag, rag_answer="A.")
    result = build_result(st, Outcome("A.", sr.Route.RAG, sr.Reason.ANSWERED, Priced(5000, "x")))
    assert result.cost == prices.cost("m", sr.Usage.of(1000, 10))
    assert result.long_context_cost == prices.cost("lc", sr.Usage.of(5000, 10))
    assert (result.sources, result.steps, result.rag_answer) == (st.passages, (rag,), "A.")
    assert result.long_context_tokens == 5000 and result.long_context_tokens_source == "x"
    unknown = build_result(st, Outcome("A.", sr.Route.RAG, sr.Reason.ANSWERED))
    assert unknown.long_context_cost is None and unknown.long_context_tokens is None


def test_models_without_a_price_are_named_and_warned_about_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from selfroute._flow import _finish

    monkeypatch.setattr(_finish, "_warned", set())
    prices = sr.PriceTable({"m": (1.0, 2.0)})
    st = retrieved(state(prices=prices, long_context_model="big-lc"), passages(2))
    rag = record_step(sr.Stage.RAG, gen("A.", sr.Usage.of(1000, 10)), "p", st.counter, None)
    local = record_step(
        sr.Stage.RAG, sr.Generation("B.", sr.Usage.of(900, 5), model="qwen-local"), "p",
        st.counter, None,
    )  # fmt: skip
    st = st.with_step(rag, rag_answer="A.").with_step(local, rag_answer="B.")
    outcome = Outcome("B.", sr.Route.RAG, sr.Reason.ANSWERED, Priced(5000, "x"))
    with pytest.warns(UserWarning) as caught:
        result = build_result(st, outcome)
    assert result.unpriced_models == ("qwen-local", "big-lc")  # a step's, then always-LC's
    assert result.cost == prices.cost("m", sr.Usage.of(1000, 10))  # the priced step only
    assert result.long_context_cost is None
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 2 and all("PriceTable has m)" in m for m in messages)
    assert "no price for model 'big-lc'" in messages[0]
    assert "no price for model 'qwen-local'" in messages[1]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same models again: no second warning
        assert build_result(st, outcome).unpriced_models == ("qwen-local", "big-lc")
    priced = build_result(
        retrieved(state(prices=sr.PriceTable({"m": (1.0, 2.0)}), long_context_model="m"),
                  passages(1)).with_step(rag, rag_answer="A."),
        Outcome("A.", sr.Route.RAG, sr.Reason.ANSWERED, Priced(5000, "x")),
    )  # fmt: skip
    assert priced.unpriced_models == () and priced.long_context_cost is not None
    assert build_result(state(), outcome).unpriced_models == ()  # no price table: nothing to say


def test_only_the_result_builder_constructs_route_results() -> None:
    package = pathlib.Path(_core.__file__).parent
    builders = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RouteResult":
                builders.append(path.name)
    assert builders == ["_finish.py"]


def test_the_top_level_flow_stays_short() -> None:
    (node,) = [
        n
        for n in ast.parse(inspect.getsource(_core)).body
        if isinstance(n, ast.FunctionDef) and n.name == "self_route_flow"
    ]
    assert node.end_lineno is not None and node.end_lineno - node.lineno + 1 < 80


def test_state_copies_are_new_objects_and_reject_unknown_fields() -> None:
    st = state()
    changed = st.evolve(error="x", reason=sr.Reason.NO_CHUNKS)
    assert (changed.error, changed.reason, st.error, st.reason) == (
        "x",
        sr.Reason.NO_CHUNKS,
        None,
        None,
    )
    assert changed == st.evolve(error="x", reason=sr.Reason.NO_CHUNKS) and changed != st
    with pytest.raises(TypeError, match="no field"):
        st.evolve(answer="x")
    with pytest.raises(AttributeError):
        changed.error = "y"  # type: ignore[misc]
