"""Embedding ahead (``selfroute.stores._ahead``): order, bounded in-flight batches, errors that
name the failing batch, cancellation of the batches not handed over; ``PendingVectors.wait_sent``
against the loopback server; the store helpers' use of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from selfroute import ConfigurationError
from selfroute.stores import EmbeddingChoice
from selfroute.stores._ahead import embed_ahead, ramp_batches
from selfroute.stores._errors import EmbeddingUnavailableError
from selfroute.stores._hosted import HostedEmbedder
from tests.support.openai_server import ScriptedOpenAIServer

MODEL = "openai:text-embedding-3-small"


class _Handle:
    def __init__(self, log: list[tuple[str, int]], n: int, texts: list[str], fail: bool) -> None:
        self.log, self.n, self.texts, self.fail = log, n, texts, fail
        self.cancelled = False
        self.sent_waits = 0

    def result(self) -> list[Any]:
        self.log.append(("result", self.n))
        if self.fail:
            raise EmbeddingUnavailableError("HTTP 500: boom")
        return [f"v({t})" for t in self.texts]

    def cancel(self) -> None:
        self.cancelled = True

    def wait_sent(self, timeout: float) -> bool:
        self.sent_waits += 1
        return True


class _Fake:
    """A ``submit`` that records the order of submissions and results."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.log: list[tuple[str, int]] = []
        self.handles: list[_Handle] = []
        self.fail_at = fail_at

    def __call__(self, texts: list[str]) -> _Handle:
        n = len(self.handles)
        self.log.append(("submit", n))
        handle = _Handle(self.log, n, texts, fail=n == self.fail_at)
        self.handles.append(handle)
        return handle

    def in_flight(self) -> int:
        """Batches submitted and not yet handed over (result not asked for)."""
        done = sum(1 for kind, _ in self.log if kind == "result")
        return len(self.handles) - done


def _batches(n: int) -> Iterator[tuple[int, list[str]]]:
    for i in range(n):
        yield i, [f"t{i}a", f"t{i}b"]


@pytest.mark.parametrize("ahead", [0, 1, 2, 5])
def test_batches_come_back_in_order_with_their_own_vectors(ahead: int) -> None:
    fake = _Fake()
    got = list(embed_ahead(fake, _batches(7), ahead=ahead))
    assert [item for item, _ in got] == list(range(7))
    for item, vectors in got:
        assert vectors == [f"v(t{item}a)", f"v(t{item}b)"]


@pytest.mark.parametrize("ahead", [0, 1, 2, 3])
def test_the_next_batches_are_in_flight_but_bounded_while_one_is_written(ahead: int) -> None:
    fake = _Fake()
    seen = []
    for item, _ in embed_ahead(fake, _batches(8), ahead=ahead):
        # while the caller writes batch `item`, exactly the next `ahead` ones are out (fewer at
        # the end), and none further
        seen.append(fake.in_flight())
        assert len(fake.handles) == min(8, item + 1 + ahead)
    assert max(seen) == ahead
    assert all(h.sent_waits >= (1 if ahead and h.n else 0) for h in fake.handles[1:])


def test_a_failed_batch_names_the_step_and_cancels_the_later_ones() -> None:
    fake = _Fake(fail_at=2)
    written = []
    with pytest.raises(EmbeddingUnavailableError) as info:
        for item, _ in embed_ahead(fake, _batches(6), ahead=2, step="index_documents"):
            written.append(item)
    assert written == [0, 1]  # nothing after the failed batch is handed over
    notes = getattr(info.value, "__notes__", [])
    assert notes == ["index_documents: embedding batch 3 (2 texts) failed"]
    later = fake.handles[3:]
    assert later and all(h.cancelled for h in later)


def test_an_error_in_the_callers_write_cancels_the_batches_not_handed_over() -> None:
    fake = _Fake()
    with pytest.raises(RuntimeError, match="disk full"):
        for item, _ in embed_ahead(fake, _batches(6), ahead=2):
            if item == 1:
                raise RuntimeError("disk full")
    assert [h.n for h in fake.handles if h.cancelled] == [2, 3]
    assert len(fake.handles) == 4  # nothing more was submitted


def test_stopping_early_cancels_too() -> None:
    fake = _Fake()
    for item, _ in embed_ahead(fake, _batches(6), ahead=2):
        if item == 0:
            break
    assert [h.n for h in fake.handles if h.cancelled] == [1, 2]


