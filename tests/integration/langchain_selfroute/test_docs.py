"""Every Python example of ``docs/langchain.md`` runs, in order, like a notebook.

The examples use the real ``ChatOpenAI`` (pointed at a loopback server through
``OPENAI_BASE_URL``). Two things are substituted: ``OpenAIEmbeddings`` becomes the offline
``HashingEmbeddings``, and the agent's model (``gpt-4o``) a scripted tool-calling model (the
loopback server does not produce tool calls). ``docs``, ``llm`` and ``retriever`` are the names the
page says the reader brings.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import langchain_openai
import pytest
from langchain_chroma import Chroma
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from langchain_selfroute import HashingEmbeddings
from selfroute import GROUNDING_PREFIX
from tests.support._loopback import Reply, last_user_text
from tests.support.openai_server import ScriptedOpenAIServer
from tests.unit.langchain_selfroute.fakes import RAG_MARK, ToolCallingModel

pytestmark = pytest.mark.integration

PAGE = Path(__file__).resolve().parents[3] / "docs" / "langchain.md"
VOLTS = "The Zephyr charger needs 48 volts."
RESET = "To reset the rover, hold the power button for ten seconds."


def filler(label: str, n: int) -> str:
    return " ".join(f"{label}{i}" for i in range(n))


def manual_docs() -> list[Document]:
    acme = f"{VOLTS} {filler('specs', 400)} {RESET} {filler('care', 200)}"
    globex = f"The Globex drone battery lasts 3 hours. {filler('globex', 300)}"
    return [
        Document(page_content=acme, metadata={"source": "zephyr.md", "tenant": "acme"}),
        Document(page_content=globex, metadata={"source": "drone.md", "tenant": "globex"}),
    ]


def respond(body: dict[str, Any]) -> Reply:
    prompt = last_user_text(body)
    question = prompt.rsplit("Question:", 1)[-1].lower()
    grounded = prompt.startswith(GROUNDING_PREFIX)
    quote = ""
    if RAG_MARK in prompt:  # the RAG step answers only what its passages say
        known = "voltage" in question and "48 volts" in prompt
        if body.get("response_format"):  # a structured verdict (with its quotes when asked)
            verdict: dict[str, Any] = {"answerable": known, "answer": "48 volts." if known else ""}
            if "quotes" in json.dumps(body["response_format"]):
                verdict["quotes"] = [VOLTS] if known else []
            return Reply(json.dumps(verdict), model=None)
        text, quote = ("48 volts.", VOLTS) if known else ("unanswerable", "")
    elif "reset" in question:
        text, quote = "Hold the power button for ten seconds.", RESET
    elif "voltage" in question:
        text, quote = "48 volts.", VOLTS
    elif "colour" in question:  # not in the manual: the long-context model invents an answer
        text, quote = "Red.", "The Zephyr rover is painted bright red."
    else:
        text = "I do not know."
    if grounded and quote:
        text = f"{text}\nQuote: {quote}"
    return Reply(text, model=None)  # echo the requested model name


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", markdown, flags=re.DOTALL)


def test_every_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    with ScriptedOpenAIServer(respond) as server:
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_BASE", server.base_url)
        real_chat = langchain_openai.ChatOpenAI

        def chat_openai(**kw: Any) -> Any:
            if kw.get("model") == "gpt-4o":  # the agent's model in the tool recipe
                return ToolCallingModel(question="How do I reset my rover?")
            return real_chat(**{"max_retries": 0, **kw})

        monkeypatch.setattr(langchain_openai, "ChatOpenAI", chat_openai)
        monkeypatch.setattr(langchain_openai, "OpenAIEmbeddings", lambda **kw: HashingEmbeddings())

        docs = manual_docs()
        splitter = RecursiveCharacterTextSplitter(chunk_size=400, chunk_overlap=0)
        chunks = splitter.split_documents(docs)
        store = Chroma(collection_name="lcel-chunks", embedding_function=HashingEmbeddings())
        store.add_documents(chunks)
        namespace: dict[str, Any] = {
            "docs": docs,
            "llm": real_chat(model="gpt-4o-mini", max_retries=0),
            "retriever": store.as_retriever(),
        }
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"{PAGE.name}[python block {i}]", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"docs example {i} failed:\n{block}") from exc
        bodies = list(server.requests)
        prompts = [last_user_text(b) for b in bodies]
    out = capsys.readouterr().out

    # quickstart
    assert "48 volts.\nrag answered\n" in out
    assert namespace["result"].token_ratio < 1
    # reopened store with a tenant filter
    assert "Hold the power button for ten seconds." in out
    # LCEL before/after, BM25 without a retriever
    assert out.count("48 volts.") >= 3
    # cheap + strong pair
    assert re.search(r"rag gpt-4o-mini \d+ provider", out)
    assert re.search(r"long_context gpt-4\.1 \d+ provider", out)
    assert "always-long-context would have cost $" in out
    # streaming
    assert "[long_context]\nHold the power button for ten seconds.\nTrue " in out
    # astream_events
    assert re.search(r"selfroute:rag \[[^]]*'selfroute:rag'", out)
    assert "selfroute:long_context ['selfroute:long_context']" in out
    # structured verdicts, grounded answers and abstention
    assert "48 volts. True True\nThe Zephyr charger needs 48 volts.\n" in out
    assert "unanswerable True ungrounded\n" in out
    assert "Red." in (namespace["invented"].unverified_answer or "")
    formats = [json.dumps(b["response_format"]) for b in bodies if b.get("response_format")]
    assert formats and all("rag_verdict" in f and "quotes" in f for f in formats)
    # agent tool
    assert "According to the documents: Hold the power button for ten seconds." in out
    assert namespace["tool_message"].artifact["route"] == "long_context"
    # configuration and batch
    assert "\n2\n" in out
    assert "['rag', 'long_context']" in out
    assert "gpt-4o-mini" in str(namespace["usage"].usage_metadata)
    assert prompts  # every example went through the real client
