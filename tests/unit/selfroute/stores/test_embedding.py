"""Embedding choices, their recorded names, missing keys, and the offline failure message."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

import selfroute as sr
from selfroute.stores import (
    DocumentStore,
    EmbeddingChoice,
    EmbeddingUnavailableError,
    MissingCredentialsError,
)
from selfroute.stores._embedding import create_embedding_function, embed_documents, embed_query


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("default", "default:all-MiniLM-L6-v2"),
        ("offline", "offline:selfroute-hashing-384"),
        ("OpenAI", "openai:text-embedding-3-small"),
        ("openai:text-embedding-3-large", "openai:text-embedding-3-large"),
        ("google", "google:gemini-embedding-001"),
        (" google : text-embedding-004 ", "google:text-embedding-004"),
    ],
)
def test_specs(text: str, spec: str) -> None:
    assert EmbeddingChoice.parse(text).spec == spec
    assert EmbeddingChoice.parse(spec).spec == spec  # the recorded form parses back


def test_unknown_kinds_and_models_are_refused() -> None:
    with pytest.raises(sr.ConfigurationError, match="unknown embedding 'bert'"):
        EmbeddingChoice.parse("bert")
    with pytest.raises(sr.ConfigurationError, match="has one model"):
        EmbeddingChoice.parse("offline:other")


def test_offline_embeddings_are_deterministic_unit_vectors() -> None:
    choice = EmbeddingChoice("offline")
    fn = create_embedding_function(choice)
    a, b = embed_documents(fn, choice, ["grey point lighthouse", "grey point lighthouse"])
    assert a == b and len(a) == 384
    assert sum(x * x for x in a) == pytest.approx(1.0)
    assert embed_query(fn, choice, "grey point lighthouse") == pytest.approx(a)
    assert embed_documents(fn, choice, []) == []


@pytest.mark.parametrize(
    ("kind", "variables"),
    [("openai", ["OPENAI_API_KEY"]), ("google", ["GOOGLE_API_KEY", "GEMINI_API_KEY"])],
)
def test_missing_keys_name_the_variable(
    kind: str, variables: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in variables:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingCredentialsError) as info:
        create_embedding_function(EmbeddingChoice(kind))
    assert info.value.variable == variables[0]
    assert all(v in str(info.value) for v in variables)
    assert "--embedding offline" in str(info.value)


def test_openai_embedding_against_a_local_server_needs_no_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fn = create_embedding_function(EmbeddingChoice("openai", base_url="http://127.0.0.1:9/v1"))
    assert fn.api_base == "http://127.0.0.1:9/v1" and fn.model_name == "text-embedding-3-small"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def offline_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Chroma's default model is not on disk and the network is unreachable (a dead proxy on
    loopback answers every connection attempt with a refusal)."""
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", tmp_path / "onnx-cache")
    proxy = f"http://127.0.0.1:{_closed_port()}"
    for name in (
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "https_proxy",
        "http_proxy",
        "all_proxy",
    ):
        monkeypatch.setenv(name, proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("offline_default")
def test_default_embedding_offline_names_the_offline_option(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("some text to embed", encoding="utf-8")
    store = DocumentStore(tmp_path / "store", embedding="default")
    with pytest.raises(EmbeddingUnavailableError) as info:
        store.index([docs])
    message = str(info.value)
    assert "all-MiniLM-L6-v2" in message and "--embedding offline" in message
    assert not DocumentStore(tmp_path / "store").exists()  # nothing half-created


@pytest.mark.usefixtures("offline_default")
def test_the_command_prints_one_line_naming_the_offline_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from selfroute.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.md").write_text("# A\n\nsome text\n", encoding="utf-8")
    assert main(["index", "a.md"]) == 1  # `default` is the default embedding
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("selfroute: error: Chroma's default embedding model")
    assert "--embedding offline" in err
