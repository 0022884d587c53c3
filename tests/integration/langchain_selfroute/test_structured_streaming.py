"""Structured verdicts that stream, through the real clients on loopback servers that stream the
JSON object token by token: ``ChatOpenAI`` with a JSON-schema response format, ``ChatOpenAI``
with tool calling (argument deltas), and ``ChatGoogleGenerativeAI`` with a response schema.

The answer must reach the caller while the object is still being sent (the server pauses before
the object's end until the test has seen text), exactly, with ``invoke`` equal to the summed
stream; declined objects never show; malformed, cut-off or reordered objects stay correct.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from langchain_selfroute import SelfRoute
from selfroute import Reason, Route
from tests.conformance.scenarios import BY_NAME, DOCUMENT
from tests.integration.langchain_selfroute.helpers import Provider, scripted, stage_of
from tests.support._loopback import last_user_text
from tests.support.openai_server import tool_call
from tests.unit.langchain_selfroute.fakes import ListRetriever, scenario_docs

pytestmark = pytest.mark.integration

LAMP = "How long did Mara Holt keep the lamp?"
LONG = "Mara Holt kept the lamp at Grey Point for thirty-one years, through the storm of 1938."
TRICKY = 'She said "thirty-one years" \\ café — 東京 😀 𝄞\nline two\ttab'
LC_ANSWER = "In 1901."


class ToolCallingChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` whose structured output is a tool call (LangChain's ``function_calling``
    method, what models without JSON-schema response formats get)."""

    def with_structured_output(self, schema: Any = None, **kwargs: Any) -> Any:
        kwargs["method"] = "function_calling"
        return super().with_structured_output(schema, **kwargs)


WIRES = ["openai-json-schema", "openai-tools", "gemini-schema"]


@pytest.fixture(params=WIRES)
def wire(request: pytest.FixtureRequest, loopback_servers: dict[str, Any]) -> Wire:
    name = str(request.param)
    server = loopback_servers["gemini" if name.startswith("gemini") else "openai"]
    server.reset()
    return Wire(name, server)


class Wire:
    """One way a structured verdict travels: the client, and how the server sends the object."""

    def __init__(self, name: str, server: Any) -> None:
        self.name = name
        self.server = server
        self.provider = Provider("gemini" if name.startswith("gemini") else "openai", server)

    def llm(self) -> Any:
        if self.name == "openai-tools":
            return ToolCallingChatOpenAI(
                model="gpt-4o-mini",
                api_key="dummy",
                base_url=self.server.base_url,
                stream_usage=True,
                max_retries=0,
                timeout=10,
            )
        return self.provider.llm()

    def encode(self, obj: dict[str, Any] | str) -> str:
        """What the model writes for ``obj`` (raw text for a broken object)."""
        text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
        return tool_call(text) if self.name == "openai-tools" else text

    @property
    def header_events(self) -> int:
        """Stream events before the object's first piece (OpenAI: the role or the tool call)."""
        return 0 if self.name.startswith("gemini") else 1

    def script(self, obj: dict[str, Any] | str, **reply: Any) -> None:
        self.provider.script(scripted(self.encode(obj), LC_ANSWER, **reply))

    def route(self, **kwargs: Any) -> SelfRoute:
        return SelfRoute(
            retriever=ListRetriever(docs=scenario_docs(BY_NAME["answered"])),
            llm=self.llm(),
            document=DOCUMENT,
            verdict=kwargs.pop("verdict", "structured"),
            **kwargs,
        )

    def rag_requests(self) -> list[dict[str, Any]]:
        return [b for b in self.server.requests if stage_of(last_user_text(b)) == "rag"]


def _total(chunks: list[Any]) -> Any:
    return functools.reduce(operator.add, chunks)


def _first_text_while_paused(wire: Wire, stream: Callable[[], Any]) -> tuple[list[Any], bool]:
    """Drain ``stream()``; whether its first text arrived while the server was still holding
    back the object's end (it then resumes the server)."""
    chunks, early = [], None
    for chunk in stream():
        chunks.append(chunk)
        if early is None and chunk.text:
            early = not wire.server.past_pause.is_set()  # the rest of the object is not sent yet
            wire.server.resume.set()
    wire.server.resume.set()
    return chunks, bool(early)


