"""``selfroute serve`` over a store another process re-indexes: every answer's always-LC count is
that of the documents as they are now (the documents a question priced are remembered between
questions, and forgotten when the store changes)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx

from selfroute.stores import DocumentStore
from selfroute.stores._doccache import SETTLE_S
from tests.integration.cli.scripted import FIXTURE_DOCS, OIL
from tests.integration.serve.conftest import Served, child_env, command
from tests.support.openai_server import ScriptedOpenAIServer

EXTRA = (f"In October 1973 the members of OAPEC {OIL.evidence}. " * 40).strip()


def _always_lc(served: Served) -> int:
    body = {"model": "selfroute", "messages": [{"role": "user", "content": OIL.question}]}
    reply = httpx.post(f"{served.url}/v1/chat/completions", json=body, timeout=60)
    reply.raise_for_status()
    extra = reply.json()["selfroute"]
    assert extra["route"] == "rag"
    return int(extra["always_long_context_tokens"])


def _index_elsewhere(folder: Path, store: Path) -> None:
    """``selfroute index`` in another process (then the store settles, so the server's next
    read meets a store whose mark is trusted: what it remembered must be forgotten by the mark,
    not skipped because the write was recent)."""
    subprocess.run(
        command("index", str(folder), "--prune", "--store", str(store), "--collection", "main"),
        env=child_env(),
        cwd=str(store.parent),
        check=True,
        capture_output=True,
        timeout=300,
    )
    time.sleep(SETTLE_S + 0.5)


def test_the_always_lc_count_follows_another_process_indexing(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    oil = folder / "1973_oil_crisis.html"
    oil.write_bytes((FIXTURE_DOCS / "1973_oil_crisis.html").read_bytes())
    store = tmp_path / "store"
    DocumentStore(store, "main", embedding="offline").index([folder])
    served = Served(store, model)
    try:
        time.sleep(SETTLE_S + 0.5)
        first = _always_lc(served)
        assert _always_lc(served) == first  # remembered: the same count
        note = folder / "embargo_note.txt"
        note.write_text(EXTRA + "\n", encoding="utf-8")  # a document added
        _index_elsewhere(folder, store)
        added = _always_lc(served)
        assert added > first
        note.write_text(EXTRA + "\n\n" + EXTRA + "\n", encoding="utf-8")  # changed
        _index_elsewhere(folder, store)
        changed = _always_lc(served)
        assert changed > added
        note.unlink()  # removed
        _index_elsewhere(folder, store)
        assert _always_lc(served) == first
    finally:
        assert served.close() == 0
