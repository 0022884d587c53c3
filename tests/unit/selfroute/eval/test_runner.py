"""evaluate(): the three methods, routing through the core flow, sharing, errors, concurrency."""

from __future__ import annotations

from pathlib import Path

import pytest

from selfroute import ConfigurationError, ModelOutputError, PriceTable, RouteConfig, Usage
from selfroute.eval import EvalItem, OracleReader, ResponseCache, aevaluate, evaluate
from tests.unit.selfroute.eval._fakes import DOCUMENT, ITEMS, ScriptedReader, item

CFG = RouteConfig(chunk_words=20)


def _records(summary, method, k=1):
    return {
        r.item.id: r for r in summary.records if r.method == method and (r.k == k or method == "lc")
    }


def test_oracle_routes_through_the_core_flow() -> None:
    summary = evaluate(ITEMS, reader=OracleReader(), ks=[1], config=CFG, cache=False)
    sr = _records(summary, "self_route")
    assert sr["in-chunk"].route == "rag" and sr["in-chunk"].reason == "answered"
    assert sr["in-chunk"].prediction == "granite blocks"
    assert sr["elsewhere"].route == "long_context" and sr["elsewhere"].reason == "declined"
    assert sr["elsewhere"].prediction == "1947"
    assert (
        sr["impossible"].route == "long_context" and sr["impossible"].prediction == "unanswerable"
    )
    assert all(r.score == 1.0 for r in sr.values())
    rag = _records(summary, "rag")
    assert rag["in-chunk"].score == 1.0 and rag["elsewhere"].score == 0.0
    assert rag["impossible"].score == 1.0  # declining an impossible question is right
    row = summary.row("self_route", 1)
    assert row.answerable_ratio == pytest.approx(1 / 3)
    assert row.score == 100.0 and summary.row("rag", 1).score == pytest.approx(66.67)
    assert summary.oracle and summary.model_calls == 0
    assert row.usage_source == "tokenizer"


def test_token_ratio_is_against_the_lc_baseline() -> None:
    summary = evaluate(ITEMS, reader=ScriptedReader(), ks=[1], config=CFG, cache=False)
    lc = _records(summary, "lc")
    sr = _records(summary, "self_route")
    for item_id, rec in sr.items():
        assert rec.lc_reference_tokens == lc[item_id].input_tokens
    answered = sr["in-chunk"]
    assert answered.token_ratio == pytest.approx(
        answered.calls[0].usage.input_tokens / lc["in-chunk"].input_tokens
    )
    fallback = sr["elsewhere"]
    assert fallback.token_ratio > 1.0  # RAG step plus the whole document
    row = summary.row("self_route", 1)
    total_lc = sum(r.input_tokens for r in lc.values())
    assert row.token_ratio == pytest.approx(sum(r.input_tokens for r in sr.values()) / total_lc)
    assert summary.row("lc").token_ratio == 1.0
    assert row.usage_source == "provider"


def test_fallback_reuses_the_lc_answer_instead_of_paying_twice() -> None:
    reader = ScriptedReader()
    summary = evaluate(ITEMS, reader=reader, ks=[1], config=CFG, cache=False)
    # per item: LC + RAG + Self-Route RAG step; the two fallbacks share the LC call
    assert len(reader.requests) == 3 * 3
    assert summary.model_calls == 9
    sr = _records(summary, "self_route")
    fallback_call = sr["elsewhere"].calls[1]
    assert fallback_call.stage.value == "long_context" and fallback_call.cached
    assert sr["elsewhere"].calls[0].cached is False
    assert summary.row("self_route", 1).cached_calls == 2
    assert summary.row("self_route", 1).lc_calls == 2


