"""Fault handling of the core flow, injected through a scripted handler (sync and async drivers).

Each test name is cited in docs/reliability.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

import selfroute as sr
from tests.unit.reliability._fakes import LC_USAGE, RAG_USAGE, ScriptedHandler, arun, run

Runner = Callable[..., sr.RouteResult]


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> Runner:
    if request.param == "sync":
        return run

    def _run(handler: ScriptedHandler, question: Any, **config: Any) -> sr.RouteResult:
        return asyncio.run(arun(handler, question, **config))

    return _run


class RateLimitError(Exception):
    """Stands in for a provider's 429 exception."""


RAG_FAULTS = [
    pytest.param(TimeoutError("Request timed out."), id="timeout"),
    pytest.param(RateLimitError("Error code: 429 - rate limit exceeded"), id="429"),
    pytest.param(RuntimeError("Error code: 500 - internal error"), id="500"),
    pytest.param(ValueError("Expecting value: line 1 column 1 (char 0)"), id="malformed"),
    pytest.param(sr.ModelOutputError("the model returned no choices"), id="adapter-error"),
]


@pytest.mark.parametrize("fault", RAG_FAULTS)
def test_rag_error_escalates_by_default(runner: Runner, fault: Exception) -> None:
    handler = ScriptedHandler(rag=fault)
    result = runner(handler, "When was Mara Holt born?")
    assert result.route is sr.Route.LONG_CONTEXT
    assert result.reason is sr.Reason.RAG_ERROR
    assert result.answer == "In 1901."
    assert result.error is not None and result.error.startswith("rag: ")
    assert type(fault).__name__ in result.error and str(fault) in result.error
    rag_step, lc_step = result.steps
    assert rag_step.stage is sr.Stage.RAG and rag_step.error is not None
    assert rag_step.usage == sr.Usage.zero()
    assert lc_step.usage == LC_USAGE
    assert [s for s, _ in handler.prompts] == [sr.Stage.RAG, sr.Stage.LONG_CONTEXT]
    assert result.to_dict()["error"] == result.error


def test_empty_rag_output_escalates_as_empty_output(runner: Runner) -> None:
    result = runner(ScriptedHandler(rag="   "), "When was Mara Holt born?")
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.EMPTY_OUTPUT)
    assert result.answer == "In 1901." and result.error is None


@pytest.mark.parametrize("fault", RAG_FAULTS)
def test_rag_error_raises_when_configured(runner: Runner, fault: Exception) -> None:
    handler = ScriptedHandler(rag=fault)
    with pytest.raises(sr.ModelOutputError) as info:
        runner(handler, "When was Mara Holt born?", on_rag_error="raise")
    assert str(fault) in str(info.value)
    assert handler.model_calls == 1  # no long-context call after the failure


def test_handler_returning_wrong_type_is_a_bug_not_a_fault(runner: Runner) -> None:
    handler = ScriptedHandler(rag=lambda prompt: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(sr.ModelOutputError, match="expected Generation"):
        runner(handler, "When was Mara Holt born?")
    assert handler.model_calls == 1


@pytest.mark.parametrize(
    "caller_error",
    [sr.ConfigurationError("bad template"), sr.MissingDependencyError("openai", "openai")],
    ids=["configuration", "missing-dependency"],
)
def test_caller_errors_surface_without_escalation(runner: Runner, caller_error: Exception) -> None:
    handler = ScriptedHandler(rag=caller_error)
    with pytest.raises(type(caller_error)):
        runner(handler, "When was Mara Holt born?")
    assert handler.model_calls == 1


def test_lc_error_carries_partial_rag_result(runner: Runner) -> None:
    handler = ScriptedHandler(rag="unanswerable", lc=RuntimeError("Error code: 503"))
    with pytest.raises(sr.LongContextError) as info:
        runner(handler, "When was Mara Holt born?")
    partial = info.value.partial
    assert partial.answer is None
    assert partial.route is sr.Route.LONG_CONTEXT and partial.reason is sr.Reason.DECLINED
    assert partial.rag_answer == "unanswerable"
    assert partial.steps[0].usage == RAG_USAGE and partial.usage == RAG_USAGE
    assert [p.text for p in partial.sources] == list(handler.passages)  # type: ignore[arg-type]
    assert partial.long_context_tokens and partial.context is not None
    assert "Error code: 503" in str(info.value)
    assert isinstance(info.value.__cause__, RuntimeError)


def test_lc_loader_error_carries_partial_rag_result(runner: Runner) -> None:
    handler = ScriptedHandler(rag="unanswerable", document=sr.RetrievalError("store went away"))
    with pytest.raises(sr.LongContextError) as info:
        runner(handler, "When was Mara Holt born?")
    assert info.value.partial.steps[0].usage == RAG_USAGE
    assert info.value.partial.rag_answer == "unanswerable"
    assert "store went away" in str(info.value)


def test_no_long_context_after_decline_is_a_clear_error(runner: Runner) -> None:
    handler = ScriptedHandler(rag="unanswerable", document=None)
    with pytest.raises(sr.LongContextError, match="no long context is available") as info:
        runner(handler, "When was Mara Holt born?")
    assert info.value.partial.usage == RAG_USAGE


@pytest.mark.parametrize(
    "fault",
    [ConnectionRefusedError(111, "Connection refused"), sr.RetrievalError("chroma is down")],
    ids=["connection-refused", "store-retrieval-error"],
)
def test_retriever_error_escalates_when_a_document_exists(runner: Runner, fault: Exception) -> None:
    handler = ScriptedHandler(passages=fault)
    result = runner(handler, "When was Mara Holt born?")
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.RETRIEVAL_ERROR)
    assert result.answer == "In 1901."
    assert result.error is not None and result.error.startswith("retrieval: ")
    assert [s for s, _ in handler.prompts] == [sr.Stage.LONG_CONTEXT]  # no RAG call without chunks


