"""The counterfactual stage alone: ``selfroute._flow._counterfactual.price_always_lc``."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._flow._counterfactual import price_always_lc
from selfroute._flow._fit import fit_long_context
from selfroute._flow._state import Priced
from tests.unit.selfroute.flow._stage import QUESTION, TEXTS, passages, retrieved, run_stage, state


def test_counts_the_long_context_always_lc_would_send() -> None:
    st = retrieved(state(), passages(2))
    docs = [sr.ContextDocument(" ".join(TEXTS), "doc-1")]
    steps, priced = run_stage(price_always_lc(st), [docs])
    assert steps == [sr.flow.LoadLongContext(QUESTION, st.parents_of, purpose="counterfactual")]
    lc = fit_long_context(QUESTION, docs, st.config, [p.text for p in st.passages])
    assert priced == Priced(lc.tokens, "tokenizer", lc.fitted)


def test_off_means_no_load() -> None:
    steps, priced = run_stage(price_always_lc(state(counterfactual=False)), [])
    assert steps == [] and priced == Priced()


@pytest.mark.parametrize(
    "loaded", [None, [], RuntimeError("down"), sr.ConfigurationError("bad loader")]
)
def test_pricing_never_costs_the_answer(loaded: object) -> None:
    _, priced = run_stage(price_always_lc(retrieved(state(), passages(2))), [loaded])
    assert priced == Priced()


def test_a_document_that_does_not_fit_leaves_the_price_unknown() -> None:
    st = retrieved(state(long_context_window=20, overflow="error"), passages(2))
    _, priced = run_stage(price_always_lc(st), [[" ".join(TEXTS) * 10]])
    assert priced == Priced()


def test_pricing_never_renders_the_long_context_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    # the price is the template overhead plus the context: copying the document into a prompt
    # nobody sends would cost as much as counting it
    st = retrieved(state(), passages(2))
    docs = [sr.ContextDocument(" ".join(TEXTS), "doc-1")]
    lc = fit_long_context(QUESTION, docs, st.config, [p.text for p in st.passages])
    rendered: list[str] = []
    prompts = st.config.prompts
    render = type(prompts).long_context_prompt

    def spy(self: object, question: str, context: str, **kw: bool) -> str:
        rendered.append(context)
        return render(prompts, question, context, **kw)

    monkeypatch.setattr(type(prompts), "long_context_prompt", spy)
    _, priced = run_stage(price_always_lc(st), [docs])
    assert priced == Priced(lc.tokens, "tokenizer", lc.fitted)
    assert all(len(c) < len(TEXTS[0]) for c in rendered)  # the template alone, for its size
