"""``selfroute ask`` imports no framework it does not use (the start-up target of #17).

Each case runs the command in a fresh interpreter against the loopback OpenAI server (or with the
offline reader) and lists the modules it imported: no LangChain, no ``openai`` SDK, no LlamaIndex,
no Google client; and no ``chromadb`` package either: over one ``--doc`` file the store is not
used, and over the store the fast reader (:mod:`selfroute.stores._fastread`) reads it through
chromadb's Rust bindings, when the installed chromadb is one it was tested with. With the reader
turned off (``SELFROUTE_FAST_READS=0``) the ``chromadb`` client gives the same JSON output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfroute.stores import DocumentStore
from selfroute.stores import _fastread as fastread
from tests.support._loopback import extractive_responder
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "tests" / "fixtures" / "docs" / "1973_oil_crisis.html"
QUESTION = "Who proclaimed the oil embargo in October 1973?"
FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langchain_openai",
    "langchain_google_genai",
    "langchain_selfroute",
    "openai",
    "llama_index",
    "llamaindex_selfroute",
    "google.genai",  # the Gemini SDKs (chromadb brings google.protobuf, which is not one)
    "google.generativeai",
    "google.ai",
)
#: Runs the command in-process and prints the modules it imported (after the run).
_PROBE = (
    "import json, sys\n"
    "from selfroute.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps({'code': code, 'modules': sorted(sys.modules)}),"
    " file=sys.stderr)\n"
)


def _frameworks(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FRAMEWORKS))


def _fast_reader_applies() -> bool:
    try:
        import chromadb_rust_bindings
    except ImportError:  # pragma: no cover - chromadb is in the dev install
        return False
    installed = fastread.installed_chromadb(chromadb_rust_bindings.__file__)
    return installed in fastread.TESTED_CHROMADB


FAST = _fast_reader_applies()


def _imported(argv: list[str], cwd: Path, **environ: str) -> tuple[dict[str, object], set[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ANONYMIZED_TELEMETRY="False", HOME=str(cwd))
    env.pop("OPENAI_API_KEY", None)
    env.pop(fastread.FAST_READS_ENV, None)
    env.update(environ)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv, "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stderr[-2000:]
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:  # --stream: one JSON event per line, the result last
        out = json.loads(done.stdout.strip().splitlines()[-1])["result"]
    return out, set(report["modules"])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imports")
    (root / "kb").mkdir()
    (root / "kb" / DOC.name).write_bytes(DOC.read_bytes())
    DocumentStore(root / "store", embedding="offline").index([root / "kb"])
    return root / "store"


@pytest.mark.parametrize(
    ("case", "extra"),
    [
        ("store, loopback server", []),
        ("store, loopback server, streamed", ["--stream"]),
        ("store, offline reader", ["--model", "offline"]),
        ("--doc, loopback server", ["--doc", str(DOC)]),
        ("--doc, offline reader", ["--doc", str(DOC), "--model", "offline"]),
    ],
)
def test_ask_imports_no_framework(store: Path, tmp_path: Path, case: str, extra: list[str]) -> None:
    with ScriptedOpenAIServer(extractive_responder()) as server:
        argv = ["ask", QUESTION, "--store", str(store), "--base-url", server.base_url]
        argv += ["--model", "qwen2.5-7b-instruct", *extra]
        out, modules = _imported(argv, tmp_path)
        used_server = server.calls > 0
    assert out["route"] == "rag" and "OAPEC" in out["answer"]
    assert used_server == ("offline" not in case)
    assert not _frameworks(modules), f"{case}: imported {_frameworks(modules)[:10]}"
    if "--doc" in case or FAST:
        assert "chromadb" not in modules, f"{case}: the store library was imported"
    else:  # an untested chromadb: its client reads the store
        assert "chromadb" in modules
    if "--doc" not in case:
        assert ("chromadb_rust_bindings" in modules) == FAST


def _comparable(out: dict[str, object]) -> dict[str, object]:
    """``ask --json`` output without the timings (which differ from run to run)."""
    data = dict(out)
    data.pop("latency_s", None)
    steps = data.get("steps")
    assert isinstance(steps, list)
    data["steps"] = [{k: v for k, v in step.items() if k != "latency_s"} for step in steps]
    return data


@pytest.mark.parametrize("extra", [[], ["--retrieval", "dense"], ["--model", "offline"]])
def test_ask_answers_the_same_without_the_fast_reader(
    store: Path, tmp_path: Path, extra: list[str]
) -> None:
    with ScriptedOpenAIServer(extractive_responder()) as server:
        argv = ["ask", QUESTION, "--store", str(store), "--base-url", server.base_url]
        argv += ["--model", "qwen2.5-7b-instruct", *extra]
        fast, fast_modules = _imported(argv, tmp_path)
        slow, slow_modules = _imported(argv, tmp_path, **{fastread.FAST_READS_ENV: "0"})
    assert "chromadb" in slow_modules  # the escape hatch: chromadb's own client
    assert ("chromadb" not in fast_modules) == FAST
    assert _comparable(fast) == _comparable(slow)
    assert fast["route"] == "rag" and fast["sources"]


def test_ask_answers_with_provider_usage(store: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(extractive_responder()) as server:
        argv = ["ask", QUESTION, "--store", str(store), "--base-url", server.base_url]
        out, _ = _imported([*argv, "--model", "qwen2.5-7b-instruct"], tmp_path)
    assert "OAPEC" in out["answer"] and out["route"] == "rag"
    rag = out["steps"][0]
    assert rag["usage"]["source"] == "provider" and rag["usage"]["input_tokens"] > 0


def test_ask_batch_imports_no_langchain(store: Path, tmp_path: Path) -> None:
    from tests.integration.batch.corpus import respond
    from tests.support.openai_batch_server import OpenAIBatchServer

    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    with OpenAIBatchServer(respond) as server:
        argv = ["ask", "--batch", str(questions), "--store", str(store)]
        argv += ["--base-url", server.base_url, "--model", "gpt-4o-mini"]
        env = {"SELFROUTE_BATCH_POLL_S": "0.01"}
        _, modules = _imported(argv, tmp_path, **env)
        assert len(server.created) >= 1
    used = [m for m in _frameworks(modules) if m != "openai" and not m.startswith("openai.")]
    assert not used, f"ask --batch imported {used[:10]}"  # the openai SDK: the batch backend's
