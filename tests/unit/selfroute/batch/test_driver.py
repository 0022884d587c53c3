"""The batch driver over the core flow with an in-process backend: the same results as
``run_flow`` for every policy, phases, per-request errors, speculation, resume, job files."""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import selfroute as sr
from selfroute import (
    BatchBackend,
    BatchJob,
    BatchRequest,
    ConfigurationError,
    FunctionHandler,
    Generate,
    LexicalIndex,
    LocalBatchBackend,
    LongContextBudget,
    PriceTable,
    Reason,
    Route,
    RouteConfig,
    Stage,
    run_flow,
    self_route_flow,
)

FACTS = [f"The badge number of guard {n} is B{n * 13:04d}." for n in range(12)]
TEXT = " ".join(
    f"{fact} " + "The night shift walks the east corridor and logs every door it checks. " * 4
    for fact in FACTS
)
INDEX = LexicalIndex.from_text(TEXT, chunk_words=30)
QUESTIONS = [f"What is the badge number of guard {n}?" for n in range(12)]
_ASKED = re.compile(r"guard (\d+)\?")


def model(prompt: str) -> str:
    """RAG: answers when the fact is in the passage and n is odd; LC: answers, except n = 4."""
    n = int(_ASKED.findall(prompt)[-1])
    fact = FACTS[n]
    if "Document:" in prompt:
        body = "unanswerable" if n == 4 else f"B{n * 13:04d}"
    elif fact in prompt and n % 2:
        body = f"B{n * 13:04d}"
    else:
        return "unanswerable"
    return f"{body}\nQuote: {fact}" if "Quote:" in prompt else body


def handler() -> FunctionHandler:
    return FunctionHandler(
        retrieve=lambda q, k: INDEX.search(q, k), generate=model, long_context=TEXT
    )


def backend(**kw: Any) -> LocalBatchBackend:
    return LocalBatchBackend(lambda r: model(r.step.prompt), **kw)


def plain(result: sr.RouteResult) -> dict[str, Any]:
    data = result.to_dict()
    data.pop("latency_s")
    data.pop("cost")
    for step in data["steps"]:
        step.pop("latency_s")
        step.pop("batch")
        step.pop("model")
    return data


def online(config: RouteConfig) -> list[dict[str, Any]]:
    return [plain(run_flow(self_route_flow(q, config), handler())) for q in QUESTIONS]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"k": 1, "k_ladder": (3,)},
        {"grounded": True},
        {"budget_calls": 2},
        {"strict": True, "counterfactual": False},
    ],
    ids=["sentinel", "k_ladder", "grounded", "budget", "strict"],
)
def test_results_equal_the_online_flow(settings: dict[str, Any]) -> None:
    calls = settings.pop("budget_calls", None)

    def config() -> RouteConfig:
        budget = LongContextBudget(max_calls=calls) if calls else None
        return RouteConfig(**{"k": 2, "budget": budget, **settings})

    expected = online(config())
    job = BatchJob(
        QUESTIONS, handler=handler(), backend=backend(), config=config(), poll_interval_s=0
    )
    outcomes = job.results()
    assert [plain(o.result) for o in outcomes if o.result] == expected
    assert all(s.batch for o in outcomes if o.result for s in o.result.steps)


def test_one_batch_per_phase_and_status() -> None:
    be = backend(polls_to_finish=2)
    job = BatchJob(
        QUESTIONS, handler=handler(), backend=be, config=RouteConfig(k=2), poll_interval_s=0
    )
    status = job.status()
    assert (status.phase, status.waiting, status.done, status.finished) == (1, 12, 0, False)
    assert job.status().phase == 1  # still running: nothing new submitted
    final = job.wait()
    assert final.finished and final.done == 12
    assert len(be.submitted) == 2
    sizes = [len(be.batches[b]["requests"]) for b in be.submitted]
    rag_answered = sum(1 for o in job.results() if o.result and o.result.route is Route.RAG)
    assert sizes == [12, 12 - rag_answered]


async def test_async_handle() -> None:
    expected = online(RouteConfig(k=2))
    job = BatchJob(
        QUESTIONS, handler=handler(), backend=backend(), config=RouteConfig(k=2), poll_interval_s=0
    )
    assert (await job.astatus()).phase == 1
    assert [plain(o.result) for o in await job.aresults() if o.result] == expected
    assert (await job.wait_async()).finished