def test_ahead_is_validated() -> None:
    with pytest.raises(ConfigurationError):
        list(embed_ahead(_Fake(), _batches(1), ahead=-1))


def test_ramp_batches_start_small_and_cover_everything_once() -> None:
    items = list(range(1000))
    batches = ramp_batches(items, 256, first=32)
    assert [len(b) for b in batches] == [32, 64, 128, 256, 256, 256, 8]
    assert [x for b in batches for x in b] == items
    assert ramp_batches([], 256) == []
    assert [len(b) for b in ramp_batches(items[:10], 4, first=32)] == [4, 4, 2]


# -- against the loopback server ----------------------------------------------------------------


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ScriptedOpenAIServer() as srv:
        srv.embeddings.configure(dim=16, base_s=0.3, per_token_s=0.0, max_concurrent=64)
        yield srv


def test_wait_sent_returns_once_the_requests_are_on_the_wire(server: ScriptedOpenAIServer) -> None:
    choice = EmbeddingChoice("openai", "text-embedding-3-small", base_url=server.base_url)
    with HostedEmbedder(choice, concurrency=4) as embedder:
        start = time.perf_counter()
        pending = embedder.submit([f"text {i}" for i in range(8)])
        assert pending.wait_sent(timeout=5.0)
        sent = time.perf_counter() - start
        assert not any(p.done() for p in pending._plan.result())  # sent, not answered
        vectors = pending.result()
        assert sent < 0.25 < time.perf_counter() - start  # the server answers after 0.3 s
    assert np.allclose(vectors[3], server.embeddings.vector("text 3"), atol=1e-6)


def test_wait_sent_does_not_wait_for_requests_queued_behind_full_connections(
    server: ScriptedOpenAIServer,
) -> None:
    choice = EmbeddingChoice("openai", "text-embedding-3-small", base_url=server.base_url)
    with HostedEmbedder(choice, concurrency=2) as embedder:
        first = embedder.submit(["a", "b"])
        assert first.wait_sent(timeout=5.0)
        start = time.perf_counter()
        second = embedder.submit(["c", "d"])  # both connections are busy for 0.3 s
        assert second.wait_sent(timeout=5.0)
        assert time.perf_counter() - start < 0.2
        assert len(first.result()) == len(second.result()) == 2


def test_the_langchain_helper_reports_the_failing_step(
    server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    from langchain_chroma import Chroma
    from langchain_core.documents import Document

    from langchain_selfroute import HostedEmbeddings, index_documents

    server.embeddings.configure(base_s=0.0)
    server.embeddings.fail_next(50, status=400, retry_after=None)
    emb = HostedEmbeddings(MODEL, base_url=server.base_url, concurrency=2)
    store = Chroma("hosted", embedding_function=emb, persist_directory=str(tmp_path / "c"))
    text = " ".join(f"w{i}" for i in range(3000))
    with pytest.raises(EmbeddingUnavailableError) as info:
        index_documents(store, [Document(page_content=text, metadata={"s": "a"})], ids=["a"])
    assert any("index_documents: embedding batch 1" in n for n in info.value.__notes__)
    assert store.get()["ids"] == []


def test_the_llamaindex_helper_embeds_ahead_in_batches(
    server: ScriptedOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llama_index.core import Document

    import llamaindex_selfroute._store as store_module
    from llamaindex_selfroute import HostedEmbedding, build_index

    server.embeddings.configure(base_s=0.0)
    monkeypatch.setattr(store_module, "_INSERT_BATCH", 4)
    emb = HostedEmbedding(MODEL, base_url=server.base_url, concurrency=2)
    text = " ".join(f"w{i}" for i in range(300 * 9 + 10))  # 10 chunks: batches of 4, 4, 2
    index = build_index([Document(text=text, id_="a")], embed_model=emb, persist_dir=tmp_path)
    got = index.vector_store._collection.get(include=["embeddings", "documents"])  # type: ignore[attr-defined]
    assert len(got["ids"]) == 10
    for doc, vector in zip(got["documents"], got["embeddings"], strict=True):
        assert np.allclose(vector, server.embeddings.vector(doc), atol=1e-6)
    server.embeddings.fail_next(50, status=400, retry_after=None)
    with pytest.raises(EmbeddingUnavailableError) as info:
        build_index(
            [Document(text=text.replace("w1 ", "x1 "), id_="b")],
            embed_model=emb,
            persist_dir=tmp_path,
        )
    assert any("build_index: embedding batch 1" in n for n in info.value.__notes__)
