"""``selfroute serve``'s OpenAI-compatible API with the real clients: the ``openai`` SDK,
LangChain ``ChatOpenAI`` and LlamaIndex ``OpenAILike``, against a running server (a child process
on a free loopback port) whose model is the scripted reader on a loopback server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cli.scripted import CLERK, NOT_THERE, OIL
from tests.integration.serve.conftest import Served
from tests.support.openai_server import ScriptedOpenAIServer

openai = pytest.importorskip("openai")


@pytest.fixture(scope="module")
def served(store: Path, module_reader: ScriptedOpenAIServer) -> Iterator[Served]:
    server = Served(store, module_reader, "--lc-model", "reader-large", "--max-body-kb", "16")
    yield server
    assert server.stop() == 0, server.output()


def client(served: Served) -> Any:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0)


def prompt_words(model: ScriptedOpenAIServer) -> int:
    """What the scripted server reports as prompt tokens, summed over its requests."""
    return sum(len(r["messages"][-1]["content"].split()) for r in model.requests)


def ask(served: Served, question: str, **kwargs: Any) -> Any:
    return client(served).chat.completions.create(
        model="selfroute", messages=[{"role": "user", "content": question}], **kwargs
    )


def test_models_lists_selfroute(served: Served, model: ScriptedOpenAIServer) -> None:
    assert [m.id for m in client(served).models.list()] == ["selfroute"]


def test_rag_routed_answer_with_usage_and_selfroute_field(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    reply = ask(served, OIL.question)
    assert reply.choices[0].message.content == OIL.answer
    assert reply.choices[0].finish_reason == "stop"
    extra = reply.model_extra["selfroute"]
    assert (extra["route"], extra["reason"], extra["abstained"]) == ("rag", "answered", False)
    assert extra["saved_tokens"] > 0 and 0 < extra["token_ratio"] < 1
    assert extra["sources"][0]["document"].endswith("1973_oil_crisis.html")
    assert model.calls == 1
    assert reply.usage.prompt_tokens == prompt_words(model)  # the model server's own count
    assert reply.usage.completion_tokens == len(OIL.answer.split())


def test_lc_routed_answer_counts_both_steps(served: Served, model: ScriptedOpenAIServer) -> None:
    reply = ask(served, CLERK.question)
    assert reply.choices[0].message.content == CLERK.answer
    extra = reply.model_extra["selfroute"]
    assert (extra["route"], extra["reason"]) == ("long_context", "declined")
    assert [s["stage"] for s in extra["steps"]] == ["rag", "long_context"]
    assert [r["model"] for r in model.requests] == ["reader-small", "reader-large"]
    assert reply.usage.prompt_tokens == prompt_words(model)
    words = 1 + len(CLERK.answer.split())  # "unanswerable", then the answer
    assert reply.usage.completion_tokens == words


@pytest.mark.parametrize("question", [OIL.question, CLERK.question, NOT_THERE])
def test_stream_equals_non_stream(
    served: Served, model: ScriptedOpenAIServer, question: str
) -> None:
    whole = ask(served, question)
    model.reset()
    chunks = list(ask(served, question, stream=True, stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    usage = [c.usage for c in chunks if c.usage is not None]
    assert len(usage) == 1 and usage[0].prompt_tokens == prompt_words(model)
    assert usage[0].total_tokens == whole.usage.total_tokens
    final = [c for c in chunks if c.choices and c.choices[0].finish_reason == "stop"]
    assert final[0].model_extra["selfroute"]["route"] == whole.model_extra["selfroute"]["route"]
    assert chunks[-1].model_extra["selfroute"]["reason"] == whole.model_extra["selfroute"]["reason"]


def test_a_declined_rag_draft_is_never_streamed(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    draft = "The passages suggest something, but I cannot find it. unanswerable"

    def responder(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        return draft if "excerpts retrieved" in prompt else "From the whole document: yes."

    model.responder = responder
    chunks = list(ask(served, OIL.question, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "From the whole document: yes."
    assert "passages suggest" not in text
    assert chunks[-1].model_extra["selfroute"]["route"] == "long_context"


def test_langchain_chat_openai(served: Served, model: ScriptedOpenAIServer) -> None:
    lc = pytest.importorskip("langchain_openai")
    llm = lc.ChatOpenAI(
        base_url=f"{served.url}/v1", api_key="unused", model="selfroute", stream_usage=True
    )
    message = llm.invoke(OIL.question)
    assert message.content == OIL.answer
    assert message.usage_metadata["input_tokens"] == prompt_words(model)
    model.reset()
    pieces = list(llm.stream(CLERK.question))
    merged = pieces[0]
    for piece in pieces[1:]:
        merged += piece
    assert merged.content == CLERK.answer
    assert merged.usage_metadata["input_tokens"] == prompt_words(model)


def test_llamaindex_openai_like(served: Served, model: ScriptedOpenAIServer) -> None:
    like = pytest.importorskip("llama_index.llms.openai_like")
    from llama_index.core.llms import ChatMessage

    llm = like.OpenAILike(
        model="selfroute", api_base=f"{served.url}/v1", api_key="unused", is_chat_model=True
    )
    reply = llm.chat([ChatMessage(role="user", content=OIL.question)])
    assert reply.message.content == OIL.answer
    streamed = list(llm.stream_chat([ChatMessage(role="user", content=CLERK.question)]))
    assert streamed[-1].message.content == CLERK.answer


def post(served: Served, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{served.url}/v1/chat/completions",
        content=content,
        headers={"content-type": "application/json", **headers},
        timeout=30,
    )


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b'{"messages": [{"role": "user", "content": "\xff\xfe bad"}]}', 400, "UTF-8"),
        (b"[1, 2]", 400, "JSON object"),
        (b'{"model": "gpt-9", "messages": [{"role": "user", "content": "hi"}]}', 404, "gpt-9"),
        (b'{"model": "selfroute", "messages": []}', 400, "messages"),
        (b'{"messages": [{"role": "system", "content": "be nice"}]}', 400, "user message"),
        (b'{"messages": [{"role": "user", "content": "   "}]}', 400, "empty"),
        (b'{"messages": [{"role": "user", "content": 7}]}', 400, "content"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}', 400, "stream"),
        (b'{"messages": [{"role": "user", "content": "' + b"a" * 20000 + b'"}]}', 413, "16,384"),
    ],
)
def test_bad_requests_get_openai_errors_and_no_model_call(
    served: Served, model: ScriptedOpenAIServer, body: bytes, status: int, needle: str
) -> None:
    reply = post(served, body)
    assert reply.status_code == status, reply.text
    error = reply.json()["error"]
    assert needle in error["message"] and set(error) == {"message", "type", "param", "code"}
    assert model.calls == 0


def test_the_sdk_raises_its_own_error_classes(served: Served, model: ScriptedOpenAIServer) -> None:
    with pytest.raises(openai.NotFoundError):
        client(served).chat.completions.create(
            model="gpt-9", messages=[{"role": "user", "content": "hi"}]
        )
    with pytest.raises(openai.BadRequestError):
        ask(served, "")


def test_wrong_method_and_unknown_path(served: Served, model: ScriptedOpenAIServer) -> None:
    assert httpx.get(f"{served.url}/v1/chat/completions").status_code == 405
    assert httpx.get(f"{served.url}/v1/embeddings").status_code == 404


def test_a_chunked_body_over_the_limit_is_cut_off(
    served: Served, model: ScriptedOpenAIServer
) -> None:
    def parts() -> Iterator[bytes]:
        yield b'{"messages": [{"role": "user", "content": "'
        for _ in range(40):
            yield b"x" * 1024
        yield b'"}]}'

    reply = httpx.post(f"{served.url}/v1/chat/completions", content=parts(), timeout=30)
    assert reply.status_code == 413
    assert model.calls == 0


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"{not json-rpc", 400),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}', 400),  # no session
        (
            b'{"jsonrpc": "2.0", "method": "initialize", "id": 1, "params": "'
            + b"x" * 20000
            + b'"}',
            413,
        ),
    ],
)
def test_bad_mcp_posts_are_refused_and_the_server_lives_on(
    served: Served, model: ScriptedOpenAIServer, body: bytes, status: int
) -> None:
    reply = httpx.post(f"{served.url}/mcp", content=body, headers=MCP_HEADERS, timeout=30)
    assert reply.status_code == status, reply.text
    assert model.calls == 0
    assert ask(served, OIL.question).choices[0].message.content == OIL.answer


async def test_mcp_over_http_answers_like_v1(served: Served, model: ScriptedOpenAIServer) -> None:
    pytest.importorskip("mcp")
    from tests.integration.serve.mcp_http import mcp_ask

    over_mcp = await mcp_ask(served.url, CLERK.question)
    over_v1 = ask(served, CLERK.question)
    assert over_mcp["answer"] == over_v1.choices[0].message.content == CLERK.answer
    assert over_mcp["route"] == over_v1.model_extra["selfroute"]["route"] == "long_context"
    assert over_mcp["tokens"] == over_v1.model_extra["selfroute"]["tokens"]
