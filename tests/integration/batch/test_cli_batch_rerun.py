"""A finished ``selfroute ask --batch`` rerun in a fresh process: every HTTP request the
loopback Files+Batches server receives is counted. The same command sends nothing; another
model, long-context model, temperature, ``k``, retrieval mode or store refuses naming what
changed, and sends nothing either."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.integration.batch.corpus import documents, respond
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]


class CountingServer(OpenAIBatchServer):
    """The batch double, counting every HTTP request (online, files, batches) it receives."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hits: list[str] = []
        self._hits_lock = threading.Lock()

    def _dispatch(self, handler: Any, method: str) -> None:
        with self._hits_lock:
            self.hits.append(f"{method} {handler.path}")
        super()._dispatch(handler, method)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from selfroute.stores import DocumentStore

    root = tmp_path_factory.mktemp("kb")
    kb = root / "kb"
    kb.mkdir()
    for n, text in enumerate(documents()[:4]):
        (kb / f"doc{n}.txt").write_text(text, encoding="utf-8")
    DocumentStore(root / "store", embedding="offline").index([kb])
    return root / "store"


def _questions(tmp: Path) -> Path:
    path = tmp / "questions.jsonl"
    lines = [
        json.dumps({"id": f"u{n}", "question": f"What is the access code of unit {n}?"})
        for n in (1, 3, 7, 12)
    ]
    # questions sharing no word with most chunks: their chunks tie on score
    lines += [json.dumps({"id": "z1", "question": "Zebra quokka?"}), json.dumps("Xylophone?")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


BASE = ["--model", "gpt-4o-mini", "--k", "2", "--temperature", "0", "--retrieval", "hybrid"]


def _run(srv: OpenAIBatchServer, store: Path, questions: Path, *argv: str) -> tuple[int, str, str]:
    cmd = [sys.executable, "-m", "selfroute.cli", "ask", "--batch", str(questions)]
    cmd += ["--base-url", srv.base_url, "--store", str(store), "--embedding", "offline", *argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SELFROUTE_"))}
    env.update(PYTHONPATH=str(ROOT), SELFROUTE_BATCH_POLL_S="0.01")
    proc = subprocess.run(
        cmd, cwd=questions.parent, env=env, capture_output=True, text=True, timeout=240
    )
    return proc.returncode, proc.stdout, proc.stderr


def _answers(out: str) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in out.splitlines()]
    return [{k: v for k, v in r.items() if k != "latency_s"} for r in rows]


def test_a_finished_job_rerun_in_a_fresh_process_sends_nothing(store: Path, tmp_path: Path) -> None:
    questions = _questions(tmp_path)
    with CountingServer(respond) as srv:
        code, first, err = _run(srv, store, questions, *BASE, "--json")
        assert code == 0, err
        assert len(srv.created) >= 1 and srv.hits
        for _ in range(3):
            srv.hits.clear()
            code, again, err = _run(srv, store, questions, *BASE, "--json")
            assert code == 0, err
            assert srv.hits == [], srv.hits  # no request of any kind
            assert _answers(again) == _answers(first)


CHANGES = [
    (["--model", "gpt-4o"], "model"),
    (["--lc-model", "gpt-4.1"], "long_context_model"),
    (["--temperature", "0.7"], "temperature"),
    (["--k", "3"], "k"),
    (["--retrieval", "bm25"], "retrieval"),
]


@pytest.mark.parametrize(("change", "name"), CHANGES, ids=[n for _, n in CHANGES])
def test_a_rerun_with_other_settings_refuses_naming_them(
    store: Path, tmp_path: Path, change: list[str], name: str
) -> None:
    questions = _questions(tmp_path)
    with CountingServer(respond) as srv:
        code, _, err = _run(srv, store, questions, *BASE)
        assert code == 0, err
        srv.hits.clear()
        argv = list(BASE)
        flag = change[0]
        if flag in argv:
            argv[argv.index(flag) + 1] = change[1]
        else:
            argv += change
        code, out, err = _run(srv, store, questions, *argv)
        assert code == 2, (out, err)
        assert srv.hits == [], srv.hits
        assert f"{name} " in err and "(now " in err, err
        assert "Traceback" not in err