def test_separate_lc_reader_and_prices() -> None:
    small, big = ScriptedReader("small"), ScriptedReader("big")
    prices = PriceTable({"small": (1.0, 2.0), "big": (10.0, 20.0)})
    summary = evaluate(
        ITEMS, reader=small, lc_reader=big, ks=[1], config=CFG, cache=False, prices=prices
    )
    assert {r.method for r in big.requests} == {"lc"}
    assert {r.stage.value for r in small.requests} == {"rag"}
    lc = _records(summary, "lc")["in-chunk"]
    call = lc.calls[0]
    assert call.model == "big-2024"
    assert call.cost == pytest.approx(prices.cost("big", call.usage))
    assert summary.row("lc").cost == pytest.approx(
        sum(r.cost for r in _records(summary, "lc").values())
    )
    assert summary.row("lc").cost_complete


def test_missing_provider_usage_is_estimated_and_labelled() -> None:
    summary = evaluate(
        ITEMS[:1], reader=ScriptedReader(usage=False), ks=[1], config=CFG, cache=False
    )
    call = _records(summary, "lc")["in-chunk"].calls[0]
    assert call.usage.source in ("tokenizer", "heuristic")
    assert call.usage.input_tokens == call.prompt_tokens


def test_failed_calls_are_recorded_and_score_zero() -> None:
    reader = ScriptedReader(fail=lambda r: r.method == "rag" and r.item.id == "in-chunk")
    summary = evaluate(ITEMS, reader=reader, ks=[1], config=CFG, cache=False)
    bad = _records(summary, "rag")["in-chunk"]
    assert bad.error is not None and "scripted failure" in bad.error
    assert bad.score == 0.0 and bad.prediction is None
    assert summary.row("rag", 1).errors == 1
    assert "1 runs failed" in summary.to_markdown()
    with pytest.raises(RuntimeError, match="scripted failure"):
        evaluate(
            ITEMS,
            reader=ScriptedReader(fail=reader.fail),
            ks=[1],
            config=CFG,
            cache=False,
            on_error="raise",
        )


def test_long_context_failure_keeps_the_partial_route() -> None:
    reader = ScriptedReader(fail=lambda r: r.stage.value == "long_context")
    summary = evaluate(
        ITEMS, reader=reader, ks=[1], config=CFG, cache=False, methods=["self_route"]
    )
    rec = _records(summary, "self_route")["elsewhere"]
    assert rec.error is not None and "LongContextError" in rec.error
    assert rec.route == "long_context" and rec.reason == "declined"
    # the RAG step was paid for and stays in the record
    assert [c.stage.value for c in rec.calls] == ["rag"] and rec.input_tokens > 0
    assert rec.retrieved
    assert _records(summary, "self_route")["in-chunk"].error is None


def test_a_run_whose_first_calls_all_fail_stops_early() -> None:
    reader = ScriptedReader(fail=lambda r: True)
    with pytest.raises(ModelOutputError, match=r"first 5 runs all failed.*scripted failure"):
        evaluate(ITEMS * 3, reader=reader, ks=[1], config=CFG, cache=False, concurrency=1)
    # item 1: LC, RAG, Self-Route (RAG step, then its LC fallback); item 2: LC, RAG -> stop
    assert len(reader.requests) == 6


def test_rag_step_failure_escalates_like_the_flow_says() -> None:
    reader = ScriptedReader(fail=lambda r: r.method == "self_route" and r.stage.value == "rag")
    summary = evaluate(ITEMS[:1], reader=reader, ks=[1], config=CFG, cache=False)
    rec = _records(summary, "self_route")["in-chunk"]
    assert rec.route == "long_context" and rec.reason == "rag_error"
    assert rec.error is None and rec.flow_error and rec.score == 1.0


def test_concurrency_is_bounded() -> None:
    items = [
        item(f"q{i}", f"What was the lighthouse built from {i}?", ("granite",)) for i in range(8)
    ]
    reader = ScriptedReader(delay_s=0.01)
    evaluate(items, reader=reader, ks=[1], config=CFG, cache=False, concurrency=3)
    assert 1 < reader.max_in_flight <= 3


