"""The eval harness under faults: a cancelled run leaves only complete, correct cache entries, and
API keys echoed by a provider never reach its outputs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

eval_mod = pytest.importorskip("selfroute.eval")

DOC = ("Grey Point lighthouse was kept by Mara Holt for thirty-one years. " * 30).strip()
FAKE_KEY = "sk-proj-EvalEchoKey0123456789abcdefXYZ"


def items(n: int) -> list[Any]:
    return [
        eval_mod.EvalItem(
            id=f"q{i}",
            question=f"Question number {i}: who kept Grey Point?",
            document=DOC,
            answers=("Mara Holt",),
            doc_id="grey-point",
        )
        for i in range(n)
    ]


def answer_for(prompt: str) -> str:
    """A deterministic, prompt-specific answer, so a misfiled cache entry is detectable."""
    return "A" + hashlib.sha256(prompt.encode()).hexdigest()[:12]


async def test_cancelled_eval_leaves_no_half_written_cache_entry(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        prompt = last_user_text(body)
        return Reply(answer_for(prompt), delay_s=0.05 + (hash(prompt) % 5) * 0.05)

    openai_server.responder = responder
    reader = eval_mod.ChatModelReader(chat_openai(openai_server))
    cache_path = tmp_path / "cache.sqlite"
    task = asyncio.create_task(
        eval_mod.aevaluate(items(12), reader=reader, cache=cache_path, concurrency=4)
    )
    deadline = time.monotonic() + 10
    while openai_server.calls < 8:
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    sent = openai_server.calls

    with sqlite3.connect(cache_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = conn.execute("SELECT prompt_sha, text, usage FROM answers").fetchall()
    assert 0 < len(rows) < sent  # the calls cut off by the cancel were not stored
    prompts = {
        hashlib.sha256(last_user_text(b).encode()).hexdigest(): b for b in openai_server.requests
    }
    for prompt_sha, text, usage in rows:
        assert prompt_sha in prompts  # only prompts that were really sent
        assert text == "A" + prompt_sha[:12]  # each entry holds its own prompt's answer
        assert json.loads(usage)["source"] == "provider"

    # A rerun completes, pays only for what was not stored, and answers every prompt correctly.
    openai_server.reset()
    summary = await eval_mod.aevaluate(items(12), reader=reader, cache=cache_path, concurrency=4)
    unique = {
        hashlib.sha256(last_user_text(b).encode()).hexdigest() for b in openai_server.requests
    }
    assert not unique & {r[0] for r in rows}  # nothing already stored was asked again
    for record in summary.records:
        assert record.error is None
        for call in record.calls:
            assert call.output.startswith("A")


async def _failing_eval(server: ScriptedOpenAIServer, out: Path) -> Any:
    """An eval where every call about item q0 fails with an error body echoing the key."""
    echo = Reply(
        f"Incorrect API key provided: {FAKE_KEY}. You can find your API key at ...", status=401
    )
    server.responder = lambda body: (
        echo if "Question number 0:" in last_user_text(body) else "Mara Holt"
    )
    reader = eval_mod.ChatModelReader(chat_openai(server, api_key=FAKE_KEY))
    summary = await eval_mod.aevaluate(
        items(4), reader=reader, cache=False, out=out, on_error="record", concurrency=1
    )
    assert any(r.error for r in summary.records)  # the failures were recorded
    return summary


async def test_key_echoed_by_provider_never_reaches_logs(
    openai_server: ScriptedOpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    with caplog.at_level("DEBUG"):  # openai, httpx, httpcore, langchain and selfroute loggers
        await _failing_eval(openai_server, tmp_path / "out")
    assert "401" in caplog.text and FAKE_KEY not in caplog.text


async def test_key_echoed_by_provider_never_reaches_eval_outputs(
    openai_server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    out = tmp_path / "out"
    summary = await _failing_eval(openai_server, out)
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "401" in written  # the error is reported ...
    assert FAKE_KEY not in written  # ... without the key
    assert FAKE_KEY not in repr(summary.records) and FAKE_KEY not in json.dumps(
        [r.error for r in summary.records]
    )
