"""Hosted embeddings while indexing: token-sized requests, bounded concurrency, retries, order.

Every test talks to the loopback servers' embedding endpoints (``tests/support/_embeddings.py``)
and asserts on what the server recorded: request sizes, requests in flight, attempts, and when
a retry arrived relative to the reply that asked for the wait (the server's own clock).
"""

from __future__ import annotations

import email.utils
import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from selfroute import ConfigurationError, chunk_text
from selfroute._tokens import default_token_counter
from selfroute.stores import DocumentStore, EmbeddingChoice, HybridRetriever, read_document
from selfroute.stores._errors import EmbeddingUnavailableError
from selfroute.stores._hosted import (
    GEMINI_LIMITS,
    OPENAI_LIMITS,
    HostedEmbedder,
    plan_requests,
    retry_delay,
    token_bound,
)
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import ScriptedOpenAIServer

DIM = 16
KEY = "sk-test-abcdefghijklmnopqrstuvwx"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    """An OpenAI-compatible server with fast, provider-shaped embeddings (no key in the env)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ScriptedOpenAIServer() as srv:
        srv.embeddings.configure(dim=DIM, base_s=0.01, per_token_s=0.0, max_concurrent=64)
        yield srv


def _embedder(srv: ScriptedOpenAIServer, **kwargs: object) -> HostedEmbedder:
    kwargs.setdefault("backoff_s", 0.01)
    choice = EmbeddingChoice("openai", "text-embedding-3-small", base_url=srv.base_url)
    return HostedEmbedder(choice, **kwargs)  # type: ignore[arg-type]


# -- request sizes -----------------------------------------------------------------------------


def test_requests_stay_within_the_providers_limits_in_order() -> None:
    counts = [7000] * 100 + [1] * 5000
    for limits in (OPENAI_LIMITS, GEMINI_LIMITS):
        slices = plan_requests(counts, limits, spread=1)
        assert slices[0][0] == 0 and slices[-1][1] == len(counts)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(slices))  # contiguous
        for start, end in slices:
            assert end - start <= limits.max_inputs
            if limits.max_request_tokens is not None:
                assert sum(counts[start:end]) <= limits.max_request_tokens
    assert max(b - a for a, b in plan_requests([1] * 5000, GEMINI_LIMITS)) == 100
    assert max(b - a for a, b in plan_requests([1] * 5000, OPENAI_LIMITS)) == 2048


def test_work_is_spread_over_the_requests_in_flight() -> None:
    slices = plan_requests([400] * 1600, OPENAI_LIMITS, spread=16)
    assert 16 <= len(slices) <= 17
    assert max(b - a for a, b in slices) - min(b - a for a, b in slices[:-1]) <= 1
    # little work is not cut into tiny requests
    assert len(plan_requests([400] * 10, OPENAI_LIMITS, spread=16)) == 1


@pytest.mark.parametrize(
    "text", ["plain ascii words " * 50, "naïve café Zürich " * 40, "数据库索引 " * 90, "🙂🚀" * 70]
)
def test_the_token_bound_is_never_below_the_count(text: str) -> None:
    assert token_bound(text) >= default_token_counter().count(text)


def test_an_input_over_the_limit_is_cut_to_it(server: ScriptedOpenAIServer) -> None:
    long = "tokens of a very long paragraph " * 3000  # about 18k tokens
    with _embedder(server) as emb:
        vectors = emb.embed(["short text", long])
        stats = emb.stats()
    assert len(vectors) == 2 and stats.truncated == 1
    sent = server.embeddings.calls[0].texts[1]
    assert default_token_counter().count(sent) <= OPENAI_LIMITS.max_input_tokens
    assert long.startswith(sent)


# -- concurrency --------------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 3])
def test_requests_in_flight_never_exceed_the_setting(
    server: ScriptedOpenAIServer, concurrency: int
) -> None:
    server.embeddings.configure(base_s=0.05)
    with _embedder(server, concurrency=concurrency) as emb:
        pending = [emb.submit([f"batch {i} a", f"batch {i} b"]) for i in range(12)]  # 12 requests
        vectors = [v for p in pending for v in p.result()]
    assert len(vectors) == 24 and len(server.embeddings.calls) == 12
    assert server.embeddings.max_in_flight <= concurrency
    if concurrency > 1:
        assert server.embeddings.max_in_flight > 1  # they did go out together


def test_vectors_come_back_in_input_order_though_replies_do_not(
    server: ScriptedOpenAIServer,
) -> None:
    server.embeddings.configure(base_s=0.0, per_token_s=2e-6)
    texts = [("long " * 6000 if i == 0 else "short " * 16) + f"text {i}" for i in range(300)]
    # the request with the first text is answered after one that arrived later, however
    # loaded the machine is
    server.embeddings.hold_back = lambda batch: texts[0] in batch
    with _embedder(server, concurrency=8) as emb:
        vectors = emb.embed(texts)
    answered = sorted(server.embeddings.calls, key=lambda c: c.answered)
    assert answered != server.embeddings.calls  # replies did come back out of order
    for text, vector in zip(texts, vectors, strict=True):
        assert np.allclose(vector, server.embeddings.vector(text), atol=1e-6)


# -- retries ------------------------------------------------------------------------------------


def test_a_429_is_retried_after_the_retry_after_seconds(server: ScriptedOpenAIServer) -> None:
    server.embeddings.fail_next(2, status=429, retry_after="0.3")
    with _embedder(server) as emb:
        vectors = emb.embed(["one", "two"])
        stats = emb.stats()
    calls = server.embeddings.calls
    assert [c.status for c in calls] == [429, 429, 200] and stats.retries == 2
    assert len(vectors) == 2
    for refused, retry in itertools.pairwise(calls):
        assert retry.arrived - refused.answered >= 0.3  # the server saw it after it asked


def test_an_http_date_retry_after_is_honoured(server: ScriptedOpenAIServer) -> None:
    when = email.utils.formatdate(time.time() + 2, usegmt=True)  # whole seconds
    server.embeddings.fail_next(1, status=429, retry_after=when)
    with _embedder(server) as emb:
        emb.embed(["one"])
    refused, retry = server.embeddings.calls
    assert (refused.status, retry.status) == (429, 200)
    assert retry.arrived - refused.answered >= 0.9  # at least what is left of 2 s, rounded down
    assert retry_delay({"Retry-After": "Wed, 21 Oct 2015 07:28:05 GMT"}, 0, backoff_s=1.0,
                       now=email.utils.parsedate_to_datetime(
                           "Wed, 21 Oct 2015 07:28:00 GMT").timestamp()) == (5.0, True)  # fmt: skip
    assert retry_delay({"retry-after-ms": "250"}, 3, backoff_s=1.0) == (0.25, True)
    wait, asked = retry_delay({}, 2, backoff_s=1.0)
    assert not asked and 2.0 <= wait <= 4.0


def test_a_5xx_is_retried_with_backoff(server: ScriptedOpenAIServer) -> None:
    server.embeddings.fail_next(2, status=503, retry_after=None)
    with _embedder(server) as emb:
        assert len(emb.embed(["one"])) == 1
        assert emb.stats().retries == 2
    assert [c.status for c in server.embeddings.calls] == [503, 503, 200]


def test_attempts_are_bounded_and_the_error_names_the_step(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.embeddings.fail_next(10, status=429, retry_after="0")
    with _embedder(server, max_attempts=3) as emb, pytest.raises(EmbeddingUnavailableError) as info:
        emb.embed(["one", "two"])
    message = str(info.value)
    assert len(server.embeddings.calls) == 3
    assert message.startswith("indexing: embedding 2 texts with openai:text-embedding-3-small")
    assert "after 3 attempts" in message and "HTTP 429" in message
    assert "--embedding-concurrency" in message and KEY not in message
    assert server.embeddings.calls[0].path == "/v1/embeddings"


def test_a_bad_request_fails_at_once_with_the_key_masked(
    server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.embeddings.fail_next(1, status=401, retry_after=None, message=f"bad key {KEY}")
    with _embedder(server) as emb, pytest.raises(EmbeddingUnavailableError) as info:
        emb.embed(["one"])
    assert len(server.embeddings.calls) == 1
    assert "HTTP 401" in str(info.value) and KEY not in str(info.value)
    assert "after" not in str(info.value).split("failed")[1].split(":")[0]


def test_the_concurrency_setting_is_validated(tmp_path: Path) -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ConfigurationError, match="embedding_concurrency must be an integer"):
            DocumentStore(tmp_path / "s", embedding="offline", embedding_concurrency=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="concurrency must be an integer >= 1"):
        HostedEmbedder(EmbeddingChoice("openai", base_url="http://127.0.0.1:9/v1"), concurrency=0)


# -- through the store ---------------------------------------------------------------------------


def _stored_vectors(store: DocumentStore) -> dict[str, list[float]]:
    chunks, _ = store._conn.open()
    got = chunks.get(include=["embeddings"])
    return {i: list(v) for i, v in zip(got["ids"], got["embeddings"], strict=True)}


def test_the_store_gets_each_chunk_its_own_vector(
    server: ScriptedOpenAIServer, docs: Path, tmp_path: Path
) -> None:
    server.embeddings.configure(base_s=0.0, per_token_s=2e-5)
    store = DocumentStore(
        tmp_path / "store",
        embedding="openai:text-embedding-3-small",
        embedding_base_url=server.base_url,
        embedding_concurrency=4,
    )
    report = store.index([docs])
    assert report.embedding is not None and report.embedding["inputs"] == report.chunks
    assert report.embedding["tokens"] > 0 and report.embedding["chunks_per_s"] > 0
    stored = _stored_vectors(store)
    expected = {}
    for path in docs.iterdir():
        doc = read_document(path)
        for c in chunk_text(doc.text, doc_id=doc.doc_id):
            expected[c.chunk_id] = server.embeddings.vector(c.text)
    assert set(stored) == set(expected)
    for chunk_id, vector in expected.items():
        assert np.allclose(stored[chunk_id], vector, atol=1e-6), chunk_id
    # queries go through the same client and find the chunks
    hits = HybridRetriever(store, mode="dense", k=1).retrieve("Ghost of Marley chains")
    assert hits and server.embeddings.texts[-1] == "Ghost of Marley chains"
    calls = len(server.embeddings.calls)
    assert store.index([docs]).embedding is None  # nothing new: no request
    assert len(server.embeddings.calls) == calls


def test_a_failed_embedding_writes_nothing(
    server: ScriptedOpenAIServer, docs: Path, tmp_path: Path
) -> None:
    def store() -> DocumentStore:
        return DocumentStore(
            tmp_path / "store",
            embedding="openai:text-embedding-3-small",
            embedding_base_url=server.base_url,
        )

    store().index([])  # the collection exists; its first write fails below
    server.embeddings.fail_next(100, status=400, retry_after=None)
    with pytest.raises(EmbeddingUnavailableError, match="HTTP 400"):
        store().index([docs])
    server.embeddings.reset()
    assert store().stats().chunks == 0 and store().stats().documents == 0
    report = store().index([docs])
    assert len(report.added) == 4 and store().stats().orphan_chunks == 0


def test_gemini_batches_hold_at_most_100_texts(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_doc = docs / "long.txt"
    long_doc.write_text(" ".join(f"word{i % 997}" for i in range(300 * 260)), encoding="utf-8")
    with ScriptedGeminiServer() as srv:
        srv.embeddings.configure(dim=DIM, base_s=0.0, per_token_s=0.0)
        monkeypatch.setenv("GOOGLE_API_KEY", "gk-test-0123456789abcdef")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", srv.root_url)
        store = DocumentStore(
            tmp_path / "store", embedding="google:gemini-embedding-001", embedding_concurrency=1
        )
        report = store.index([docs])
        calls = srv.embeddings.calls
    assert report.chunks > 260 and sum(len(c.texts) for c in calls) == report.chunks + 1
    assert max(len(c.texts) for c in calls) == 100  # the check call is the "+ 1"
    assert all(c.path.endswith("/models/gemini-embedding-001:batchEmbedContents") for c in calls)
    assert srv.embeddings.max_in_flight == 1


def test_closing_on_an_error_drops_the_waiting_requests(server: ScriptedOpenAIServer) -> None:
    server.embeddings.configure(base_s=0.3)
    emb = _embedder(server, concurrency=1)
    pending = [emb.submit([f"text {i}"]) for i in range(20)]
    time.sleep(0.1)  # the first request is in flight
    emb.close(cancel=True)
    assert len(server.embeddings.calls) <= 2  # the 18 or more still queued never went out
    with pytest.raises(BaseException):  # noqa: B017 - cancelled or failed, never served
        pending[-1].result()