def test_retriever_error_without_document_is_a_retrieval_error(runner: Runner) -> None:
    handler = ScriptedHandler(passages=ConnectionRefusedError(111, "refused"), document=None)
    with pytest.raises(sr.RetrievalError, match="no long context is available"):
        runner(handler, "When was Mara Holt born?")
    assert handler.model_calls == 0


def test_retriever_error_raises_when_configured(runner: Runner) -> None:
    handler = ScriptedHandler(passages=OSError("store unreachable"))
    with pytest.raises(sr.RetrievalError, match="store unreachable"):
        runner(handler, "When was Mara Holt born?", on_retrieval_error="raise")
    assert handler.model_calls == 0


def test_retriever_and_loader_both_failing_is_a_retrieval_error(runner: Runner) -> None:
    handler = ScriptedHandler(passages=OSError("down"), document=OSError("also down"))
    with pytest.raises(sr.RetrievalError, match="also down"):
        runner(handler, "When was Mara Holt born?")
    assert handler.model_calls == 0


def test_counterfactual_loader_failure_never_costs_the_answer(runner: Runner) -> None:
    handler = ScriptedHandler(document=OSError("parent store down"))
    result = runner(handler, "How long was the lighthouse kept?")
    assert (result.route, result.reason) == (sr.Route.RAG, sr.Reason.ANSWERED)
    assert result.answer == "Thirty-one years." and result.long_context_tokens is None


def test_cancellation_is_never_swallowed() -> None:
    handler = ScriptedHandler(rag=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        run(handler, "When was Mara Holt born?")
    handler = ScriptedHandler(rag=asyncio.CancelledError())
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(arun(handler, "When was Mara Holt born?"))
    assert handler.model_calls == 1


class SlowRetriever(ScriptedHandler):
    """The retriever never answers in time (a store that accepts connections and hangs)."""

    def __init__(self, hang_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.hang_s = hang_s

    def retrieve(self, step: sr.flow.Retrieve) -> Any:
        time.sleep(self.hang_s)
        return super().retrieve(step)

    async def aretrieve(self, step: sr.flow.Retrieve) -> Any:
        await asyncio.sleep(self.hang_s)
        return super().retrieve(step)


def test_retrieval_timeout_escalates(runner: Runner) -> None:
    handler = SlowRetriever(3.0)
    started = time.monotonic()
    result = runner(handler, "When was Mara Holt born?", retrieval_timeout_s=0.2)
    assert time.monotonic() - started < 2.5
    assert (result.reason, result.answer) == (sr.Reason.RETRIEVAL_ERROR, "In 1901.")
    assert "did not answer within 0.2s" in (result.error or "")
    assert [s for s, _ in handler.prompts] == [sr.Stage.LONG_CONTEXT]


def test_retrieval_timeout_without_document_is_a_retrieval_error(runner: Runner) -> None:
    with pytest.raises(sr.RetrievalError, match=r"did not answer within 0\.2s"):
        runner(SlowRetriever(3.0, document=None), "When?", retrieval_timeout_s=0.2)


def test_retrieval_within_timeout_is_untouched(runner: Runner) -> None:
    handler = ScriptedHandler()
    result = runner(handler, "How long was it kept?", retrieval_timeout_s=5)
    assert (result.reason, len(result.sources)) == (sr.Reason.ANSWERED, 2)
    failing = ScriptedHandler(passages=OSError("refused"))
    result = runner(failing, "How long was it kept?", retrieval_timeout_s=5)
    assert result.error is not None and "refused" in result.error  # the real error, not a timeout


@pytest.mark.parametrize("bad", [0, -1, "1", True, float("nan")])
def test_retrieval_timeout_must_be_positive(bad: object) -> None:
    with pytest.raises(sr.ConfigurationError, match="retrieval_timeout_s"):
        sr.RouteConfig(retrieval_timeout_s=bad)  # type: ignore[arg-type]