def test_per_request_errors_escalate_like_online_failures() -> None:
    def flaky(request: BatchRequest) -> str:
        if request.stage is Stage.RAG and "guard 3?" in request.step.prompt:
            raise RuntimeError("server_error: overloaded")
        if request.stage is Stage.LONG_CONTEXT and "guard 6?" in request.step.prompt:
            raise RuntimeError("server_error: overloaded")
        return model(request.step.prompt)

    outcomes = BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=LocalBatchBackend(flaky),
        config=RouteConfig(k=2),
        poll_interval_s=0,
    ).results()
    by_id = {o.id: o for o in outcomes}
    assert by_id["3"].result is not None and by_id["3"].result.reason is Reason.RAG_ERROR
    assert by_id["3"].result.route is Route.LONG_CONTEXT
    assert "batch request failed" in (by_id["3"].result.error or "")
    assert not by_id["6"].ok and "LongContextError" in (by_id["6"].error or "")
    assert by_id["6"].partial is not None and by_id["6"].partial.steps[0].batch
    raising = BatchJob(
        QUESTIONS[3:4],
        handler=handler(),
        backend=LocalBatchBackend(flaky),
        config=RouteConfig(k=2, on_rag_error="raise"),
        poll_interval_s=0,
    )
    assert "ModelOutputError" in (raising.results()[0].error or "")


def test_speculation_is_off_with_a_note_and_a_speculating_flow_fails_clearly() -> None:
    cfg = RouteConfig(k=2, speculate_below=100.0)
    job = BatchJob(QUESTIONS, handler=handler(), backend=backend(), config=cfg, poll_interval_s=0)
    assert job.config.speculate_below is None
    assert job.notes and "speculate_below" in job.notes[0]
    assert all(o.ok for o in job.results())
    assert "speculate_below" in job.status().notes[0]
    timed = BatchJob(
        QUESTIONS[:2],
        handler=handler(),
        backend=backend(),
        config=RouteConfig(k=2, deadline_s=5.0),
        poll_interval_s=0,
    )
    assert timed.config.deadline_s is None and "deadline_s" in timed.notes[0]
    assert all(o.ok for o in timed.results())

    def flow(item: sr.BatchItem) -> Generator[Any, Any, sr.RouteResult]:
        return self_route_flow(item.question, cfg)

    custom = BatchJob(
        QUESTIONS[:2], handler=handler(), backend=backend(), flow=flow, poll_interval_s=0
    )
    outcomes = custom.results()
    assert all("ConfigurationError" in (o.error or "") for o in outcomes)
    assert "speculative long context" in (outcomes[0].error or "")


def test_rerun_answers_from_the_job_file_and_refuses_changed_prompts(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    be = backend()
    first = BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=be,
        config=RouteConfig(k=2),
        job_file=path,
        poll_interval_s=0,
    ).results()
    assert len(be.submitted) == 2
    again = BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=be,
        config=RouteConfig(k=2),
        job_file=path,
        poll_interval_s=0,
    ).results()
    assert len(be.submitted) == 2  # nothing sent again
    assert [plain(o.result) for o in again if o.result] == [
        plain(o.result) for o in first if o.result
    ]
    prompts = sr.Prompts(rag=sr.DEFAULT_RAG_PROMPT.replace("Keep the answer short.", "Be brief."))
    with pytest.raises(sr.ConfigurationError, match=r"other settings.*prompts .*Nothing was sent"):
        BatchJob(
            QUESTIONS,
            handler=handler(),
            backend=be,
            config=RouteConfig(k=2, prompts=prompts),
            job_file=path,
            poll_interval_s=0,
        )
    assert len(be.submitted) == 2  # changed prompts refuse: the old prompts' answers are not served


