"""What the command line prints for results, sources, index runs and the progress bar."""

from __future__ import annotations

import io

import selfroute as sr
from selfroute.cli._output import Progress, format_result, format_session, format_sources
from selfroute.stores import IndexReport, Skipped


def _result(
    route: sr.Route, reason: sr.Reason, steps: list[sr.StepRecord], lc: int | None, **kw: object
) -> sr.RouteResult:
    return sr.RouteResult(
        question="q",
        answer="a",
        route=route,
        reason=reason,
        steps=tuple(steps),
        long_context_tokens=lc,
        long_context_tokens_source=kw.pop("lc_source", "tokenizer"),
        latency_s=1.234,
        **kw,  # type: ignore[arg-type]
    )


RAG = sr.StepRecord(sr.Stage.RAG, sr.Usage.of(800, 6), model="gpt-4o-mini", latency_s=0.41)
LC = sr.StepRecord(sr.Stage.LONG_CONTEXT, sr.Usage.of(9000, 12), model="gpt-4.1", latency_s=2.5)


def test_rag_route_report() -> None:
    text = format_result(_result(sr.Route.RAG, sr.Reason.ANSWERED, [RAG], 10_000))
    lines = text.splitlines()
    assert lines[0] == "route       rag  [answered] answered from the retrieved chunks"
    assert lines[1].split() == [
        "tokens",
        "rag",
        "800",
        "in",
        "6",
        "out",
        "gpt-4o-mini",
        "0.41",
        "s",
    ]
    assert "always-LC   10,000 input tokens" in text and "(tokenizer count)" in text
    assert "ratio       8.0% of always-LC input tokens; saved 9,200 (92%)" in text
    assert lines[-1] == "latency     1.23 s"


def test_long_context_route_report_with_costs() -> None:
    estimate = sr.StepRecord(sr.Stage.RAG, sr.Usage.of(800, 1, source="heuristic"), model="m")
    result = _result(
        sr.Route.LONG_CONTEXT,
        sr.Reason.DECLINED,
        [estimate, LC],
        9000,
        lc_source="provider",
        cost=0.0123,
        long_context_cost=0.0119,
    )
    text = format_result(result)
    assert "[declined] the model wrote 'unanswerable'" in text
    assert "[heuristic estimate]" in text
    assert "total" in text and "9,800 in" in text
    assert "(reported by the provider)" in text
    assert "108.9% of always-LC input tokens (800 more: the RAG attempt came first)" in text
    assert "cost        $0.0123  (always-LC: $0.0119)" in text


def test_unknown_counterfactual_and_errors() -> None:
    failed = sr.StepRecord(sr.Stage.RAG, sr.Usage.zero(), error="APIConnectionError()")
    text = format_result(
        _result(sr.Route.LONG_CONTEXT, sr.Reason.RAG_ERROR, [failed], None, error="rag: boom")
    )
    assert "FAILED: APIConnectionError()" in text
    assert "always-LC   unknown" in text and "note        rag: boom" in text


def test_sources_list_paths_scores_ranks_and_snippets() -> None:
    passage = sr.Passage(
        text="word " * 100,
        doc_id="d",
        score=0.0325,
        metadata={"source": "/elsewhere/a.md", "chunk_index": 3, "dense_rank": 2, "bm25_rank": 1},
    )
    text = format_sources([passage])
    assert "[1] /elsewhere/a.md  chunk 3  (score 0.0325, dense #2, bm25 #1)" in text
    assert text.splitlines()[-1].strip().endswith("...")
    assert format_sources([]) == "sources     none retrieved"


def test_session_summary() -> None:
    stats = sr.RouteStats(
        [
            _result(sr.Route.RAG, sr.Reason.ANSWERED, [RAG], 10_000),
            _result(sr.Route.LONG_CONTEXT, sr.Reason.DECLINED, [RAG, LC], 9_000),
        ]
    )
    assert format_session(stats) == (
        "2 question(s): 1 answered from chunks, 1 needed the long context; "
        f"{(800 + 9800) / 19_000:.1%} of always-LC input tokens"
    )
    assert format_session(sr.RouteStats()) == "no questions asked"


def test_progress_bar_is_off_when_not_a_terminal_unless_forced() -> None:
    quiet = io.StringIO()
    progress = Progress("auto", quiet)
    progress("files", {"total": 2})
    progress("file", {"path": "a", "status": "added"})
    progress.close()
    assert quiet.getvalue() == ""
    shown = io.StringIO()
    forced = Progress("always", shown)
    forced("files", {"total": 2})
    forced("chunks", {"count": 7})
    forced("file", {"path": "a", "status": "added"})
    forced.close()
    assert "1/2" in shown.getvalue() and "7 chunks" in shown.getvalue()


def test_progress_bar_redraws_by_time_not_per_file() -> None:
    shown = io.StringIO()
    forced = Progress("always", shown)
    forced("files", {"total": 5_000})
    for _ in range(5_000):
        forced("chunks", {"count": 1})
        forced("file", {"path": "a", "status": "added"})
    forced.close()
    out = shown.getvalue()
    assert "5000/5000" in out and "5,000 chunks" in out
    assert out.count("\r") < 200  # one redraw per file would be 5,000


def test_index_report_summary() -> None:
    from selfroute.cli._output import format_index_report

    report = IndexReport(
        files=3,
        added=["/x/a.txt"],
        unchanged=1,
        chunks=4,
        words=900,
        seconds=2.0,
        skipped=[Skipped("/x/b.bin", "binary file")],
        removed=["/x/old.md"],
    )
    text = format_index_report(report, None)
    assert (
        text.splitlines()[0]
        == "indexed 2 of 3 files in 2.0 s: 1 new, 0 changed, 1 unchanged, 1 removed"
    )
    assert "wrote 4 chunks (900 words, 2 chunks/s)" in text
    assert "/x/b.bin: binary file" in text and "removed     /x/old.md" in text


def test_a_model_without_a_price_is_named_not_skipped() -> None:
    """Issue 17: the server's model name differs from --prices; the report says which."""
    prices = sr.PriceTable({"gpt-4o-mini": (0.15, 0.6)})
    local = sr.StepRecord(sr.Stage.RAG, sr.Usage.of(800, 6), model="qwen2.5-7b-instruct")
    text = format_result(_result(sr.Route.RAG, sr.Reason.ANSWERED, [local], 10_000), prices=prices)
    assert (
        "cost        not shown: no price for 'qwen2.5-7b-instruct' (--prices has gpt-4o-mini)"
        in text
    )
    partial = _result(sr.Route.LONG_CONTEXT, sr.Reason.DECLINED, [RAG, LC], 9000, cost=0.0001)
    text = format_result(partial, prices=prices)
    assert "cost        partial (priced steps only): no price for 'gpt-4.1'" in text
    full = sr.PriceTable({"gpt-4o-mini": (0.15, 0.6), "gpt-4.1": (2, 8)})
    assert "no price" not in format_result(partial, prices=full)
    assert "no price" not in format_result(partial)  # no --prices: no money expected
