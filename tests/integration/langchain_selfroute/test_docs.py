"""Every Python example of ``docs/langchain.md`` runs as written, in order, like a notebook.

Nothing is substituted: the page's own setup defines the documents, the offline embeddings and
the model; the real ``ChatOpenAI`` reaches a loopback server through the two environment
variables the page names (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), which also answers the
agent's tool calls.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from selfroute import GROUNDING_PREFIX
from tests.support._loopback import Reply, last_user_text
from tests.support.openai_server import ScriptedOpenAIServer, tool_call

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated"),
]

PAGE = Path(__file__).resolve().parents[3] / "docs" / "langchain.md"
VOLTS = "The Zephyr charger needs 48 volts."
RESET = "To reset the rover, hold the power button for ten seconds."
RAG_MARK = "retrieved from a longer document"


def respond(body: dict[str, Any]) -> Reply:
    prompt = last_user_text(body)
    messages = body.get("messages") or []
    tool_results = [m for m in messages if m.get("role") == "tool"]
    if body.get("tools") and not tool_results:  # the agent asks the Self-Route tool
        return Reply(tool_call({"question": prompt}), model=None)
    if tool_results:
        return Reply(f"According to the documents: {tool_results[-1]['content']}", model=None)
    if prompt.startswith("Rewrite as a standalone question:"):
        return Reply(prompt.split(":", 1)[1].strip(), model=None)
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
    assert len(blocks) >= 14
    with ScriptedOpenAIServer(respond) as server:
        monkeypatch.chdir(tmp_path)
        # the only change the page asks for: the two environment variables it names
        monkeypatch.setenv("OPENAI_API_KEY", "dummy")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        # a real module, as a script's __main__ is (LangGraph resolves the State's annotations)
        module = types.ModuleType("docs_langchain")
        monkeypatch.setitem(sys.modules, module.__name__, module)
        namespace: dict[str, Any] = module.__dict__
        for i, block in enumerate(blocks):
            try:
                exec(compile(block, f"{PAGE.name}[python block {i}]", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the message names the block
                raise AssertionError(f"docs example {i} failed:\n{block}") from exc
        bodies = list(server.requests)
        prompts = [last_user_text(b) for b in bodies]
    out = capsys.readouterr().out
    print(out)

    # quickstart
    assert "48 volts.\nrag answered\n" in out
    assert namespace["result"].token_ratio < 1
    # reopened store with a tenant filter; any other vector store (parents via get_by_ids)
    assert out.count("Hold the power button for ten seconds.") >= 3
    assert "\nlong_context\n" in out
    # LCEL before/after, BM25 without a retriever
    assert out.count("48 volts.") >= 4
    # cheap + strong pair
    assert re.search(r"rag gpt-4o-mini \d+ provider", out)
    assert re.search(r"long_context gpt-4\.1 \d+ provider", out)
    assert "always-long-context would have cost $" in out
    # streaming
    assert "[long_context]\nHold the power button for ten seconds.\nTrue " in out
    # astream_events: the RAG run is tagged nostream too
    assert re.search(r"selfroute:rag \[[^]]*'nostream'", out)
    assert "selfroute:long_context ['selfroute:long_context']" in out
    # agent tool
    assert "According to the documents: Hold the power button for ten seconds." in out
    assert namespace["tool_message"].artifact["route"] == "long_context"
    # composition
    assert "Hold the power button for ten seconds. long_context\n" in out  # joined chunks
    assert "ann Hold the power button for ten seconds.\n" in out  # assign passes keys through
    assert "What voltage does the Zephyr charger need? [] 48 volts.\n" in out
    assert "long_context ann\nTrue\n" in out  # LangGraph checkpoint round trip
    # create_retrieval_chain's shape
    assert "Hold the power button for ten seconds. True []\n" in out
    assert "unanswerable" not in out.split("long_context ann\nTrue\n", 1)[1].split("\n")[0]
    # structured verdicts, grounded answers and abstention
    assert "48 volts. True True\nThe Zephyr charger needs 48 volts.\n" in out
    assert "unanswerable True ungrounded\n" in out
    assert "Red." in (namespace["invented"].unverified_answer or "")
    formats = [json.dumps(b["response_format"]) for b in bodies if b.get("response_format")]
    assert formats and all("rag_verdict" in f and "quotes" in f for f in formats)
    # configuration and batch
    assert "\n2\n" in out
    assert "['rag', 'long_context']" in out
    assert "gpt-4o-mini" in str(namespace["usage"].usage_metadata)
    assert prompts  # every example went through the real client
