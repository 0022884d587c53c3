"""End to end on the bundled SQuAD sample through real LangChain clients and loopback servers.

The scripted server behaves like a careful model: it answers with a gold answer when one appears in
the passage it was sent, writes "unanswerable" when the prompt asks for it, and otherwise says the
text does not mention it. Usage is reported by the server (prompt words + 7, so it cannot be
confused with a local count).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from pathlib import Path

import pytest

from selfroute.eval import (
    ChatModelReader,
    OracleReader,
    ResponseCache,
    aevaluate,
    evaluate,
    load_sample,
)
from selfroute.eval._readers import match_key
from selfroute.eval.cli import main
from tests.support._loopback import Reply, last_user_text
from tests.support.clients import chat_google, chat_openai

pytestmark = pytest.mark.integration

ITEMS = load_sample()[::10]  # 12 questions (6 answerable, 6 impossible) over the whole haystack
GOLD = {it.question: it.answers for it in ITEMS}


def careful_model(body: dict) -> Reply:
    prompt = last_user_text(body)
    question = re.search(r"Question: (.*)\nAnswer:", prompt)
    assert question is not None, prompt[-200:]
    passage = prompt[: question.start()]
    haystack = f" {match_key(passage)} "
    for gold in GOLD.get(question.group(1), ()):
        if f" {match_key(gold)} " in haystack:
            text = gold
            break
    else:
        text = "unanswerable" if '"unanswerable"' in prompt else "The text does not mention it."
    return Reply(text, prompt_tokens=len(prompt.split()) + 7, completion_tokens=3)


def lc_usage_on_server(server) -> int:
    """Input tokens the server reported for the whole-haystack (LC) prompts it answered."""
    prompts = [last_user_text(b) for b in server.requests]
    return sum(len(p.split()) + 7 for p in prompts if ITEMS[0].document in p)


def test_openai_client_end_to_end_then_free_rerun(openai_server, tmp_path: Path) -> None:
    openai_server.responder = careful_model
    reader = ChatModelReader(chat_openai(openai_server, temperature=0))
    cache = tmp_path / "cache.sqlite"
    summary = evaluate(ITEMS, reader=reader, ks=[5], cache=cache, out=tmp_path / "out")
    n = len(ITEMS)
    lc_fallbacks = summary.row("self_route", 5).lc_calls or 0
    # LC + RAG + Self-Route's first step per item; every fallback reused the LC answer
    assert openai_server.calls == summary.model_calls == 3 * n
    assert summary.row("self_route", 5).cached_calls == lc_fallbacks > 0
    oracle = evaluate(ITEMS, reader=OracleReader(), ks=[5], cache=False)
    for method in ("lc", "rag", "self_route"):
        assert summary.row(method, 5).score == oracle.row(method, 5).score
    assert (
        summary.row("self_route", 5).answerable_ratio
        == oracle.row("self_route", 5).answerable_ratio
    )
    for rec in summary.records:
        for call in rec.calls:
            assert call.usage.source == "provider"
            assert call.usage.output_tokens == 3
            assert call.model == "loopback-model"
    # provider usage, not a local count: prompt words + 7
    assert summary.row("lc").usage_source == "provider"
    assert summary.row("lc").input_tokens == lc_usage_on_server(openai_server)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 3 * n
    assert all(b["temperature"] == 0 for b in openai_server.requests)

    # a second run pays nothing
    before = openai_server.calls
    again = evaluate(ITEMS, reader=reader, ks=[5], cache=cache)
    assert openai_server.calls == before and again.model_calls == 0
    assert [r.score for r in again.rows] == [r.score for r in summary.rows]


def test_cli_against_an_openai_compatible_endpoint(openai_server, tmp_path: Path, capsys) -> None:
    openai_server.responder = careful_model
    data = tmp_path / "sample.jsonl"
    articles = {}
    for it in ITEMS[:4]:
        title = it.metadata["title"]
        articles.setdefault(title, {"title": title, "document": it.document, "questions": []})
        articles[title]["questions"].append(
            {
                "id": it.id,
                "question": it.question,
                "answers": list(it.answers),
                "is_impossible": it.unanswerable,
            }
        )
    data.write_text("".join(json.dumps(a) + "\n" for a in articles.values()))
    argv = [
        str(data),
        "--model",
        "loopback-model",
        "--base-url",
        openai_server.base_url,
        "--k",
        "1,5",
        "--out",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "c.sqlite"),
        "--prices",
        "loopback-model=1/2",
        "--no-progress",
        "--timeout",
        "10",
    ]
    assert main(argv) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| Self-Route (k=5) |" in report and "USD" in report
    assert "oracle" not in report.lower()
    calls = openai_server.calls
    assert calls > 0
    assert main([*argv[:-1], "10", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert "Dry run" in dry and "At most 0 input tokens" in dry  # everything is cached
    assert openai_server.calls == calls


async def test_interrupted_run_resumes_without_repeating_calls(openai_server, tmp_path) -> None:
    answered: list[str] = []
    hang_started = threading.Event()

    def first_run(body: dict) -> Reply:
        if len(answered) >= 7:
            hang_started.set()
            return Reply(kind="hang")
        answered.append(last_user_text(body))
        return careful_model(body)

    openai_server.responder = first_run
    cache = ResponseCache(tmp_path / "cache.sqlite")
    reader = ChatModelReader(chat_openai(openai_server, timeout=30))
    task = asyncio.ensure_future(
        aevaluate(ITEMS, reader=reader, ks=[5], cache=cache, concurrency=1)
    )
    assert await asyncio.to_thread(hang_started.wait, 20)
    task.cancel()  # what Ctrl-C does to the run
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(cache) == 7

    openai_server.responder = careful_model
    sent_before = len(openai_server.requests)
    summary = await aevaluate(ITEMS, reader=reader, ks=[5], cache=cache, concurrency=2)
    resent = [last_user_text(b) for b in openai_server.requests[sent_before:]]
    assert not set(resent) & set(answered)
    assert summary.model_calls == len(resent) == 3 * len(ITEMS) - 7
    assert summary.row("lc").errors == 0

    third = await aevaluate(ITEMS, reader=reader, ks=[5], cache=cache)
    assert third.model_calls == 0
    cache.close()


def test_gemini_client_reports_provider_usage(gemini_server, tmp_path: Path) -> None:
    gemini_server.responder = careful_model
    reader = ChatModelReader(chat_google(gemini_server, temperature=0))
    summary = evaluate(ITEMS[:3], reader=reader, ks=[5], cache=tmp_path / "c.sqlite")
    calls = [c for r in summary.records for c in r.calls]
    assert calls and all(c.usage.source == "provider" for c in calls)
    assert all(c.usage.output_tokens == 3 for c in calls)
    assert summary.row("lc").input_tokens == lc_usage_on_server(gemini_server)
    assert gemini_server.calls == summary.model_calls == 3 * 3


def structured_model_reply(body: dict) -> Reply:
    """The careful model, answering structured-verdict requests with the JSON object."""
    if "response_format" not in body:
        return careful_model(body)
    prompt = last_user_text(body)
    question = re.search(r"Question: (.*)$", prompt.strip())
    assert question is not None, prompt[-200:]
    haystack = f" {match_key(prompt[: question.start()])} "
    for gold in GOLD.get(question.group(1).strip(), ()):
        if f" {match_key(gold)} " in haystack:
            obj = {"answerable": True, "answer": gold}
            break
    else:
        obj = {"answerable": False, "answer": ""}
    return Reply(json.dumps(obj), prompt_tokens=len(prompt.split()) + 7, completion_tokens=9)


def test_structured_verdicts_with_a_real_client(openai_server, tmp_path: Path) -> None:
    from selfroute import RouteConfig

    openai_server.responder = structured_model_reply
    reader = ChatModelReader(chat_openai(openai_server, temperature=0))
    assert reader.supports_structured
    summary = evaluate(
        ITEMS,
        reader=reader,
        ks=[5],
        methods=["self_route"],
        config=RouteConfig(verdict="structured"),
        cache=tmp_path / "cache.sqlite",
    )
    schema_requests = [b for b in openai_server.requests if "response_format" in b]
    assert len(schema_requests) == len(ITEMS)  # every RAG step asked for the JSON schema
    assert schema_requests[0]["response_format"]["type"] == "json_schema"
    oracle = evaluate(ITEMS, reader=OracleReader(), ks=[5], methods=["self_route"], cache=False)
    row, ref = summary.row("self_route", 5), oracle.row("self_route", 5)
    assert (row.score, row.answerable_ratio) == (ref.score, ref.answerable_ratio)
    rag_calls = [c for r in summary.records for c in r.calls if c.stage.value == "rag"]
    assert all(c.structured and c.usage.source == "provider" for c in rag_calls)
