"""``selfroute migrate --to-server URL``: an embedded store's collection moves to a real
``chroma run`` server with its documents, chunk embeddings and BM25 index, and answers the same."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from selfroute.cli import main
from selfroute.stores import DocumentStore, HybridRetriever
from tests.integration.cli.scripted import CLERK, OIL, copy_docs
from tests.support.chroma_server import ChromaServer
from tests.support.openai_server import ScriptedOpenAIServer

pytest.importorskip("chromadb")
pytestmark = pytest.mark.timeout(300)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_migrate_copies_a_collection_to_a_chroma_server(
    tmp_path: Path, chroma_server: ChromaServer, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = copy_docs(tmp_path / "docs")
    (docs / "note.md").write_text("# Note\n\nThe pass key is 71432-QX.\n", encoding="utf-8")
    store = tmp_path / "store"
    local = DocumentStore(store, "moving", embedding="offline")
    local.index([docs])
    url = chroma_server.url
    code, out = _run(
        capsys, "migrate", "--store", str(store), "--collection", "moving", "--to-server", url,
        "--json",
    )  # fmt: skip
    assert code == 0
    report = json.loads(out)
    before = local.stats()
    assert report["documents"] == before.documents == 5
    assert report["chunks"] == before.chunks and report["bm25"] == "copied"

    remote = DocumentStore(store, "moving", chroma_url=url)
    after = remote.stats(documents=True)
    assert after.embedding == before.embedding and after.chunk_words == before.chunk_words
    assert (after.documents, after.chunks, after.words) == (
        before.documents,
        before.chunks,
        before.words,
    )
    assert after.bm25 == "current" and after.orphan_chunks == 0
    assert [d["doc_id"] for d in after.document_list] == [
        d["doc_id"] for d in local.stats(documents=True).document_list
    ]
    # the copy answers exactly like the original, in every mode, with its own BM25 index
    assert remote.bm25_dir != local.bm25_dir and remote.bm25_dir.is_dir()
    for mode in ("hybrid", "dense", "bm25"):
        for question in (OIL.question, CLERK.question, "pass key 71432-QX"):
            want = HybridRetriever(local, mode=mode, k=4).retrieve(question)
            got = HybridRetriever(remote, mode=mode, k=4).retrieve(question)
            assert got and [p.source for p in got] == [p.source for p in want], (mode, question)
            assert [p.score for p in got] == pytest.approx([p.score for p in want], rel=1e-4)
    passages = HybridRetriever(remote, k=2).retrieve("pass key 71432-QX")
    (full,) = HybridRetriever(remote, max_parent_documents=1).long_context(passages)
    assert full.text == local.get_documents([full.doc_id])[0].text and "71432-QX" in full.text

    # a rerun over a complete copy changes nothing
    code, out = _run(
        capsys, "migrate", "--store", str(store), "--collection", "moving", "--to-server", url,
    )  # fmt: skip
    assert code == 0 and "copied 5 documents" in out and f"--chroma-url {url}" in out
    assert DocumentStore(store, "moving", chroma_url=url).stats().chunks == before.chunks

    # a target holding documents the source lacks is refused
    DocumentStore(tmp_path / "other", "taken", chroma_url=url, embedding="offline").index(
        [tmp_path / "docs" / "note.md"]
    )
    DocumentStore(tmp_path / "small", "tiny", embedding="offline").index(
        [docs / "1973_oil_crisis.html"]
    )
    capsys.readouterr()
    code = main(
        ["migrate", "--store", str(tmp_path / "small"), "--collection", "tiny",
         "--to-server", url, "--to-collection", "taken"]
    )  # fmt: skip
    assert code != 0 and "not in" in capsys.readouterr().err


DOC = Path(__file__).parents[3] / "docs" / "scale.md"


def test_the_documented_migration_runs_as_written(
    tmp_path: Path,
    chroma_server: ChromaServer,
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    block = DOC.read_text(encoding="utf-8").split("```console\n", 1)[1].split("```", 1)[0]
    lines = [line.removeprefix("$ ") for line in block.splitlines() if line.startswith("$ ")]
    assert lines[0].startswith("chroma run")  # the server: here, the fixture's `chroma run`
    commands = [
        shlex.split(line.replace("http://localhost:8000", chroma_server.url))[1:]
        for line in lines[1:]
    ]
    assert [c[0] for c in commands] == ["index", "migrate", "stats", "ask"]
    copy_docs(tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SELFROUTE_BASE_URL", reader_server.base_url)  # the model: loopback
    outputs = []
    for argv in commands:
        code, out = _run(capsys, *argv)
        assert code == 0, (argv, out)
        outputs.append(out)
    assert "copied 4 documents" in outputs[1] and "BM25 index copied" in outputs[1]
    assert "documents    4" in outputs[2] and chroma_server.url in outputs[2]
    assert "route" in outputs[3] and reader_server.calls >= 1
    code, out = _run(capsys, "stats", "--chroma-url", chroma_server.url, "--json")
    remote = json.loads(out)
    code, out = _run(capsys, "stats", "--json")
    local = json.loads(out)
    for key in ("documents", "chunks", "words", "embedding", "bm25", "document_list"):
        assert remote[key] == local[key], key
