"""``selfroute index --embedding openai`` against a loopback ``/v1/embeddings`` server.

The real command, in a subprocess, indexes the vendored documents through the loopback server
(provider-like latency, a 429 with ``Retry-After`` injected): the server sees requests no more
than ``--embedding-concurrency`` at a time and the retry after the wait it asked for, the
summary and the progress show the embedding throughput, and the store is complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.cli.scripted import copy_docs
from tests.integration.cli.test_cli_e2e import _env, assert_complete, cli, stats
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

MODEL = "openai:text-embedding-3-small"


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        srv.embeddings.configure(dim=32, base_s=0.04, per_token_s=4e-6, max_concurrent=16)
        yield srv


def test_index_through_a_hosted_embedding(server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    docs = copy_docs(tmp_path / "docs")
    (docs / "more.txt").write_text(
        " ".join(f"term{i % 811} filler" for i in range(12_000)), encoding="utf-8"
    )
    args = ["--embedding", MODEL, "--embedding-base-url", server.base_url]
    (tmp_path / "empty").mkdir()
    created = cli("index", "empty", *args, cwd=tmp_path)  # the collection and its check call
    assert "store .selfroute" in created.stdout, created.stderr
    server.embeddings.reset()
    server.embeddings.fail_next(1, status=429, retry_after="0.5")
    done = cli(
        "index", "docs", *args, "--embedding-concurrency", "2", "--progress", "always",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    calls = server.embeddings.calls
    assert server.embeddings.max_in_flight <= 2 and len(calls) > 3
    refused = calls[0]
    retry = next(c for c in calls[1:] if c.texts == refused.texts)  # the same request again
    assert refused.status == 429 and retry.status == 200
    assert retry.arrived - refused.answered >= 0.5  # the retry came after the wait asked
    summary = [line for line in done.stdout.splitlines() if line.startswith("embedded ")]
    assert len(summary) == 1 and "chunks/s" in summary[0] and "tokens/s" in summary[0]
    assert "1 retried" in done.stdout
    assert "embedding" in done.stderr and "tokens/s" in done.stderr  # the progress bar
    data = stats(tmp_path)
    assert data["embedding"] == MODEL
    assert data["chunks"] == sum(len(c.texts) for c in calls if c.status == 200)
    assert_complete(data, docs)
    # a rerun embeds nothing; --json carries the embedding figures of a run that embedded
    again = cli("index", "docs", "--json", *args, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["report"]["embedding"] is None
    assert len(server.embeddings.calls) == len(calls)


def test_a_bad_concurrency_is_refused(tmp_path: Path) -> None:
    copy_docs(tmp_path / "docs")
    done = cli("index", "docs", "--embedding", "offline", "--embedding-concurrency", "0",
               cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2
    assert "--embedding-concurrency: invalid embedding_concurrency" in done.stderr
    env = {**_env(), "SELFROUTE_EMBEDDING_CONCURRENCY": "many"}
    done = cli("index", "docs", "--embedding", "offline", cwd=tmp_path, env=env)
    assert done.returncode == 2 and "SELFROUTE_EMBEDDING_CONCURRENCY" in done.stderr


def test_an_unreachable_provider_fails_clearly(tmp_path: Path) -> None:
    copy_docs(tmp_path / "docs")
    with ScriptedOpenAIServer() as srv:
        srv.embeddings.configure(dim=32, base_s=0.0)
        done = cli("index", "docs", "--embedding", MODEL, "--embedding-base-url", srv.base_url,
                   cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, done.stderr
        srv.embeddings.fail_next(1000, status=503, retry_after="0")
        (tmp_path / "docs" / "new.txt").write_text("a new document " * 50, encoding="utf-8")
        failed = cli("index", "docs", "--embedding", MODEL, "--embedding-base-url",
                     srv.base_url, cwd=tmp_path)  # fmt: skip
    assert failed.returncode != 0
    assert "indexing: embedding" in failed.stderr and "after 6 attempts" in failed.stderr
    assert "HTTP 503" in failed.stderr and "Traceback" not in failed.stderr
    data = stats(tmp_path)
    assert data["documents"] == 4 and data["orphan_chunks"] == 0  # the failed run wrote nothing
