"""The fast reader (chromadb's Rust bindings, without the ``chromadb`` package) against the
``chromadb`` client on the same store: the same records, distances and retrieval results, and a
fallback to the client whenever the reader cannot be trusted."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore, HybridRetriever
from selfroute.stores import _fastread as fastread
from selfroute.stores._embedding import (
    EmbeddingChoice,
    create_embedding_function,
    embed_documents,
    embed_query,
)

MakeStore = Callable[..., DocumentStore]
QUESTIONS = (
    "Who proclaimed the oil embargo in October 1973?",
    "What did Scrooge say about Christmas?",
    "How are packets routed in a packet-switched network?",
    "semantically conditioned LSTM dialogue act",
    "zzzz qqqq",  # nothing matches lexically
)

try:
    import chromadb_rust_bindings
except ImportError:  # pragma: no cover - chromadb is in the dev install
    chromadb_rust_bindings = None

TESTED = fastread.installed_chromadb(getattr(chromadb_rust_bindings, "__file__", None))
needs_tested = pytest.mark.skipif(
    TESTED not in fastread.TESTED_CHROMADB,
    reason=f"chromadb {TESTED} is not one the fast reader was tested with (it falls back)",
)


@pytest.fixture
def indexed(docs: Path, tmp_path: Path) -> Path:
    store = tmp_path / "store"
    DocumentStore(store, embedding="offline").index([docs])
    return store


def _pair(path: Path, **kwargs: Any) -> tuple[DocumentStore, DocumentStore]:
    fast = DocumentStore(path, fast_reads=True, **kwargs)
    slow = DocumentStore(path, **kwargs)
    fast.embedding  # noqa: B018 - opens both
    slow.embedding  # noqa: B018
    return fast, slow


def _records(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("ids", "documents", "metadatas", "distances", "embeddings", "uris", "data")
    return {k: result.get(k) for k in keys}


@needs_tested
def test_the_reader_opens_without_the_chromadb_client(indexed: Path) -> None:
    fast, slow = _pair(indexed)
    assert fast._conn.reads_fast and not slow._conn.reads_fast
    assert type(fast._conn.client(create=False)).__name__ == "ReadClient"


@needs_tested
def test_collections_and_gets_match_the_chromadb_client(indexed: Path) -> None:
    fast, slow = _pair(indexed)
    (f_chunks, f_docs), (s_chunks, s_docs) = fast._open(), slow._open()
    assert (f_chunks.name, f_docs.name) == (s_chunks.name, s_docs.name)
    assert f_chunks.metadata == s_chunks.metadata and f_docs.metadata == s_docs.metadata
    assert str(f_chunks.id) == str(s_chunks.id)
    assert f_chunks.count() == s_chunks.count() > 0 and f_docs.count() == s_docs.count() > 0
    f_names = fast._conn.client(create=False).list_collections()
    assert sorted(f_names) == sorted(
        c.name for c in slow._conn.client(create=False).list_collections()
    )
    for include in (["metadatas", "documents"], ["metadatas"], ["documents"], []):
        for limit, offset in ((None, None), (5, 0), (5, 10), (100, 3)):
            got = f_chunks.get(include=list(include), limit=limit, offset=offset)
            want = s_chunks.get(include=list(include), limit=limit, offset=offset)
            assert _records(got) == _records(want)
        assert _records(f_docs.get(include=list(include))) == _records(
            s_docs.get(include=list(include))
        )
    doc_ids = sorted(slow.committed_ids())
    chunk_ids = [f"{d}:0" for d in doc_ids] + [f"{doc_ids[0]}:1", "no-such:0"]
    for include in (["metadatas", "documents"], []):
        assert _records(f_docs.get(ids=doc_ids[:3], include=include)) == _records(
            s_docs.get(ids=doc_ids[:3], include=include)
        )
        assert _records(f_chunks.get(ids=chunk_ids, include=include)) == _records(
            s_chunks.get(ids=chunk_ids, include=include)
        )
    where = {"doc_id": {"$in": doc_ids[:2]}}
    assert _records(f_chunks.get(where=where, include=["documents"])) == _records(
        s_chunks.get(where=where, include=["documents"])
    )


@needs_tested
def test_dense_queries_match_the_chromadb_client(indexed: Path) -> None:
    fast, slow = _pair(indexed)
    (f_chunks, _), (s_chunks, _) = fast._open(), slow._open()
    choice = fast.embedding
    for question in QUESTIONS:
        vector = embed_query(fast._conn.embedding_function(), choice, question)
        assert vector == embed_query(slow._conn.embedding_function(), choice, question)
        for n in (1, 5, 20, 500):  # 500: more than the store holds
            include = ["metadatas", "documents", "distances"]
            got = f_chunks.query(query_embeddings=[vector], n_results=n, include=include)
            want = s_chunks.query(query_embeddings=[vector], n_results=n, include=include)
            assert _records(got) == _records(want)
        assert _records(f_chunks.query(query_embeddings=[vector], n_results=3, include=[])) == (
            _records(s_chunks.query(query_embeddings=[vector], n_results=3, include=[]))
        )


@needs_tested
def test_retrieval_and_long_context_match_the_chromadb_client(indexed: Path) -> None:
    fast, slow = _pair(indexed)
    for mode in ("hybrid", "dense", "bm25"):
        for question in QUESTIONS:
            f = HybridRetriever(fast, mode=mode, k=5)
            s = HybridRetriever(slow, mode=mode, k=5)
            passages = f.retrieve(question)
            assert passages == s.retrieve(question), (mode, question)
            assert f.long_context(passages) == s.long_context(passages)
    assert fast.committed_ids() == slow.committed_ids()
    assert fast.document_count() == slow.document_count()
    ids = slow.committed_ids()
    assert fast.get_documents(ids) == slow.get_documents(ids)
    chunk_ids = [f"{d}:0" for d in ids]
    assert fast.get_chunks(chunk_ids) == slow.get_chunks(chunk_ids)


def test_the_offline_query_vector_is_the_chroma_functions(indexed: Path) -> None:
    choice = EmbeddingChoice("offline")
    chroma = create_embedding_function(choice)
    ours = fastread.OfflineQueryEmbedding()
    for question in QUESTIONS:
        assert embed_query(ours, choice, question) == embed_query(chroma, choice, question)
    texts = [*QUESTIONS, "", "Ünïcode — and 42 numbers", "word " * 400]
    assert embed_documents(ours, choice, texts) == embed_documents(chroma, choice, texts)


@needs_tested
def test_a_store_with_uncommitted_chunks_reads_the_same(indexed: Path, docs: Path) -> None:
    # a killed index run leaves chunks without their document record: both clients see them,
    # and the retriever filters them the same way
    writer = DocumentStore(indexed)
    chunks, _ = writer._open()
    meta = dict(chunks.get(ids=[f"{writer.committed_ids()[0]}:0"])["metadatas"][0])
    meta["doc_id"] = "0123456789abcdef"
    vector = embed_query(writer._conn.embedding_function(), writer.embedding, QUESTIONS[0])
    chunks.add(
        ids=["0123456789abcdef:0"],
        embeddings=[vector],
        metadatas=[meta],
        documents=[
            "The members of OAPEC proclaimed an oil embargo in October 1973 (an orphan chunk)."
        ],
    )
    writer._conn.journal_path.parent.mkdir(parents=True, exist_ok=True)
    writer._conn.journal_path.write_text("{}", encoding="utf-8")  # an index run in progress
    fast, slow = _pair(indexed)
    assert not fast.is_clean()
    for mode in ("hybrid", "dense"):
        f = HybridRetriever(fast, mode=mode, k=5).retrieve(QUESTIONS[0])
        assert f == HybridRetriever(slow, mode=mode, k=5).retrieve(QUESTIONS[0])
        assert all(p.doc_id != "0123456789abcdef" for p in f)


@needs_tested
def test_a_later_index_run_is_seen_by_a_fast_reader(
    indexed: Path, docs: Path, tmp_path: Path
) -> None:
    fast = DocumentStore(indexed, fast_reads=True)
    before = fast.document_count()
    question = "What is the passkey of the vault?"
    assert all("4417" not in p.text for p in HybridRetriever(fast, k=3).retrieve(question))
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "vault.txt").write_text("The passkey of the vault is 4417-alpha.", encoding="utf-8")
    DocumentStore(indexed).index([extra])
    found = HybridRetriever(fast, k=3).retrieve(question)
    assert fast._conn.reads_fast and fast.document_count() == before + 1
    assert any("4417" in p.text for p in found)


@needs_tested
def test_a_write_moves_to_the_chromadb_client(indexed: Path, tmp_path: Path) -> None:
    store = DocumentStore(indexed, fast_reads=True)
    assert store.document_count() > 0 and store._conn.reads_fast
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "note.txt").write_text("A note about the harbour lights of Dover.", encoding="utf-8")
    report = store.index([extra])
    assert len(report.added) == 1 and not store._conn.reads_fast
    assert any("Dover" in p.text for p in HybridRetriever(store, k=3).retrieve("harbour lights"))


# -- falling back to the chromadb client ------------------------------------------------------
def _fell_back(path: Path, caplog: pytest.LogCaptureFixture, reason: str) -> DocumentStore:
    with caplog.at_level(logging.DEBUG, logger="selfroute"):
        fast, slow = _pair(path)
    assert not fast._conn.reads_fast
    assert any(reason in r.getMessage() for r in caplog.records), caplog.text
    for question in QUESTIONS[:2]:
        assert HybridRetriever(fast, k=5).retrieve(question) == HybridRetriever(slow, k=5).retrieve(
            question
        )
    return fast


def test_a_changed_bindings_signature_falls_back(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if chromadb_rust_bindings is None:  # pragma: no cover
        pytest.skip("no chromadb_rust_bindings")
    monkeypatch.setattr(fastread, "TESTED_CHROMADB", frozenset({TESTED}))

    class Renamed:  # a later version that renamed a keyword
        def __init__(self, *, allow_reset: bool, sqlite_config: Any, persist_path: str) -> None:
            raise AssertionError("not reached")

    monkeypatch.setattr(chromadb_rust_bindings, "Bindings", Renamed)
    _fell_back(indexed, caplog, "TypeError")


def test_bindings_without_an_expected_attribute_fall_back(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if chromadb_rust_bindings is None:  # pragma: no cover
        pytest.skip("no chromadb_rust_bindings")
    monkeypatch.setattr(fastread, "TESTED_CHROMADB", frozenset({TESTED}))
    monkeypatch.delattr(chromadb_rust_bindings, "MigrationMode")
    _fell_back(indexed, caplog, "AttributeError")


def test_an_untested_chromadb_version_falls_back(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(fastread, "TESTED_CHROMADB", frozenset({"0.0.1"}))
    _fell_back(indexed, caplog, "not one the fast reader was tested with")


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_the_environment_turns_the_reader_off(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, value: str
) -> None:
    monkeypatch.setenv(fastread.FAST_READS_ENV, value)
    _fell_back(indexed, caplog, f"{fastread.FAST_READS_ENV} is off")


def test_chromadb_settings_in_the_environment_fall_back(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MIGRATIONS_HASH_ALGORITHM", "md5")
    _fell_back(indexed, caplog, "MIGRATIONS_HASH_ALGORITHM")


@needs_tested
def test_a_missing_documents_collection_is_created_by_the_chromadb_client(
    indexed: Path, caplog: pytest.LogCaptureFixture
) -> None:
    slow = DocumentStore(indexed)
    slow._conn.client(create=False).delete_collection("selfroute__documents")
    fast = DocumentStore(indexed, fast_reads=True)
    assert fast.document_count() == 0  # as the chromadb client reads it: created empty
    assert not fast._conn.reads_fast and not fast._conn.fast_reads


def test_servers_and_given_clients_never_use_the_reader(indexed: Path) -> None:
    import chromadb

    client = chromadb.PersistentClient(path=str(indexed.resolve()))
    given = DocumentStore(indexed, client=client, fast_reads=True)
    assert not given._conn.fast_reads and given.document_count() > 0
    served = DocumentStore(indexed, chroma_url="http://127.0.0.1:9", fast_reads=True)
    assert not served._conn.fast_reads


@needs_tested
def test_a_read_only_store_is_read_through_its_copy(
    indexed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as for the chromadb client, which must write to open: a private copy (see _health.snapshot)
    from selfroute.stores import _connection

    monkeypatch.setattr(_connection, "is_read_only", lambda folder: True)
    fast, slow = _pair(indexed)
    assert fast.read_only and slow.read_only and fast._conn.reads_fast
    for question in QUESTIONS[:2]:
        assert HybridRetriever(fast, k=5).retrieve(question) == HybridRetriever(slow, k=5).retrieve(
            question
        )


def test_the_reader_refuses_what_it_does_not_return(indexed: Path) -> None:
    if TESTED not in fastread.TESTED_CHROMADB:
        pytest.skip("the reader does not open with this chromadb")
    client = fastread.open_read_client(indexed.resolve())
    assert client is not None
    chunks = client.get_collection("selfroute")
    with pytest.raises(ValueError, match="embeddings"):
        chunks.get(include=["embeddings"])
    with pytest.raises(ValueError, match="unique"):
        chunks.get(ids=["a:0", "a:0"])
    with pytest.raises(ValueError, match="non-empty"):
        chunks.get(ids=[])
    with pytest.raises(TypeError):
        chunks.query(query_embeddings=[[0.0] * 384], n_results=0)
    client.close()