def test_job_file_guards(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    BatchJob(
        QUESTIONS[:2], handler=handler(), backend=backend(), job_file=path, poll_interval_s=0
    ).results()
    assert json.loads(path.read_text())["format"] == "selfroute-batch-job"
    # no temporary file left; the lock file (a process id) stays, as the store's index lock does
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job.json", "job.json.lock"]
    with pytest.raises(ConfigurationError, match="other questions"):
        BatchJob(QUESTIONS[:3], handler=handler(), backend=backend(), job_file=path)
    with pytest.raises(ConfigurationError, match="'local' batch provider"):
        BatchJob(QUESTIONS[:2], handler=handler(), backend=backend(name="other"), job_file=path)
    path.write_text("{}")
    with pytest.raises(ConfigurationError, match="not a selfroute batch job file"):
        BatchJob(QUESTIONS[:2], handler=handler(), backend=backend(), job_file=path)


def test_inputs_and_backends_are_checked() -> None:
    with pytest.raises(sr.InvalidInputError, match="duplicate item id"):
        BatchJob(
            [{"id": "a", "question": "x?"}, {"id": "a", "question": "y?"}],
            handler=handler(),
            backend=backend(),
        )
    with pytest.raises(sr.InvalidInputError, match="no 'question'"):
        BatchJob([{"q": "x"}], handler=handler(), backend=backend())
    with pytest.raises(ConfigurationError, match="not a batch backend"):
        BatchJob(["x?"], handler=handler(), backend=object())
    assert isinstance(sr.OpenAIBatchBackend("gpt-4o-mini"), BatchBackend)
    assert isinstance(sr.GeminiBatchBackend("gemini-2.5-flash"), BatchBackend)
    assert isinstance(backend(), sr.AsyncBatchBackend)


def test_batch_prices_and_the_cost_report() -> None:
    table = PriceTable({"m": (2.0, 8.0)}, batch={"lc": (1.0, 1.0)})
    usage = sr.Usage.of(1_000_000, 1_000_000)
    assert table.cost("m", usage, batch=True) == pytest.approx(5.0)  # half of 10
    assert table.cost("lc", usage, batch=True) == pytest.approx(2.0)
    assert PriceTable({"m": (2.0, 8.0)}, batch_discount=0.25).cost("m", usage, batch=True) == 2.5
    with pytest.raises(ConfigurationError, match="batch_discount"):
        PriceTable({"m": (1.0, 1.0)}, batch_discount=2)
    prices = PriceTable({"local": (1.0, 4.0)})
    cfg = RouteConfig(k=2, prices=prices)
    outcomes = BatchJob(
        QUESTIONS, handler=handler(), backend=backend(), config=cfg, poll_interval_s=0
    ).results()
    results = [o.result or o.partial for o in outcomes]
    report = sr.batch_cost_report([r for r in results if r], prices)
    assert report.always_lc_batch == pytest.approx(report.always_lc_online * 0.5)
    assert report.self_route_batch == pytest.approx(report.self_route_online * 0.5)
    assert report.self_route_online < report.always_lc_online
    assert sum(r.cost for r in results if r and r.cost) == pytest.approx(report.self_route_batch)
    table_md = report.to_markdown()
    assert "| always long context, batch |" in table_md and "50.0%" in table_md
    assert report.to_dict()["questions"] == 12


def test_request_lines_use_the_step_stage_model() -> None:
    be = sr.OpenAIBatchBackend("small", long_context_model="big", options={"temperature": 0})
    step = Generate(Stage.LONG_CONTEXT, "prompt", "q")
    line = be.request_line(BatchRequest("q#1", step, be.model_for(step)))
    assert line["body"] == {
        "model": "big",
        "temperature": 0,
        "messages": [{"role": "user", "content": "prompt"}],
    }
    assert line["url"] == "/v1/chat/completions" and line["custom_id"] == "q#1"


def test_a_phase_over_the_provider_limit_goes_out_as_several_batches() -> None:
    be = LocalBatchBackend(lambda r: model(r.step.prompt), max_requests=5)
    expected = online(RouteConfig(k=2))
    outcomes = BatchJob(
        QUESTIONS, handler=handler(), backend=be, config=RouteConfig(k=2), poll_interval_s=0
    ).results()
    assert [plain(o.result) for o in outcomes if o.result] == expected
    sizes = [len(be.batches[b]["requests"]) for b in be.submitted]
    assert sizes[:3] == [5, 5, 2] and max(sizes) <= 5


def test_a_second_run_of_one_job_file_refuses_while_the_first_holds_it(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    be = backend()
    first = BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=be,
        config=RouteConfig(k=2),
        job_file=path,
        poll_interval_s=0,
    )
    with pytest.raises(sr.ConfigurationError, match=r"in use by another run.*nothing"):
        BatchJob(
            QUESTIONS,
            handler=handler(),
            backend=be,
            config=RouteConfig(k=2),
            job_file=path,
            poll_interval_s=0,
        ).results()
    assert be.submitted == []  # the refused run sent nothing
    assert all(o.ok for o in first.results())
    again = BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=be,
        config=RouteConfig(k=2),
        job_file=path,
        poll_interval_s=0,
    )
    assert all(o.ok for o in again.results())  # released once the first run collected


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda text: text[: len(text) // 2], "job.json"),
        (lambda text: "[1, 2]", "job.json"),
        (lambda text: text.replace('"answers"', '"answerz"', 1), "answers"),
        (lambda text: b"\xff\xfe".decode("latin-1") + text, "job.json"),
    ],
    ids=["truncated", "not-an-object", "key-missing", "garbage-prefix"],
)
def test_a_damaged_job_file_is_refused_naming_it_and_sends_nothing(
    tmp_path: Path, edit: Any, says: str
) -> None:
    path = tmp_path / "job.json"
    BatchJob(
        QUESTIONS,
        handler=handler(),
        backend=backend(),
        config=RouteConfig(k=2),
        job_file=path,
        poll_interval_s=0,
    ).results()
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    be = backend()
    with pytest.raises(sr.ConfigurationError, match=says) as caught:
        BatchJob(
            QUESTIONS,
            handler=handler(),
            backend=be,
            config=RouteConfig(k=2),
            job_file=path,
            poll_interval_s=0,
        ).results()
    assert str(path) in str(caught.value) or path.name in str(caught.value)
    assert be.submitted == []
