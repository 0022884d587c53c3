"""What the composition conformance suites share: the manual, the scripted model, and the check
that every way of running a composition gives the same output.

The scripted model (behind the real clients, on a loopback server) answers the RAG step only
for the charger question (``RAG_Q``: RAG-routed); the RAG step declines the reset question
(``DECLINE_Q``), which the long-context step answers. Besides, it rewrites questions
("Rewrite ...") for upstream chains, calls the first offered tool with the user's question
(agents), and answers from a tool result once there is one.
"""

from __future__ import annotations

import asyncio
import functools
import json
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage

from selfroute import Route
from tests.support._loopback import Reply, last_user_text
from tests.support.openai_server import tool_call

__all__ = [
    "AGENT_PREFIX",
    "ANSWERS",
    "DECLINED_TEXT",
    "DECLINE_Q",
    "LC_ANSWER",
    "QUESTIONS",
    "RAG_ANSWER",
    "RAG_Q",
    "UNKNOWN_Q",
    "Runs",
    "canon",
    "json_round_trip",
    "manual_documents",
    "manual_text",
    "respond",
    "run_all",
]

RAG_Q = "What voltage does the Zephyr charger need?"
DECLINE_Q = "How do I reset the rover?"
#: Not in the manual: both steps decline (the result abstains).
UNKNOWN_Q = "What colour is the Zephyr rover?"
QUESTIONS = (RAG_Q, DECLINE_Q)
RAG_ANSWER = "48 volts."
LC_ANSWER = "Hold the power button for ten seconds."
#: The answer and the route of each question.
ANSWERS = {RAG_Q: RAG_ANSWER, DECLINE_Q: LC_ANSWER}
ROUTES = {RAG_Q: Route.RAG, DECLINE_Q: Route.LONG_CONTEXT}
#: What the RAG step writes when it declines: it must never reach a stream.
DECLINED_TEXT = "unanswerable"
RAG_MARK = "retrieved from a longer document"
AGENT_PREFIX = "According to the documents: "


def _filler(label: str, n: int) -> str:
    return " ".join(f"{label}{i}" for i in range(n))


def manual_text() -> str:
    """A manual long enough for several 300-word chunks."""
    return (
        f"The Zephyr charger needs 48 volts. {_filler('spec', 500)} "
        f"To reset the rover, hold the power button for ten seconds. {_filler('care', 400)}"
    )


def manual_documents() -> list[Document]:
    return [
        Document(page_content=manual_text(), metadata={"doc_id": "zephyr", "tenant": "acme"}),
        Document(
            page_content=f"The Globex drone battery lasts 3 hours. {_filler('globex', 350)}",
            metadata={"doc_id": "drone", "tenant": "globex"},
        ),
    ]


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list(body.get("messages") or [])


def _asked(prompt: str) -> str:
    """Which of the suite's questions a framework prompt is about (the last one named)."""
    return max(QUESTIONS, key=prompt.rfind)


def respond(body: dict[str, Any]) -> Reply | str:
    """The scripted model (see the module docstring)."""
    prompt = last_user_text(body)
    roles = [m.get("role") for m in _messages(body)]
    tools = body.get("tools") or []
    if tools and "tool" not in roles:  # an agent: call the first tool with the question
        params = tools[0]["function"].get("parameters", {}).get("properties") or {"input": {}}
        return tool_call({next(iter(params)): prompt})
    if "tool" in roles:
        result = next(m for m in reversed(_messages(body)) if m.get("role") == "tool")
        return AGENT_PREFIX + str(result.get("content"))
    if prompt.startswith("Rewrite"):
        return prompt.split(":", 1)[1].strip()
    if prompt.startswith("Some choices are given below"):  # LlamaIndex's router selector
        return json.dumps([{"choice": 1, "reason": "the Zephyr manual"}])
    if "sub_question" in prompt:  # LlamaIndex's sub-question generator
        items = [{"sub_question": _asked(prompt), "tool_name": "zephyr_manual"}]
        return "```json\n" + json.dumps(items) + "\n```"
    if prompt.startswith("Context information"):  # a LlamaIndex synthesizer over sub-answers
        return LC_ANSWER if LC_ANSWER in prompt else RAG_ANSWER
    question = prompt.rsplit("Question:", 1)[-1].lower()
    if RAG_MARK in prompt:
        known = "voltage" in question and "48 volts" in prompt
        return RAG_ANSWER if known else DECLINED_TEXT
    if "colour" in question:
        return DECLINED_TEXT
    if "reset" in question:
        return LC_ANSWER
    if "voltage" in question:
        return RAG_ANSWER
    return "I do not know."


