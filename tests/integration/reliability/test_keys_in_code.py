"""Issue 16, finding 5: keys passed in code, of any shape, and ``--debug`` tracebacks.

Only env-var keys and ``sk-``/``AIza`` shapes used to be masked: a Groq ``gsk_``, xAI ``xai-``,
Hugging Face ``hf_`` or 32-hex key given as ``api_key=`` leaked when the provider echoed it, and
``selfroute ... --debug`` printed the provider exception (holding the key) in its traceback. The
adapters now register the ``api_key`` of every model they wrap, the patterns know the prefixes,
and the ``--debug`` traceback is redacted. Real ``ChatOpenAI`` / LlamaIndex ``OpenAI`` clients on
the loopback server; the key is really sent and really echoed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import selfroute as sr
from tests.integration.reliability._chat import is_rag
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

DOC = TENANT_DOCS["acme"][0][1]
ROOT = Path(__file__).resolve().parents[3]


def _key(shape: str) -> str:
    """A fresh key (never registered before, so only this run's registration can mask it)."""
    body = uuid.uuid4().hex
    return {"hex32": body, "groq": f"gsk_{body}", "xai": f"xai-{body}", "hf": f"hf_{body}"}[shape]


def _echo(key: str) -> Reply:
    return Reply(f"Incorrect API key provided: {key}. Request: {{'api': '{key}'}}", status=401)


SHAPES = ["hex32", "groq", "xai", "hf"]


@pytest.mark.parametrize("shape", SHAPES)
def test_langchain_key_passed_in_code_is_masked(
    openai_server: ScriptedOpenAIServer, shape: str
) -> None:
    lcs = pytest.importorskip("langchain_selfroute")
    key = _key(shape)
    openai_server.responder = lambda body: _echo(key)
    route = lcs.SelfRoute(llm=chat_openai(openai_server, api_key=key), document=DOC)
    # A 401 is a configuration error, not a routing signal (#16 finding 10): it is raised, named.
    with pytest.raises(sr.ModelConfigurationError) as info:
        route.invoke("Which region grew?")
    surfaces = [str(info.value), repr(info.value)]
    assert "401" in str(info.value)
    for text in surfaces:
        assert key not in text
    assert openai_server.headers[0]["authorization"] == f"Bearer {key}"  # it was really sent


def test_llamaindex_key_passed_in_code_is_masked(openai_server: ScriptedOpenAIServer) -> None:
    lis = pytest.importorskip("llamaindex_selfroute")
    from llama_index.core import Document, VectorStoreIndex

    key = _key("hex32")
    openai_server.responder = lambda body: _echo(key) if is_rag(last_user_text(body)) else "North."
    index = VectorStoreIndex.from_documents(
        [Document(text=DOC, id_="d")], embed_model=lis.HashingEmbedding()
    )
    llm = llamaindex_openai(openai_server, api_key=key)
    engine = lis.SelfRouteQueryEngine.from_index(index, llm=llm)
    # A 401 is a configuration error, not a routing signal (#16 finding 10): it is raised, named.
    with pytest.raises(sr.ModelConfigurationError) as info:
        engine.query("Which region?")
    assert "401" in str(info.value)
    assert key not in str(info.value) and key not in repr(info.value)


def test_eval_reader_registers_its_model_key(openai_server: ScriptedOpenAIServer) -> None:
    from selfroute.eval import ChatModelReader

    key = _key("hex32")
    assert sr.redact(key) == key  # an unknown 32-hex string is not a key shape
    ChatModelReader(chat_openai(openai_server, api_key=key))
    assert sr.redact(f"echo {key}") == "echo [REDACTED]"


def test_debug_traceback_is_redacted(openai_server: ScriptedOpenAIServer, tmp_path: Path) -> None:
    """``selfroute ask --debug`` (a real process): the traceback shows the provider exception
    chain, and the key the provider echoed is masked in all of it."""
    pytest.importorskip("langchain_selfroute")
    key = f"sk-proj-{uuid.uuid4().hex}"
    openai_server.responder = lambda body: _echo(key)
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC)
    env = {
        **os.environ,
        "OPENAI_API_KEY": key,
        "PYTHONPATH": str(ROOT),
        "ANONYMIZED_TELEMETRY": "False",
    }
    argv = [sys.executable, "-m", "selfroute.cli", "ask", "Which region grew?", "--doc", str(doc)]
    argv += ["--model", "m", "--base-url", openai_server.base_url, "--max-retries", "0"]
    proc = subprocess.run(
        [*argv, "--debug"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    assert "Traceback (most recent call last)" in proc.stderr
    assert "AuthenticationError" in proc.stderr  # the provider's exception is shown ...
    assert key not in proc.stderr + proc.stdout  # ... without the key
    assert openai_server.calls >= 1
