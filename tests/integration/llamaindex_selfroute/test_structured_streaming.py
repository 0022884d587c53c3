"""Structured verdicts that stream through LlamaIndex ``stream_chat_with_tools``: the real
``OpenAI`` and ``OpenAILike`` LLMs against the loopback server, which streams the verdict tool
call's arguments token by token.

The answer must reach the caller while the tool call is still being sent (the server pauses
before its end until the test has seen text), exactly, with ``query`` equal to the joined
stream; declined calls never show; malformed, cut-off or reordered arguments stay correct.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from llama_index.core import Document, VectorStoreIndex

import selfroute as sr
from llamaindex_selfroute import (
    HashingEmbedding,
    SelfRouteQueryEngine,
    WordChunkNodeParser,
    get_route_result,
)
from tests.conformance.scenarios import DOCUMENT
from tests.support._loopback import last_user_text
from tests.support.clients import llamaindex_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer, tool_call

pytestmark = pytest.mark.integration

LAMP = "How long did Mara Holt keep the lamp?"
RAG_MARK = "excerpts retrieved from a longer document"
LONG = "Mara Holt kept the lamp at Grey Point for thirty-one years, through the storm of 1938."
TRICKY = 'She said "thirty-one years" \\ café — 東京 😀 𝄞\nline two\ttab'
LC_ANSWER = "She was born in 1901."


@pytest.fixture(scope="module")
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def index() -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="grey-point")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=40)],
    )


def _llm(kind: str, server: ScriptedOpenAIServer, model: str) -> Any:
    if kind == "openai":
        return llamaindex_openai(server, model=model)
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=f"local-{model}",
        api_base=server.base_url,
        api_key="dummy",
        is_chat_model=True,
        is_function_calling_model=True,
        context_window=128_000,
        max_retries=0,
        timeout=10,
        additional_kwargs={"stream_options": {"include_usage": True}},
    )


@pytest.fixture(params=["openai", "openai-like"])
def kind(request: pytest.FixtureRequest, server: ScriptedOpenAIServer) -> str:
    server.reset()
    return str(request.param)


def script(server: ScriptedOpenAIServer, verdict: dict[str, Any] | str, **reply: Any) -> None:
    """The RAG step answers with a tool call of ``verdict`` (raw text: broken arguments, or
    prose without a tool call when it does not start with ``{``); the LC step with text."""
    raw = verdict if isinstance(verdict, str) else json.dumps(verdict, ensure_ascii=False)

    def responder(body: dict[str, Any]) -> Reply:
        if RAG_MARK in last_user_text(body):
            text = tool_call(raw) if raw.startswith("{") else raw
            return Reply(text, prompt_tokens=190, completion_tokens=12, **reply)
        return Reply(LC_ANSWER, prompt_tokens=1400, completion_tokens=6)

    server.responder = responder


def engine(kind: str, server: ScriptedOpenAIServer, index: Any, **kw: Any) -> Any:
    return SelfRouteQueryEngine.from_index(
        index,
        _llm(kind, server, "gpt-4o-mini"),
        _llm(kind, server, "gpt-4o"),
        verdict=kw.pop("verdict", "structured"),
        **kw,
    )


def _streamed(kind: str, server: ScriptedOpenAIServer, index: Any) -> tuple[list[str], bool, Any]:
    """The streamed texts, whether the first arrived while the server was paused, the result."""
    response = engine(kind, server, index, streaming=True).query(LAMP)
    texts, early = [], None
    for text in response.response_gen:
        texts.append(text)
        if early is None and text:
            early = not server.past_pause.is_set()  # the rest of the object is not sent yet
            server.resume.set()
    server.resume.set()
    return texts, bool(early), get_route_result(response)


def _header_events() -> int:
    return 1  # the tool call's opening event (name, id, empty arguments)


def test_answer_streams_before_the_tool_call_is_complete(kind: str, server, index) -> None:
    verdict = {"answerable": True, "answer": LONG}
    pieces = len(json.dumps(verdict)) // 4
    script(server, verdict, piece_chars=4, pause_at=_header_events() + pieces // 2)
    texts, early, result = _streamed(kind, server, index)
    assert early, "no answer text reached the caller before the tool call was complete"
    assert "".join(texts) == result.answer == LONG and result.route is sr.Route.RAG
    (body,) = server.requests
    assert body["stream"] is True and body["tools"][0]["function"]["name"] == "rag_verdict"
    step = result.steps[0]
    assert step.structured and (step.usage.input_tokens, step.usage.source) == (190, "provider")


def test_reordered_arguments_are_held_and_still_answer(kind: str, server, index) -> None:
    raw = json.dumps({"answer": LONG, "answerable": True})
    script(server, raw, piece_chars=4, pause_at=_header_events() + 4, pause_max_s=0.5)
    texts, early, result = _streamed(kind, server, index)
    assert not early and "".join(texts) == LONG and result.route is sr.Route.RAG


@pytest.mark.parametrize("piece_chars", [1, 3])
async def test_escapes_and_unicode_stream_exactly(
    kind: str, server, index, piece_chars: int
) -> None:
    verdict = {"answerable": True, "answer": TRICKY}
    script(server, json.dumps(verdict), piece_chars=piece_chars)  # \\u escapes, split
    texts, _, result = _streamed(kind, server, index)
    queried = get_route_result(engine(kind, server, index).query(LAMP))
    response = await engine(kind, server, index, streaming=True).aquery(LAMP)
    atexts = [t async for t in response.async_response_gen()]
    assert "".join(texts) == "".join(atexts) == result.answer == queried.answer == TRICKY.strip()
    assert len([t for t in texts if t]) > 3  # streamed, not one piece
    assert result.reason is queried.reason is sr.Reason.ANSWERED
    assert json.loads(result.steps[0].output) == verdict


@pytest.mark.parametrize(
    ("verdict", "reason"),
    [
        ({"answerable": False, "answer": "Thirty-one years, I would guess."}, sr.Reason.DECLINED),
        (
            {"answerable": True, "answer": "The passage does not say how long she kept it."},
            sr.Reason.REFUSED,
        ),
    ],
    ids=["answerable-false", "declining-answer"],
)
def test_declined_calls_never_reach_the_caller(
    kind: str, server, index, verdict: dict[str, Any], reason: sr.Reason
) -> None:
    script(server, verdict, piece_chars=3)
    texts, _, result = _streamed(kind, server, index)
    assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, reason)
    assert "".join(texts) == LC_ANSWER  # nothing of the RAG call, no retraction note


@pytest.mark.parametrize(
    "raw",
    [
        '{"answerable": tru',
        '{"answerable": true, "answer": "Thirty-one years at Grey',  # cut mid-answer
        '{"answerable": maybe, "answer": "Thirty-one years."}',
    ],
    ids=["cut-in-flag", "cut-in-answer", "bad-flag"],
)
def test_malformed_arguments_fail_safe_to_long_context(kind: str, server, index, raw) -> None:
    script(server, raw, piece_chars=3)
    texts, _, result = _streamed(kind, server, index)
    queried = get_route_result(engine(kind, server, index).query(LAMP))
    assert result.route is queried.route is sr.Route.LONG_CONTEXT
    assert result.answer == queried.answer == LC_ANSWER
    assert "".join(texts).endswith(LC_ANSWER)
