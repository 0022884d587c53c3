"""The routing flow (``selfroute._flow.self_route_flow``) driven by a scripted handler."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import selfroute as sr
from tests.unit.selfroute._scripted import (
    DOCUMENT,
    LC_USAGE,
    PASSAGES,
    RAG_USAGE,
    Scripted,
    arun,
    run,
)

R, LC = sr.Route.RAG, sr.Route.LONG_CONTEXT

REASON_CASES: list[tuple[str, dict[str, Any], dict[str, Any], sr.Route, sr.Reason, list[str]]] = [
    ("answered", {}, {}, R, sr.Reason.ANSWERED, ["retrieve", "rag", "counterfactual"]),
    (
        "declined",
        {"rag": "Unanswerable."},
        {},
        LC,
        sr.Reason.DECLINED,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "refused",
        {"rag": "The passages do not mention her birth."},
        {},
        LC,
        sr.Reason.REFUSED,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "empty_output",
        {"rag": "  "},
        {},
        LC,
        sr.Reason.EMPTY_OUTPUT,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "garbled_output",
        {"rag": "<think>Let me look at the passages"},
        {},
        LC,
        sr.Reason.EMPTY_OUTPUT,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "no_chunks",
        {"passages": ()},
        {},
        LC,
        sr.Reason.NO_CHUNKS,
        ["retrieve", "answer", "long_context"],
    ),
    (
        "rag_error",
        {"rag_error": TimeoutError("read timed out")},
        {},
        LC,
        sr.Reason.RAG_ERROR,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "retrieval_error",
        {"retrieve_error": ConnectionError("vector store down")},
        {},
        LC,
        sr.Reason.RETRIEVAL_ERROR,
        ["retrieve", "answer", "long_context"],
    ),
    (
        "over_budget",
        {"rag": "unanswerable"},
        {"budget": sr.LongContextBudget(max_calls=0)},
        R,
        sr.Reason.OVER_BUDGET,
        ["retrieve", "rag", "answer"],
    ),
    (
        "ungrounded",
        {"rag": 'Forty years.\nQuote: "she kept the lamp for forty long years"'},
        {"grounded": True},
        LC,
        sr.Reason.UNGROUNDED,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "truncated",
        {"generate_result": sr.Generation("Thirty-one", finish_reason="length")},
        {},
        LC,
        sr.Reason.TRUNCATED,
        ["retrieve", "rag", "answer", "long_context"],
    ),
    (
        "global_question",
        {},
        {"pre_route": sr.PreRoute()},
        LC,
        sr.Reason.GLOBAL_QUESTION,
        ["retrieve", "answer", "long_context"],
    ),
    (
        "weak_retrieval",
        {},
        {"pre_route": sr.PreRoute(min_top_score=2.0)},
        LC,
        sr.Reason.WEAK_RETRIEVAL,
        ["retrieve", "answer", "long_context"],
    ),
]
QUESTIONS = {"global_question": "What happens throughout the story?"}


@pytest.mark.parametrize(
    ("script_kw", "config", "route", "reason", "stages"),
    [case[1:] for case in REASON_CASES],
    ids=[case[0] for case in REASON_CASES],
)
def test_every_reason(
    script_kw: dict[str, Any],
    config: dict[str, Any],
    route: sr.Route,
    reason: sr.Reason,
    stages: list[str],
) -> None:
    script = Scripted(**script_kw)
    question = (
        "Who kept the lamp?" if reason is not sr.Reason.GLOBAL_QUESTION else QUESTIONS[reason.value]
    )
    result = run(script, question, **config)
    assert (result.route, result.reason) == (route, reason)
    assert script.stages() == stages
    assert set(sr.Reason) == {case[4] for case in REASON_CASES}  # the table covers every reason


def test_answered_result_carries_usage_sources_and_counterfactual() -> None:
    result = run(Scripted())
    assert result.answer == result.rag_answer == "Thirty-one years."
    assert result.answered_from_chunks
    assert [p.text for p in result.sources] == list(Scripted().passages)
    assert [s.stage for s in result.steps] == [sr.Stage.RAG]
    assert result.usage == RAG_USAGE
    assert result.steps[0].model == "rag-model"
    assert result.steps[0].output == "Thirty-one years."
    assert result.steps[0].latency_s >= 0
    # The always-LC counterfactual: the LC prompt over the whole document, counted locally and
    # (issue 17) scaled by the provider/local ratio of this call's RAG prompt.
    counter = sr.default_token_counter()
    prompt = sr.Prompts().long_context_prompt("Who kept the lamp?", Scripted().document or "")
    rag_local = result.steps[0].prompt_tokens_estimate
    assert rag_local is not None and rag_local > 0
    scaled = counter.count(prompt) * RAG_USAGE.input_tokens / rag_local
    assert result.long_context_tokens == pytest.approx(scaled, abs=2)
    assert result.long_context_tokens_source == "provider_scaled"
    assert result.long_context_tokens is not None
    assert result.token_ratio == pytest.approx(120 / result.long_context_tokens)
    assert result.context is not None and result.context["strategy"] == "none"


def test_long_context_result_sums_both_stages() -> None:
    result = run(Scripted(rag="unanswerable", lc="<think>1901?</think> In 1901."))
    assert result.answer == "In 1901."  # reasoning removed from the LC answer
    assert result.rag_answer == "unanswerable"
    assert result.usage == RAG_USAGE + LC_USAGE
    assert result.stage_usage("rag") == RAG_USAGE
    assert result.stage_usage(sr.Stage.LONG_CONTEXT) == LC_USAGE
    # When the LC call ran, the counterfactual is the provider's number.
    assert result.long_context_tokens == LC_USAGE.input_tokens
    assert result.long_context_tokens_source == "provider"
    assert result.token_ratio == pytest.approx((120 + 1500) / 1500)


def test_missing_provider_usage_is_estimated_and_labelled() -> None:
    result = run(Scripted(rag_usage=None))
    usage = result.steps[0].usage
    assert usage.source in {"tokenizer", "heuristic"} and usage.is_estimate
    assert usage.input_tokens > 0 and usage.output_tokens > 0


def test_retrieved_passages_are_capped_at_k() -> None:
    script = Scripted(passages=[f"passage {i}" for i in range(9)])
    result = run(script, k=3)
    assert script.seen[0] == sr.flow.Retrieve("Who kept the lamp?", 3)
    assert [p.text for p in result.sources] == ["passage 0", "passage 1", "passage 2"]


def test_rag_prompt_uses_the_configured_sentinel() -> None:
    prompts = sr.Prompts(sentinel="NO_ANSWER")
    script = Scripted(rag="NO_ANSWER")
    result = run(script, prompts=prompts)
    assert result.reason is sr.Reason.DECLINED
    rag_step = next(s for s in script.seen if isinstance(s, sr.flow.Generate))
    assert rag_step.sentinel == "NO_ANSWER" and '"NO_ANSWER"' in rag_step.prompt
    # With the custom sentinel the default word is not the sentinel; in strict mode it is an answer.
    assert run(Scripted(rag="unanswerable"), prompts=prompts, strict=True).route is R


def test_strict_takes_a_natural_refusal_as_the_answer() -> None:
    result = run(Scripted(rag="The passages do not mention it."), strict=True)
    assert (result.route, result.reason) == (R, sr.Reason.ANSWERED)


# -- errors -------------------------------------------------------------------------------------
def test_rag_error_escalates_and_is_recorded() -> None:
    result = run(Scripted(rag_error=TimeoutError("read timed out")))
    assert result.reason is sr.Reason.RAG_ERROR and result.answer == "In 1901."
    assert result.error is not None and "TimeoutError" in result.error
    rag_step = result.steps[0]
    assert rag_step.stage is sr.Stage.RAG and rag_step.error and rag_step.usage.total_tokens == 0


def test_rag_error_raises_when_configured() -> None:
    with pytest.raises(sr.ModelOutputError, match="RAG-step model call failed") as info:
        run(Scripted(rag_error=TimeoutError("read timed out")), on_rag_error="raise")
    assert isinstance(info.value.__cause__, TimeoutError)


def test_retrieval_error_without_long_context_is_a_retrieval_error() -> None:
    with pytest.raises(sr.RetrievalError, match="no long context"):
        run(Scripted(retrieve_error=ConnectionError("down"), document=None))


def test_retrieval_error_raises_when_configured() -> None:
    with pytest.raises(sr.RetrievalError) as info:
        run(Scripted(retrieve_error=ConnectionError("down")), on_retrieval_error="raise")
    assert isinstance(info.value.__cause__, ConnectionError)


def test_long_context_error_carries_the_partial_rag_result() -> None:
    script = Scripted(rag="unanswerable", lc_error=RuntimeError("503 from provider"))
    with pytest.raises(sr.LongContextError, match="long-context model call failed") as info:
        run(script)
    partial = info.value.partial
    assert partial.answer is None
    assert partial.reason is sr.Reason.DECLINED and partial.route is LC
    assert partial.rag_answer == "unanswerable"
    assert partial.usage == RAG_USAGE  # what was already paid for is not lost
    assert partial.long_context_tokens is not None and partial.long_context_tokens > 0
    assert isinstance(info.value.__cause__, RuntimeError)


def test_decline_without_any_long_context_is_a_clear_error() -> None:
    with pytest.raises(sr.LongContextError, match="no long context is available") as info:
        run(Scripted(rag="unanswerable", document=None))
    assert info.value.partial.usage == RAG_USAGE


def test_over_budget_returns_the_decline_without_calling_the_lc_model() -> None:
    budget = sr.LongContextBudget(max_tokens_per_call=10)
    script = Scripted(rag="unanswerable")
    result = run(script, budget=budget)
    assert (result.route, result.reason) == (R, sr.Reason.OVER_BUDGET)
    assert result.answer == "unanswerable"
    assert result.error is not None and "per-call cap of 10" in result.error
    assert "long_context" not in script.stages()
    assert result.usage == RAG_USAGE
    assert result.long_context_tokens is not None and result.long_context_tokens > 10


@pytest.mark.parametrize(
    "script_kw",
    [{"document": None}, {"counterfactual_error": OSError("disk")}],
    ids=["no-document", "loader-fails"],
)
def test_counterfactual_problems_never_cost_the_answer(script_kw: dict[str, Any]) -> None:
    result = run(Scripted(**script_kw))
    assert result.answer == "Thirty-one years." and result.reason is sr.Reason.ANSWERED
    assert result.long_context_tokens is None and result.token_ratio is None


def test_counterfactual_can_be_switched_off() -> None:
    script = Scripted()
    result = run(script, counterfactual=False)
    assert script.stages() == ["retrieve", "rag"]
    assert result.long_context_tokens is None


def test_counterfactual_overflow_is_absorbed() -> None:
    result = run(Scripted(), long_context_window=60, overflow="error")
    assert result.answer == "Thirty-one years." and result.long_context_tokens is None


def test_max_question_tokens_rejects_before_any_step() -> None:
    script = Scripted()
    with pytest.raises(sr.InvalidInputError, match="max_question_tokens=3") as info:
        run(script, "When was the lighthouse keeper of Grey Point born?", max_question_tokens=3)
    assert info.value.context["question_tokens"] > 3
    assert script.seen == []


@pytest.mark.parametrize("question", ["", "   ", None, b"who?", 42])
def test_bad_question_rejected_before_any_step(question: Any) -> None:
    script = Scripted()
    with pytest.raises(sr.InvalidInputError):
        run(script, question)
    assert script.seen == []


def test_retrieve_returning_wrong_types_is_a_clear_error() -> None:
    with pytest.raises(sr.SelfRouteError, match=r"str at position 0; expected Passage"):
        run(Scripted(retrieve_result=["just a string"]))


def test_generate_returning_wrong_type_is_a_clear_error() -> None:
    with pytest.raises(sr.ModelOutputError, match="returned str; expected Generation"):
        run(Scripted(generate_result="Thirty-one years."))


def test_prices_give_cost_and_counterfactual_cost() -> None:
    prices = sr.PriceTable({"rag-model": (1.0, 2.0), "lc-model": (10.0, 20.0)})
    result = run(Scripted(rag="unanswerable"), prices=prices)
    expected = (120 * 1 + 6 * 2 + 1500 * 10 + 9 * 20) / 1_000_000
    assert result.cost == pytest.approx(expected)
    assert result.long_context_cost == pytest.approx((1500 * 10 + 9 * 20) / 1_000_000)


def test_counterfactual_is_priced_with_the_configured_long_context_model() -> None:
    prices = sr.PriceTable({"rag-model": (1.0, 2.0), "lc-model": (10.0, 20.0)})
    result = run(Scripted(), prices=prices, long_context_model="lc-model")
    assert result.cost == pytest.approx((120 * 1 + 6 * 2) / 1_000_000)
    assert result.long_context_tokens is not None
    assert result.long_context_cost == pytest.approx(
        (result.long_context_tokens * 10 + 6 * 20) / 1_000_000
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("k", 0),
        ("k", True),
        ("long_context_window", 0),
        ("answer_tokens", -1),
        ("overflow", "squeeze"),
        ("on_rag_error", "ignore"),
        ("prompts", "not prompts"),
    ],
)
def test_bad_config_is_a_configuration_error(field: str, value: Any) -> None:
    with pytest.raises(sr.ConfigurationError, match=field.split("_")[0]):
        sr.RouteConfig(**{field: value})


# -- cancellation -------------------------------------------------------------------------------
class _Cancelling(Scripted):
    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        raise asyncio.CancelledError


class _Interrupting(Scripted):
    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        raise KeyboardInterrupt


def test_cancelled_error_propagates_and_is_not_swallowed() -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(arun(_Cancelling()))


def test_keyboard_interrupt_propagates() -> None:
    with pytest.raises(KeyboardInterrupt):
        run(_Interrupting())


def test_cancelling_a_running_task_stops_the_flow() -> None:
    script = Scripted()

    class Slow(Scripted):
        async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
            script.seen.append(step)
            await asyncio.sleep(30)
            raise AssertionError("not reached")  # pragma: no cover

    async def main() -> None:
        task = asyncio.create_task(arun(Slow()))
        while not script.seen:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


@pytest.mark.parametrize(
    "wrap", [str, lambda t: sr.ContextDocument(t, "doc-1")], ids=["str", "doc"]
)
def test_loader_may_return_one_document_instead_of_a_list(wrap: Any) -> None:
    class OneDocument(Scripted):
        def load_long_context(self, step: sr.flow.LoadLongContext) -> Any:
            return wrap(self.document)

    result = run(OneDocument(rag="unanswerable"), long_context_window=4000)
    assert result.reason is sr.Reason.DECLINED and result.answer == "In 1901."
    assert result.context is not None and result.context["documents"] == 1


def test_always_lc_is_scaled_into_the_providers_tokens() -> None:
    """Issue 17: the RAG tokens are the provider's, the always-LC count is local; a provider whose
    tokenizer counts 1.5x the local one must not make Self-Route look cheaper than it is."""
    counter = sr.default_token_counter()
    lc_prompt = sr.Prompts().long_context_prompt("Who kept the lamp?", DOCUMENT)
    local_lc = counter.count(lc_prompt)
    rag_prompt = sr.Prompts().rag_prompt("Who kept the lamp?", list(PASSAGES))
    local_rag = counter.count(rag_prompt)
    # the provider counts 1.5 of its tokens per local token on the RAG prompt
    heavy = sr.Usage.of(round(local_rag * 1.5), 6)
    result = run(Scripted(rag_usage=heavy))
    assert result.steps[0].prompt_tokens_estimate == local_rag
    assert result.long_context_tokens_source == "provider_scaled"
    assert result.long_context_tokens == pytest.approx(local_lc * 1.5, rel=0.01)
    assert result.token_ratio == pytest.approx(local_rag / local_lc, rel=0.01)  # like for like
    # no provider usage: both sides are local counts, nothing to scale
    estimated = run(Scripted(rag_usage=None))
    assert estimated.long_context_tokens_source == counter.source
    assert estimated.long_context_tokens == pytest.approx(local_lc, abs=2)
    # a count far from any tokenizer's (a test double's fixed usage): not scaled, labelled local
    odd = run(Scripted(rag_usage=sr.Usage.of(3, 1)))
    assert odd.long_context_tokens_source == counter.source
    assert odd.long_context_tokens == pytest.approx(local_lc, abs=2)


def test_speculation_prices_always_lc_in_the_providers_tokens() -> None:
    counter = sr.default_token_counter()
    rag_prompt = sr.Prompts().rag_prompt("Who kept the lamp?", list(PASSAGES))
    heavy = sr.Usage.of(round(counter.count(rag_prompt) * 1.8), 6)
    result = run(Scripted(rag_usage=heavy), speculate_below=10.0)
    if not any(s.wasted for s in result.steps):
        pytest.skip("the scripted handler did not speculate")
    assert result.long_context_tokens_source == "provider_scaled"
