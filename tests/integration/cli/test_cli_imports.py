"""``selfroute ask`` imports no framework it does not use (the start-up target of #17).

Each case runs the command in a fresh interpreter against the loopback OpenAI server (or with the
offline reader) and lists the modules it imported: no LangChain, no ``openai`` SDK, no LlamaIndex,
no Google client; over one ``--doc`` file, no ``chromadb`` either (only the store needs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from selfroute.stores import DocumentStore
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


def _imported(argv: list[str], cwd: Path) -> tuple[dict[str, object], set[str]]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ANONYMIZED_TELEMETRY="False", HOME=str(cwd))
    env.pop("OPENAI_API_KEY", None)
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
    if "--doc" in case:
        assert "chromadb" not in modules, f"{case}: the store library was imported"
    else:
        assert "chromadb" in modules  # the probe sees what it should


def test_ask_answers_with_provider_usage(store: Path, tmp_path: Path) -> None:
    with ScriptedOpenAIServer(extractive_responder()) as server:
        argv = ["ask", QUESTION, "--store", str(store), "--base-url", server.base_url]
        out, _ = _imported([*argv, "--model", "qwen2.5-7b-instruct"], tmp_path)
    assert "OAPEC" in out["answer"] and out["route"] == "rag"
    rag = out["steps"][0]
    assert rag["usage"]["source"] == "provider" and rag["usage"]["input_tokens"] > 0