# -- time to first token -------------------------------------------------------------------------
def test_answer_streams_before_the_object_is_complete(wire: Wire) -> None:
    obj = {"answerable": True, "answer": LONG}
    pieces = len(json.dumps(obj)) // 4
    # pause with about half of the object sent: "answerable" and the answer's opening are out
    wire.script(obj, piece_chars=4, pause_at=wire.header_events + pieces // 2)
    chunks, early = _first_text_while_paused(wire, lambda: wire.route().stream(LAMP))
    total = _total(chunks)
    assert early, "no answer text reached the caller before the object was complete"
    assert total.text == LONG and total.output.route is Route.RAG
    assert total.output.steps[0].structured
    (body,) = wire.rag_requests()
    assert body.get("stream") or wire.name.startswith("gemini")  # the structured call streamed


def test_reordered_keys_are_held_and_still_answer(wire: Wire) -> None:
    text = json.dumps({"answer": LONG, "answerable": True})
    pause = wire.header_events + len(text) // 8
    wire.script(text, piece_chars=4, pause_at=pause, pause_max_s=0.5)
    chunks, early = _first_text_while_paused(wire, lambda: wire.route().stream(LAMP))
    assert not early  # "answerable" did not come first: nothing shown before the whole object
    total = _total(chunks)
    assert total.text == LONG and total.output.route is Route.RAG


# -- exactness, invoke == stream ---------------------------------------------------------------
@pytest.mark.parametrize("piece_chars", [1, 3, 7])
def test_escapes_and_unicode_stream_exactly(wire: Wire, piece_chars: int) -> None:
    obj = {"answerable": True, "answer": TRICKY}
    # the escaped form: \\u escapes (surrogate pairs too) split across pieces
    text = json.dumps(obj) if piece_chars != 7 else json.dumps(obj, ensure_ascii=False)
    wire.script(text, piece_chars=piece_chars)
    route = wire.route()
    chunks = list(route.stream(LAMP))
    total = _total(chunks)
    out = route.invoke(LAMP)
    assert "".join(c.text for c in chunks) == total.text == out.answer == TRICKY.strip()
    assert not any(c.retracted for c in chunks)
    assert (
        (total.output.route, total.output.reason)
        == (out.route, out.reason)
        == (
            Route.RAG,
            Reason.ANSWERED,
        )
    )
    assert total.output.steps[0].usage == out.steps[0].usage
    assert json.loads(total.output.steps[0].output) == obj


async def test_async_stream_equals_ainvoke(wire: Wire) -> None:
    wire.script({"answerable": True, "answer": TRICKY}, piece_chars=2)
    route = wire.route(verdict="auto")
    chunks = [c async for c in route.astream(LAMP)]
    out = await route.ainvoke(LAMP)
    assert _total(chunks).text == out.answer == TRICKY.strip()
    assert len([c for c in chunks if c.text]) > 3  # streamed, not one piece


# -- declines never leak -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"answerable": False, "answer": "Thirty-one years, I would guess."}, Reason.DECLINED),
        (
            {"answerable": True, "answer": "The passage does not say how long she kept it."},
            Reason.REFUSED,
        ),
        ({"answerable": True, "answer": "unanswerable"}, Reason.DECLINED),
    ],
    ids=["answerable-false", "declining-answer", "sentinel-answer"],
)
def test_declined_objects_never_reach_the_caller(
    wire: Wire, obj: dict[str, Any], reason: Reason
) -> None:
    wire.script(obj, piece_chars=3)
    route = wire.route()
    chunks = list(route.stream(LAMP))
    total = _total(chunks)
    assert (total.output.route, total.output.reason) == (Route.LONG_CONTEXT, reason)
    assert "".join(c.text for c in chunks) == total.text == LC_ANSWER
    assert not any(c.retracted for c in chunks)  # nothing of the RAG object was ever shown
    out = route.invoke(LAMP)
    assert (out.route, out.reason, out.answer) == (Route.LONG_CONTEXT, reason, LC_ANSWER)


# -- malformed and cut-off objects -------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"answerable": tru',
        '{"answerable": true, "answer": "Thirty-one years at Grey',  # cut mid-answer
        '{"answerable": maybe, "answer": "Thirty-one years."}',
        "Thirty-one years.",  # prose, not the object
    ],
    ids=["cut-in-flag", "cut-in-answer", "bad-flag", "prose"],
)
def test_malformed_objects_fail_safe_to_long_context(wire: Wire, text: str) -> None:
    wire.script(text, piece_chars=3)
    route = wire.route()
    total = _total(list(route.stream(LAMP)))
    out = route.invoke(LAMP)
    assert total.output.route is out.route is Route.LONG_CONTEXT
    assert total.text == out.answer == LC_ANSWER
    assert total.output.reason is out.reason


def test_stream_cut_without_finish_fails_safe(openai: Provider) -> None:
    """The connection ends mid-object with no finish reason: the shown opening is retracted."""
    wire = Wire("openai-json-schema", openai.server)
    wire.script({"answerable": True, "answer": LONG}, piece_chars=4, kind="cut")
    route = wire.route()
    chunks = list(route.stream(LAMP))
    total = _total(chunks)
    assert total.output.route is Route.LONG_CONTEXT
    assert total.output.reason is Reason.TRUNCATED
    assert total.text == LC_ANSWER
    assert any(c.retracted for c in chunks)  # the opening had been shown: taken back