def test_disk_cache_makes_a_rerun_free(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    first = ScriptedReader()
    s1 = evaluate(ITEMS, reader=first, ks=[1, 2], config=CFG, cache=path)
    second = ScriptedReader()
    s2 = evaluate(ITEMS, reader=second, ks=[1, 2], config=CFG, cache=path)
    assert second.requests == [] and s2.model_calls == 0
    for a, b in zip(s1.rows, s2.rows, strict=True):
        assert (a.score, a.input_tokens, a.answerable_ratio) == (
            b.score,
            b.input_tokens,
            b.answerable_ratio,
        )
        assert a.latency_s == pytest.approx(b.latency_s)  # the original latency is reported
    # another model never reads these entries
    other = ScriptedReader("other")
    evaluate(ITEMS[:1], reader=other, ks=[1], config=CFG, cache=ResponseCache(path))
    assert len(other.requests) == 3


async def test_sync_evaluate_works_inside_a_running_loop() -> None:
    summary = evaluate(ITEMS[:1], reader=OracleReader(), ks=[1], config=CFG, cache=False)
    assert summary.items == 1
    again = await aevaluate(ITEMS[:1], reader=OracleReader(), ks=[1], config=CFG, cache=False)
    assert again.row("lc").score == summary.row("lc").score


def test_only_self_route_uses_a_counted_lc_reference() -> None:
    summary = evaluate(
        ITEMS, reader=ScriptedReader(), ks=[1], config=CFG, cache=False, methods=["self_route"]
    )
    assert [r.method for r in summary.rows] == ["self_route"]
    rec = _records(summary, "self_route")["in-chunk"]
    assert rec.lc_reference_source in ("tokenizer", "heuristic")
    assert summary.comparisons == {}


def test_limit_and_multiple_k() -> None:
    summary = evaluate(ITEMS, reader=OracleReader(), ks=[2, 1, 2], config=CFG, cache=False, limit=2)
    assert summary.items == 2 and summary.ks == [1, 2]
    assert [r.label for r in summary.rows] == [
        "LC",
        "RAG (k=1)",
        "RAG (k=2)",
        "Self-Route (k=1)",
        "Self-Route (k=2)",
    ]
    assert len(summary.records) == 2 * 5
    assert set(summary.comparisons) == {1, 2}


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"ks": [0]}, "ks must be positive"),
        ({"ks": []}, "ks must be positive"),
        ({"methods": ["lc", "bm25"]}, "unknown methods"),
        ({"concurrency": 0}, "concurrency"),
        ({"on_error": "ignore"}, "on_error"),
        ({"limit": 0}, "limit"),
        ({"reader": object()}, "Reader interface"),
        ({"cache": 3}, "cache must be"),
    ],
)
def test_bad_arguments(kwargs: dict, match: str) -> None:
    args = {"reader": OracleReader(), "cache": False, **kwargs}
    with pytest.raises(ConfigurationError, match=match):
        evaluate(ITEMS, **args)


def test_oracle_refuses_non_span_metrics() -> None:
    summary_item = EvalItem(
        id="s", question="Summarise.", document=DOCUMENT, answers=("x",), metric="rouge_l"
    )
    with pytest.raises(ConfigurationError, match="span answers"):
        evaluate([summary_item], reader=OracleReader(), cache=False)
    with pytest.raises(ConfigurationError, match="no items"):
        evaluate([], reader=OracleReader(), cache=False)


def test_usage_of_oracle_is_counted_locally() -> None:
    oracle = OracleReader()
    summary = evaluate(ITEMS[:1], reader=oracle, ks=[1], config=CFG, cache=False)
    call = _records(summary, "lc")["in-chunk"].calls[0]
    assert call.usage == Usage.of(
        oracle.counter.count(
            RouteConfig().prompts.long_context_prompt(ITEMS[0].question, DOCUMENT)
        ),
        oracle.counter.count("granite blocks"),
        source=oracle.counter.source,
    )


def test_identical_share_and_differences() -> None:
    summary = evaluate(ITEMS, reader=OracleReader(), ks=[1], config=CFG, cache=False)
    comp = summary.comparisons[1]
    assert comp.items == 3
    # in-chunk and impossible are identical; "elsewhere": RAG declines, LC answers
    assert comp.identical_share == pytest.approx(2 / 3)
    assert comp.lc_better == 1 and comp.rag_better == 0
    assert sorted(comp.differences) == [-1.0, 0.0, 0.0]