_VOLATILE = ("latency_s", "id", "run_id", "created_at", "tool_call_id")


def _drop_volatile(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _drop_volatile(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, (list, tuple)):
        return [_drop_volatile(v) for v in value]
    return value


def canon(value: Any) -> Any:
    """A comparable form of a composition's output: Self-Route results as their JSON dict,
    messages as (type, text, tool calls), without latencies and ids (they differ per run)."""
    from langchain_selfroute import SelfRouteOutput

    if isinstance(value, BaseMessage):
        calls = [(c["name"], c["args"]) for c in getattr(value, "tool_calls", None) or []]
        return {"type": value.type, "text": value.text, "tool_calls": calls}
    if isinstance(value, Mapping):
        if "route" in value and "answer" in value and "steps" in value:
            data = SelfRouteOutput.model_validate(value).to_dict()
            return _drop_volatile({k: canon(v) for k, v in data.items()})
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, Document):
        return _drop_volatile(value.model_dump())
    return value


def _texts(value: Any) -> str:
    """Every string inside a streamed piece (to look for declined text)."""
    if isinstance(value, BaseMessage):
        return value.text
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return " ".join(_texts(v) for k, v in value.items() if k not in ("rag_answer", "steps"))
    if isinstance(value, (list, tuple)):
        return " ".join(_texts(v) for v in value)
    return ""


@dataclass
class Runs:
    """The outputs of one composition run every way LangChain runs a runnable."""

    invoke: Any
    batch: Any
    stream: Any
    astream: Any
    events: Any
    streamed_pieces: list[Any]

    def check(self) -> None:
        """All five agree, and no stream showed the RAG step's decline."""
        expected = canon(self.invoke)
        for name in ("batch", "stream", "astream", "events"):
            assert canon(getattr(self, name)) == expected, name
        for piece in self.streamed_pieces:
            assert DECLINED_TEXT not in _texts(piece).lower(), piece


def _join(chunks: list[Any]) -> Any:
    assert chunks, "the stream was empty"
    return functools.reduce(operator.add, chunks)


def run_all(
    runnable: Any,
    value: Any,
    config: Callable[[], dict[str, Any]] | None = None,
    *,
    graph: bool = False,
) -> Runs:
    """Run ``runnable`` on ``value`` with invoke, batch, stream, astream and astream_events.

    ``config`` makes a fresh config per run (e.g. a new chat-history session). A LangGraph
    ``graph`` streams whole states (``stream_mode="values"``): its stream's last chunk is the
    output, where a runnable's chunks add up to it.
    """
    fresh = config or dict
    mode: dict[str, Any] = {"stream_mode": "values"} if graph else {}
    join = (lambda chunks: chunks[-1]) if graph else _join
    invoke = runnable.invoke(value, fresh())
    batch = runnable.batch([value], fresh())[0]
    stream_chunks = list(runnable.stream(value, fresh(), **mode))

    async def astreams() -> tuple[list[Any], Any, list[Any]]:
        chunks = [c async for c in runnable.astream(value, fresh(), **mode)]
        final = None
        pieces: list[Any] = []
        async for event in runnable.astream_events(value, fresh(), version="v2"):
            kind = event["event"]
            if kind == "on_chat_model_stream" and "nostream" not in event.get("tags", []):
                pieces.append(event["data"]["chunk"])
            if kind == "on_chain_stream" and event["name"] == "SelfRoute":
                pieces.append(event["data"]["chunk"])
            if kind == "on_chain_end" and not event["parent_ids"]:
                final = event["data"]["output"]
        return chunks, final, pieces

    achunks, events, pieces = asyncio.run(astreams())
    return Runs(
        invoke=invoke,
        batch=batch,
        stream=join(stream_chunks),
        astream=join(achunks),
        events=events,
        streamed_pieces=[*stream_chunks, *achunks, *pieces],
    )


def json_round_trip(value: Any) -> Any:
    """``value`` through JSON text (for outputs that claim to be JSON-serializable)."""
    return json.loads(json.dumps(value))
