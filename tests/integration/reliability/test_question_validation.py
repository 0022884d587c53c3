"""Issue 16, findings 3 and 9: questions a provider cannot be sent are refused before any call,
and error text built from an exception is capped.

Before the fix ``"\\ud800"`` passed ``validate_question``; the HTTP client raised
``UnicodeEncodeError`` whose repr holds the whole request body, so ``LongContextError``'s message
was ~100,000 characters of the confidential document, and ``selfroute ask $'... \\xff?'`` printed
kilobytes of the prompt. ``"\\x00\\x00"`` and zero-width-only questions went straight to a full
long-context call. Real ``ChatOpenAI`` / LlamaIndex ``OpenAI`` clients on the loopback server.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import selfroute as sr
from tests.integration.reliability._tenants import TENANT_DOCS
from tests.support.clients import chat_openai, llamaindex_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

DOC = TENANT_DOCS["acme"][0][1] * 40  # ~40,000 words of "confidential" text
SECRETISH = "quarterly operations report"  # a phrase of the document
ROOT = Path(__file__).resolve().parents[3]

BAD = {
    "lone-surrogate": "\ud800",
    "invalid-utf8-from-argv": "What is the launch code \udcff?",  # surrogateescape of b"\xff"
    "nul-only": "\x00\x00",
    "nul-inside": "What is\x00 the code?",
    "zero-width-only": "\u200b\u200c\u200d\ufeff\u2060",
    "control-only": "\x01\x02\x1b",
    "combining-marks-only": "\u0301\u0302",
}
GOOD = ["?", "東京の人口は?", "ما هو الرمز؟", "Launch code 🚀?", "\u200bWhat grew?\u200b"]


@pytest.mark.parametrize("question", list(BAD.values()), ids=list(BAD))
def test_bad_questions_are_refused_before_any_call(
    openai_server: ScriptedOpenAIServer, question: str
) -> None:
    lcs = pytest.importorskip("langchain_selfroute")
    route = lcs.SelfRoute(llm=chat_openai(openai_server), document=DOC)
    with pytest.raises(sr.InvalidInputError) as info:
        route.invoke(question)
    assert openai_server.calls == 0
    assert len(str(info.value)) < 200 and SECRETISH not in str(info.value)
    with pytest.raises(sr.InvalidInputError):
        sr.flow.validate_question(question)


@pytest.mark.parametrize("question", GOOD)
def test_ordinary_questions_in_any_script_pass(question: str) -> None:
    assert sr.flow.validate_question(question) == question.strip()


def test_llamaindex_refuses_before_any_call(openai_server: ScriptedOpenAIServer) -> None:
    lis = pytest.importorskip("llamaindex_selfroute")
    from llama_index.core import Document, VectorStoreIndex

    index = VectorStoreIndex.from_documents(
        [Document(text=DOC, id_="d")], embed_model=lis.HashingEmbedding()
    )
    engine = lis.SelfRouteQueryEngine.from_index(index, llm=llamaindex_openai(openai_server))
    for question in (BAD["lone-surrogate"], BAD["zero-width-only"]):
        with pytest.raises(sr.InvalidInputError):
            engine.query(question)
    assert openai_server.calls == 0


def test_error_text_from_a_huge_exception_repr_is_capped(
    openai_server: ScriptedOpenAIServer,
) -> None:
    """A provider error that echoes the whole request (both calls fail, a transient 500 so the
    RAG failure escalates; a 400 would be raised as a configuration error): the messages and the
    recorded step errors are capped, so the document does not ride along in an error."""
    lcs = pytest.importorskip("langchain_selfroute")
    openai_server.responder = lambda body: Reply(  # a 5xx: escalated, so both calls fail
        "upstream failed on: " + str(body), kind="error", status=500
    )
    route = lcs.SelfRoute(llm=chat_openai(openai_server), document=DOC)
    with pytest.raises(sr.LongContextError) as info:
        route.invoke("Which region grew?")
    message = str(info.value)
    assert "more characters cut" in message
    assert len(message) < 2_500  # names both failures (#16 finding 10), each capped
    assert all(len(s.error or "") < 1_200 for s in info.value.partial.steps)
    assert len(info.value.partial.error or "") < 2_500
    assert openai_server.calls == 2
    openai_server.responder = lambda body: Reply(
        "bad request: " + str(body), kind="error", status=400
    )
    with pytest.raises(sr.ModelConfigurationError) as rejected:
        route.invoke("Which region grew?")
    assert "more characters cut" in str(rejected.value) and len(str(rejected.value)) < 1_500


def test_cli_refuses_invalid_utf8_and_long_questions(
    openai_server: ScriptedOpenAIServer, tmp_path: Path
) -> None:
    """A real ``selfroute`` process given the raw byte ``\\xff`` in its argv (as a shell's
    ``$'...\\xff?'`` does), and ``--max-question-tokens``: exit 2, no model call, a short
    message."""
    pytest.importorskip("langchain_selfroute")
    doc = tmp_path / "doc.txt"
    doc.write_text(DOC)
    env = {**os.environ, "OPENAI_API_KEY": "sk-dummy-000000000000000000", "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "selfroute.cli", "ask"]
    opts = ["--doc", str(doc), "--model", "m", "--base-url", openai_server.base_url]
    cases = [
        [*base, b"What is the launch code \xff?", *opts],
        [*base, "one two three four five six seven eight nine ten?", *opts],
    ]
    cases[1] += ["--max-question-tokens", "5"]
    for argv in cases:
        proc = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, timeout=120)
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 2, err
        assert len(err) < 400 and SECRETISH not in err
    assert (
        "not valid text"
        in subprocess.run(
            cases[0], env=env, cwd=tmp_path, capture_output=True, timeout=120
        ).stderr.decode()
    )
    assert openai_server.calls == 0
