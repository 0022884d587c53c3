"""Every example of docs/llamaindex.md runs, in order, against the loopback OpenAI server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conformance.scenarios import DOCUMENT
from tests.support._loopback import last_user_text, prompt_text
from tests.support.openai_server import Reply, tool_call

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[3] / "docs" / "llamaindex.md"
EXAMPLE = re.compile(r"<!-- example: ([\w-]+) -->\s*```python\n(.*?)```", re.DOTALL)
QUESTION_BORN = "When was Mara Holt born?"


def examples() -> list[tuple[str, str]]:
    return EXAMPLE.findall(DOCS.read_text(encoding="utf-8"))


def responder(body: dict) -> Reply:
    prompt = last_user_text(body)
    if "Action Input" in prompt_text(body):  # the ReAct agent's own LLM
        if prompt.startswith("Observation:"):
            seen = prompt.split("Observation:", 1)[1].strip()
            return Reply(f"Thought: I can answer without using any more tools.\nAnswer: {seen}")
        action = json.dumps({"input": QUESTION_BORN})
        return Reply(
            f"Thought: I should ask the records.\nAction: lighthouse_records\nAction Input: {action}"
        )
    if body.get("tools"):  # the RAG step with a structured verdict
        knows = "keep the lamp" in prompt and "thirty-one years" in prompt
        verdict = {"answerable": knows, "answer": "Thirty-one years." if knows else ""}
        return Reply(tool_call(verdict))
    if '"unanswerable"' in prompt and "Document:\n" not in prompt:  # the RAG step
        if "keep the lamp" in prompt and "thirty-one years" in prompt:
            return Reply("Thirty-one years.")
        if "vault code" in prompt and "is 1234" in prompt:
            return Reply("1234.")
        return Reply("unanswerable")
    if "favourite song" in prompt:  # the long-context step, inventing an answer
        return Reply('"Shenandoah".\nQuote: "Mara Holt sang Shenandoah on the ninety-two steps."')
    if "Summarize" in prompt:
        return Reply('A keeper\'s life.\nQuote: "kept the lamp at Grey Point for thirty-one years"')
    if "lighthouse door" in prompt:  # neither step finds it
        return Reply("unanswerable")
    if "Mara Holt" in prompt:  # the long-context step
        return Reply("Mara Holt was born in 1901 in Dunmore.")
    return Reply("I do not know.")


def test_examples_are_found() -> None:
    names = [name for name, _ in examples()]
    assert names == [
        "drop-in",
        "local-server",
        "gemini",
        "cheap-strong",
        "reopen",
        "tenants",
        "streaming",
        "async",
        "agent",
        "abstain",
        "prompts",
        "structured",
        "policies",
    ]


def test_docs_examples_run(openai_server, gemini_server, tmp_path, monkeypatch, capsys) -> None:
    openai_server.responder = responder
    gemini_server.responder = responder
    monkeypatch.setenv("OPENAI_API_KEY", "dummy")
    monkeypatch.setenv("OPENAI_API_BASE", openai_server.base_url)
    monkeypatch.setenv("GOOGLE_API_KEY", "dummy")
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", gemini_server.root_url)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lighthouse.txt").write_text(DOCUMENT, encoding="utf-8")
    namespace: dict = {"__name__": "docs_example"}

    for name, code in examples():
        openai_server.reset()
        exec(compile(code, f"docs/llamaindex.md[{name}]", "exec"), namespace)
        out = capsys.readouterr().out
        prompts = [last_user_text(r) for r in openai_server.requests]
        models = [r["model"] for r in openai_server.requests]
        if name == "drop-in":
            assert out.splitlines()[:2] == ["Thirty-one years.", "rag"]
            assert models == ["gpt-4o-mini"]
        elif name == "local-server":  # OpenAILike with a model name OpenAI() refuses
            assert out.strip() == "Thirty-one years."
            assert models == ["qwen2.5-7b-instruct"]
        elif name == "gemini":
            assert out.strip() == "Thirty-one years. provider"
            assert openai_server.requests == [] and len(gemini_server.requests) == 1
        elif name == "cheap-strong":
            lines = out.splitlines()
            assert lines[0] == "long_context declined"
            assert lines[1] == "Mara Holt was born in 1901 in Dunmore."
            assert models == ["gpt-4o-mini", "gpt-4o"]
            assert lines[3].endswith("of always-long-context input tokens")
            assert (tmp_path / "selfroute_index" / "chroma").is_dir()
        elif name == "reopen":
            assert out.strip() == "Thirty-one years."
        elif name == "tenants":
            assert out.strip() == "1234."
            assert all("9876" not in p for p in prompts)
        elif name == "streaming":
            assert out.splitlines() == ["Mara Holt was born in 1901 in Dunmore.", "long_context"]
            assert all(r["stream"] for r in openai_server.requests)
        elif name == "async":
            assert out.strip() == "['rag', 'long_context']"
        elif name == "agent":
            assert "tool route: long_context" in out
            assert out.strip().endswith("Mara Holt was born in 1901 in Dunmore.")
        elif name == "abstain":
            assert out.splitlines() == [
                "Not found in the documents.",
                "unanswerable True",
                "NOT FOUND: the documents do not contain the answer to this question. Do not guess",
            ]
        elif name == "prompts":
            lines = out.splitlines()
            assert lines == [
                "['long_context_prompt', 'rag_prompt', 'structured_rag_prompt']",
                "Thirty-one years.",
            ]
            assert prompts[0].startswith("Excerpts:\n")
        elif name == "structured":
            assert out.splitlines() == [
                "long_context True",
                "Mara Holt was born in 1901 in Dunmore.",
            ]
            assert openai_server.requests[0]["tool_choice"] == "required"
            assert models == ["gpt-4o-mini", "gpt-4o"]
        elif name == "policies":
            assert out.splitlines() == [
                "Not found in the documents: a candidate answer could not be verified against "
                "their text.",
                "True ungrounded",
                "global_question True",
            ]
            assert models == ["gpt-4o-mini", "gpt-4o", "gpt-4o"]  # the summary skipped RAG
