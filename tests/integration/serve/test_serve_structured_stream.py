"""``selfroute serve --verdict structured`` reads a streamed structured verdict through its async
model client: the loopback model streams the ``{"answerable", "answer"}`` object token by token
(a ``json_schema`` response). The OpenAI-compatible API holds RAG text until the verdict (its
clients cannot take text back), so what is checked here is the streamed object's reading: exact
text (escapes, unicode, surrogate pairs split across tokens), stream == non-stream, a declined
object never shown, a cut-off or malformed object answered from long context."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.cli.scripted import CLERK
from tests.integration.serve.conftest import Served
from tests.support._loopback import Reply
from tests.support.openai_server import ScriptedOpenAIServer

openai = pytest.importorskip("openai")

ANSWER = "Bob Cratchit was the clerk, copying letters in a dismal little cell all day."
TRICKY = 'She said "a clerk" \\ café — 東京 😀 𝄞\nline two\ttab'
LC_ANSWER = "From the whole document: the clerk."


@pytest.fixture(scope="module")
def structured_served(store: Path, module_reader: ScriptedOpenAIServer) -> Iterator[Served]:
    server = Served(store, module_reader, "--verdict", "structured")
    yield server
    assert server.stop() == 0, server.output()


def script(model: ScriptedOpenAIServer, wire: str, **reply: Any) -> None:
    model.reset()

    def respond(body: dict[str, Any]) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return Reply(wire, **reply)
        return Reply(LC_ANSWER)

    model.responder = respond


def ask(served: Served, **kwargs: Any) -> Any:
    return openai.OpenAI(
        base_url=f"{served.url}/v1", api_key="unused", max_retries=0
    ).chat.completions.create(
        model="selfroute", messages=[{"role": "user", "content": CLERK.question}], **kwargs
    )


def stream(served: Served, model: ScriptedOpenAIServer) -> tuple[str, Any]:
    """The streamed text and the last chunk; the RAG request was a streamed ``json_schema``
    one."""
    parts, last = [], None
    for chunk in ask(served, stream=True):
        last = chunk
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    rag = [r for r in model.requests if r.get("response_format")]
    assert rag and all(r["stream"] is True for r in rag)
    return "".join(parts), last


@pytest.mark.parametrize("answer", [ANSWER, TRICKY], ids=["plain", "escapes-unicode"])
def test_the_streamed_object_is_read_exactly(
    answer: str, structured_served: Served, module_reader: ScriptedOpenAIServer
) -> None:
    obj = {"answerable": True, "answer": answer}
    # 3-character tokens split the \\u escapes of the surrogate pairs
    script(module_reader, json.dumps(obj), piece_chars=None if answer is ANSWER else 3)
    text, last = stream(structured_served, module_reader)
    assert text == answer
    assert last.model_extra["selfroute"]["route"] == "rag"
    script(module_reader, json.dumps(obj), piece_chars=3)
    whole = ask(structured_served)
    assert whole.choices[0].message.content == answer


def test_a_declined_object_is_never_streamed(
    structured_served: Served, module_reader: ScriptedOpenAIServer
) -> None:
    script(module_reader, json.dumps({"answerable": False, "answer": "Bob, perhaps."}))
    text, last = stream(structured_served, module_reader)
    assert text == LC_ANSWER
    assert last.model_extra["selfroute"]["route"] == "long_context"


@pytest.mark.parametrize(
    "wire",
    [
        '{"answerable": true, "answer": "Bob Cratchit was the',
        '{"answerable": true, "answer": "Bob" "Cratchit"}',
    ],
    ids=["cut-off", "malformed"],
)
def test_a_broken_object_is_answered_from_long_context(
    wire: str, structured_served: Served, module_reader: ScriptedOpenAIServer
) -> None:
    script(module_reader, wire)
    text, last = stream(structured_served, module_reader)
    assert text.endswith(LC_ANSWER)
    assert last.model_extra["selfroute"]["route"] == "long_context"
