"""Kill the process running a batch job (SIGKILL) at each phase boundary, mid-poll and between
the provider creating a batch and the id reaching the job file; rerun the same command: it
resumes, submits nothing twice, loses nothing, and the results equal the online run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.batch.corpus import inputs, respond
from tests.integration.batch.corpus import online as online_results
from tests.support.gemini_batch_server import GeminiBatchServer
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
COUNT = 40


@pytest.fixture(scope="module")
def online() -> dict[str, Any]:
    from langchain_selfroute import SelfRoute
    from tests.support.clients import chat_openai

    with OpenAIBatchServer(respond) as srv:
        route = SelfRoute(
            llm=chat_openai(srv),
            long_context_llm=chat_openai(srv, model="gpt-4o"),
            k=2,
            chunk_words=60,
        )
        return online_results(route, inputs(COUNT))


def _start(
    srv: Any, tmp: Path, provider: str, kill_at: str | None, *extra: str
) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "tests.integration.batch.kill_runner",
        "--base-url",
        srv.base_url,
        "--job",
        str(tmp / "job.json"),
        "--out",
        str(tmp / "out.jsonl"),
        "--provider",
        provider,
        "--count",
        str(COUNT),
    ]
    if kill_at:
        cmd += ["--kill-at", kill_at]
    cmd += extra
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stderr=subprocess.PIPE)


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=240)
    return proc.returncode, err.decode(errors="replace")


KILL_POINTS = [
    "submitting:1",  # phase 1 recorded as being submitted, not yet sent
    "submitted:1",  # phase 1 sent and its id saved
    "polled:2",  # mid-poll, phase 1
    "collected:1",  # phase boundary: phase 1 answers saved, phase 2 not submitted
    "submitting:2",  # phase 2 recorded, not sent
    "polled:5",  # mid-poll, phase 2
]


@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_sigkill_then_rerun_resumes_openai(
    kill_at: str, online: dict[str, Any], tmp_path: Path
) -> None:
    with OpenAIBatchServer(respond) as srv:
        code, err = _finish(_start(srv, tmp_path, "openai", kill_at))
        assert code == -signal.SIGKILL, err
        code, err = _finish(_start(srv, tmp_path, "openai", None))
        assert code == 0, err
        assert len(srv.created) == 2, srv.created  # nothing submitted twice
        ids = [line["custom_id"] for b in srv.created for line in srv.job_requests[b]]
        assert len(ids) == len(set(ids))  # no request in two batches
        assert len(srv.batch_bodies) == len(ids)  # every request answered exactly once
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"q{n}" for n in range(COUNT)]
    assert {r["id"]: r["result"] for r in rows} == online


@pytest.mark.parametrize("phase", [1, 2])
def test_sigkill_between_create_and_recording_the_id(
    phase: int, online: dict[str, Any], tmp_path: Path
) -> None:
    with OpenAIBatchServer(respond) as srv:
        proc: subprocess.Popen[bytes] | None = None
        creations = {"n": 0}

        def kill_client(batch: dict[str, Any]) -> None:
            creations["n"] += 1
            if creations["n"] == phase and proc is not None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)  # dead before it can read the answer

        srv.on_create = kill_client
        proc = _start(srv, tmp_path, "openai", None)
        code, err = _finish(proc)
        assert code == -signal.SIGKILL, err
        srv.on_create = None
        code, err = _finish(_start(srv, tmp_path, "openai", None))
        assert code == 0, err
        assert len(srv.created) == 2, srv.created  # the orphan batch was found, not resubmitted
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert {r["id"]: r["result"] for r in rows} == online


def test_sigkill_mid_poll_gemini(tmp_path: Path) -> None:
    with GeminiBatchServer(respond, polls_per_state=2) as srv:
        code, err = _finish(_start(srv, tmp_path, "gemini", "polled:3"))
        assert code == -signal.SIGKILL, err
        code, err = _finish(_start(srv, tmp_path, "gemini", None))
        assert code == 0, err
        assert len(srv.created) == 2
        keys = [r["metadata"]["key"] for j in srv.created for r in srv.job_requests[j]]
        assert len(keys) == len(set(keys)) == len(srv.batch_bodies)
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == COUNT and all(r["result"] is not None for r in rows)


@pytest.mark.parametrize("kill_at", ["polled:2", "submitted:2"])
def test_traced_job_killed_and_rerun_emits_one_complete_trace_per_question(
    kill_at: str, tmp_path: Path
) -> None:
    pytest.importorskip("opentelemetry.sdk")
    spans = tmp_path / "spans.jsonl"
    with OpenAIBatchServer(respond) as srv:
        code, err = _finish(_start(srv, tmp_path, "openai", kill_at, "--spans", str(spans)))
        assert code == -signal.SIGKILL, err
        before = spans.read_text().splitlines() if spans.exists() else []
        code, err = _finish(_start(srv, tmp_path, "openai", None, "--spans", str(spans)))
        assert code == 0, err
        code, err = _finish(_start(srv, tmp_path, "openai", None, "--spans", str(spans)))
        assert code == 0, err  # a rerun answered from the job file emits nothing
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    roots = [r for r in rows if r["name"] == "SelfRoute"]
    questions = {item["question"] for item in inputs(COUNT)}
    assert sorted(r["question"] for r in roots) == sorted(questions)  # each once
    for root in roots:
        kids = [r for r in rows if r["parent"] == root["span"] and r["trace"] == root["trace"]]
        names = [k["name"] for k in kids]
        assert "selfroute.retrieve" in names and "selfroute.rag" in names
        assert {k["pid"] for k in kids} == {root["pid"]}  # emitted by one process
    assert all(r["batch"] is True for r in rows)
    root_ids = {(r["trace"], r["span"]) for r in roots}
    children = [r for r in rows if r["name"] != "SelfRoute"]
    assert all((r["trace"], r["parent"]) in root_ids for r in children)  # no orphan span
    pids = {r["pid"] for r in rows}
    if kill_at == "polled:2":  # killed during phase 1: nothing had finished
        assert before == [] and len(pids) == 1
    else:  # killed in phase 2: the RAG answers finished in the first process
        assert before and len(pids) == 2