def test_a_data_file_path_is_loaded(tmp_path) -> None:
    import json

    path = tmp_path / "articles.jsonl"
    row = {
        "title": "T",
        "document": DOCUMENT,
        "questions": [
            {
                "id": "q",
                "question": "What was the lighthouse built from?",
                "answers": ["granite blocks"],
                "is_impossible": False,
            }
        ],
    }
    path.write_text(json.dumps(row) + "\n")
    summary = evaluate(str(path), reader=OracleReader(), ks=[1], config=CFG, cache=False)
    assert summary.items == 1 and summary.row("self_route", 1).answerable_ratio == 1.0


class _GermanReader(ScriptedReader):
    """Declines in German where the oracle would write the sentinel."""

    async def agenerate(self, request):  # type: ignore[no-untyped-def]
        gen = await super().agenerate(request)
        if gen.text.strip().lower() == "unanswerable":
            return type(gen)(text="Keine Angaben im Text.", usage=gen.usage, model=gen.model)
        return gen


def test_a_decline_detector_scores_every_method_s_declines() -> None:
    from selfroute import DeclinePattern

    impossible = [i for i in ITEMS if i.unanswerable]
    plain = evaluate(impossible, reader=_GermanReader(), ks=[1], config=CFG, cache=False)
    heard = evaluate(
        impossible,
        reader=_GermanReader(),
        ks=[1],
        config=RouteConfig(chunk_words=20, decline_detector=DeclinePattern("^keine angaben")),
        cache=False,
    )
    for method in ("lc", "rag", "self_route"):
        assert not any(r.abstained for r in _records(plain, method).values()), method
        assert all(r.abstained for r in _records(heard, method).values()), method
    route = next(iter(_records(heard, "self_route").values()))
    assert [c.stage.value for c in route.calls] == ["rag", "long_context"]  # it escalated


def test_self_route_s_long_context_request_carries_the_document_itself() -> None:
    # not a copy sliced from the prompt: what is remembered by identity (its token count, its
    # digest) applies to it, so a long document is not hashed again on every fallback
    reader = ScriptedReader()
    evaluate(ITEMS, reader=reader, ks=[1], methods=["self_route"], config=CFG, cache=False)
    lc = [r for r in reader.requests if r.stage.value == "long_context"]
    assert lc and all(r.context is r.item.document for r in lc)
    assert all(r.context in r.prompt for r in lc)


def test_a_baseline_answer_is_parsed_once_per_question(monkeypatch: pytest.MonkeyPatch) -> None:
    from selfroute.eval import _runner

    parsed: list[tuple[str, str]] = []
    original = _runner.parse_verdict

    def spy(text: str, **kw: object) -> object:
        parsed.append((text, str(kw.get("question"))))
        return original(text, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(_runner, "parse_verdict", spy)
    summary = evaluate(
        ITEMS, reader=OracleReader(), ks=[1], methods=["lc", "rag"], config=CFG, cache=False
    )
    # LC and RAG answer "in-chunk" alike: its answer is read once; every record still says it
    assert len(parsed) == len(set(parsed)) < 2 * len(ITEMS)
    lc, rag = _records(summary, "lc"), _records(summary, "rag")
    assert lc["in-chunk"].abstained is rag["in-chunk"].abstained is False
    assert rag["impossible"].abstained is True


def test_self_route_configs_are_built_once_per_k(monkeypatch: pytest.MonkeyPatch) -> None:
    from selfroute.eval import _runner

    built: list[int] = []
    original = _runner.replace

    def spy(config: RouteConfig, **kw: object) -> RouteConfig:
        built.append(1)
        return original(config, **kw)

    monkeypatch.setattr(_runner, "replace", spy)
    evaluate(
        ITEMS, reader=OracleReader(), ks=[1, 2], methods=["self_route"], config=CFG, cache=False
    )
    assert len(built) <= 2 * 2  # checked once per k, then one config per k: not per item
