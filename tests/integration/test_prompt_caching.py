"""Provider prompt caching through selfroute, end to end with the real clients.

The long-context prompt puts the document before the question, so a provider's automatic prefix
cache can reuse the whole document across questions. The loopback servers simulate that cache
(`LoopbackServer.enable_prefix_cache`: the longest common prefix with any earlier prompt, counted
with selfroute's offline tokenizer, reported under OpenAI's rule of "at least 1024 tokens, in
128-token increments"). These tests ask two different questions over one long real document
(LaRA's Bartleby excerpt, ~3,700 tokens), both routed to long context, and check that the cached
count the provider reported reaches ``Usage.cached_input_tokens``, the result's dict and the cost.

Covered: LangChain ``ChatOpenAI`` (invoke and streaming with ``stream_usage=True``),
``ChatGoogleGenerativeAI`` (invoke; Gemini ``usageMetadata.cachedContentTokenCount``) and the
LlamaIndex ``OpenAI`` LLM (query and streaming query).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import selfroute as sr
from tests.support._loopback import (
    LoopbackServer,
    Reply,
    common_prefix_length,
    last_user_text,
    prefix_cached_tokens,
    prompt_text,
)
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "llamaindex" / "bartleby_excerpt.txt"
DOCUMENT = FIXTURE.read_text(encoding="utf-8")
# Two questions the text does not answer (LaRA-style hallucination probes), of similar length.
Q1 = "What was Quimby's favorite book to read during his breaks at the office?"
Q2 = "Which city did the narrator's lawyer friend travel to for his holidays?"
LC_ANSWER = "The document does not name one."
#: Only the RAG prompt says this (the long-context prompt does not).
RAG_MARK = "retrieved from a longer document"
#: Two short passages (well under 1024 tokens) the LangChain retriever returns for every question.
PASSAGES = [p for p in DOCUMENT.split("\n\n") if p.strip()][1:3]

OPENAI_MODEL = "gpt-4o-mini"
GEMINI_MODEL = "gemini-2.5-flash"
PRICES = sr.PriceTable(
    prices={OPENAI_MODEL: (0.15, 0.60), GEMINI_MODEL: (0.30, 2.50)},
    cached_input={OPENAI_MODEL: 0.075, GEMINI_MODEL: 0.075},
)
COUNTER = sr.default_token_counter()
DOC_TOKENS = COUNTER.count(DOCUMENT.strip())


def responder(body: dict[str, Any]) -> Reply:
    """The RAG step declines every question, the long-context step answers it. No scripted
    token counts: with the prefix cache on the server counts the prompt with the tokenizer."""
    if RAG_MARK in last_user_text(body):
        return Reply("unanswerable", model=None)
    return Reply(LC_ANSWER, model=None)


def expected_cached(server: LoopbackServer, index: int) -> int:
    """The cached tokens of request ``index``, recomputed from the recorded request bodies."""
    prompts = [prompt_text(body) for body in server.requests]
    prompt = prompts[index]
    chars = max((common_prefix_length(prompt, p) for p in prompts[:index]), default=0)
    return prefix_cached_tokens(COUNTER.count(prompt[:chars]), COUNTER.count(prompt))


def check_caching(server: LoopbackServer, first: sr.RouteResult, second: sr.RouteResult) -> int:
    """Assert the caching story of two long-context questions asked in a row; return the
    cached tokens of the second long-context call."""
    for result in (first, second):
        assert (result.route, result.reason) == (sr.Route.LONG_CONTEXT, sr.Reason.DECLINED)
        assert result.answer == LC_ANSWER
        assert [s.stage for s in result.steps] == [sr.Stage.RAG, sr.Stage.LONG_CONTEXT]
        assert all(s.usage.source == "provider" for s in result.steps)
    assert server.calls == 4  # RAG, LC for the first question; RAG, LC for the second
    steps = [*first.steps, *second.steps]
    lc_prompts = [last_user_text(b) for b in server.requests if RAG_MARK not in last_user_text(b)]
    assert len(lc_prompts) == 2 and all(DOCUMENT.strip() in p for p in lc_prompts)
    # Every step reports what the server computed, which matches an independent recount.
    for i, step in enumerate(steps):
        assert server.prefix_cache_hits[i] == expected_cached(server, i)
        assert step.usage.input_tokens == COUNTER.count(prompt_text(server.requests[i]))
        assert (step.usage.cached_input_tokens or 0) == server.prefix_cache_hits[i]

    lc1, lc2 = first.steps[-1].usage, second.steps[-1].usage
    assert not lc1.cached_input_tokens  # 0 or None: nothing was cached before
    cached = lc2.cached_input_tokens
    assert cached is not None and cached > 0
    assert cached == server.prefix_cache_hits[3]
    assert cached % 128 == 0 and cached <= lc2.input_tokens
    # The whole document was reusable: the question comes after it.
    assert cached >= DOC_TOKENS - 128
    assert second.usage.cached_input_tokens == sum(
        s.usage.cached_input_tokens or 0 for s in second.steps
    )
    assert second.to_dict()["usage"]["cached_input_tokens"] == second.usage.cached_input_tokens
    assert second.to_dict()["steps"][-1]["usage"]["cached_input_tokens"] == cached
    assert not first.to_dict()["usage"]["cached_input_tokens"]
    # Money: the cached input tokens are billed at the cached price.
    assert first.cost is not None and second.cost is not None
    for result in (first, second):
        assert result.cost == pytest.approx(
            sum(PRICES.cost(s.model, s.usage) or 0.0 for s in result.steps)
        )
    lc_cost1 = PRICES.cost(first.steps[-1].model, lc1)
    lc_cost2 = PRICES.cost(second.steps[-1].model, lc2)
    assert lc_cost1 is not None and lc_cost2 is not None and lc_cost2 < lc_cost1
    assert second.cost < first.cost
    return cached


# --------------------------------------------------------------------------------------------
# the simulated cache itself
# --------------------------------------------------------------------------------------------
@pytest.fixture
def cached_openai() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(responder, prefix_cache=True) as server:
        yield server


@pytest.fixture
def cached_gemini() -> Iterator[ScriptedGeminiServer]:
    with ScriptedGeminiServer(responder) as server:
        server.enable_prefix_cache()
        yield server


def _post_openai(server: ScriptedOpenAIServer, content: str, **extra: Any) -> dict[str, Any]:
    body = {"model": OPENAI_MODEL, "messages": [{"role": "user", "content": content}], **extra}
    resp = httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=10)
    resp.raise_for_status()
    if not extra.get("stream"):
        return dict(resp.json()["usage"])
    events = [line[6:] for line in resp.text.splitlines() if line.startswith("data: {")]
    usages = [json.loads(e).get("usage") for e in events]
    assert all(u is None for u in usages[:-1])
    return dict(usages[-1])


def test_openai_wire_format_and_rule(cached_openai: ScriptedOpenAIServer) -> None:
    doc = DOCUMENT.strip()
    first = _post_openai(cached_openai, f"{doc}\n\nQuestion: {Q1}")
    assert first["prompt_tokens_details"]["cached_tokens"] == 0
    assert first["prompt_tokens"] == COUNTER.count(f"{doc}\n\nQuestion: {Q1}")
    second = _post_openai(
        cached_openai,
        f"{doc}\n\nQuestion: {Q2}",
        stream=True,
        stream_options={"include_usage": True},
    )
    cached = second["prompt_tokens_details"]["cached_tokens"]
    assert cached == cached_openai.prefix_cache_hits[1] == expected_cached(cached_openai, 1)
    assert cached % 128 == 0 and DOC_TOKENS - 128 <= cached <= second["prompt_tokens"]
    # a shared prefix under 1024 tokens is not cached
    short = " ".join(doc.split()[:400])
    assert COUNTER.count(short) < 1024
    assert (
        _post_openai(cached_openai, short + " one")["prompt_tokens_details"]["cached_tokens"] == 0
    )
    assert (
        _post_openai(cached_openai, short + " two")["prompt_tokens_details"]["cached_tokens"] == 0
    )
    # an explicit scripted count wins; reset forgets the cached prompts
    cached_openai.responder = lambda body: Reply("ok", cached_tokens=7)
    assert _post_openai(cached_openai, doc)["prompt_tokens_details"]["cached_tokens"] == 7
    cached_openai.reset()
    cached_openai.responder = responder
    assert _post_openai(cached_openai, doc)["prompt_tokens_details"]["cached_tokens"] == 0


def test_cache_off_is_unchanged(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.responder = responder
    for _ in range(2):
        usage = _post_openai(openai_server, DOCUMENT)
        assert usage["prompt_tokens_details"]["cached_tokens"] == 0
        assert usage["prompt_tokens"] == len(DOCUMENT.split())  # word count, as before
    assert openai_server.prefix_cache_hits == [0, 0]


def test_gemini_wire_format(cached_gemini: ScriptedGeminiServer) -> None:
    def post(question: str) -> dict[str, Any]:
        body = {"contents": [{"role": "user", "parts": [{"text": f"{DOCUMENT}\n{question}"}]}]}
        url = f"{cached_gemini.base_url}/v1beta/models/{GEMINI_MODEL}:generateContent"
        resp = httpx.post(url, json=body, timeout=10)
        resp.raise_for_status()
        return dict(resp.json()["usageMetadata"])

    assert "cachedContentTokenCount" not in post(Q1)
    usage = post(Q2)
    assert usage["cachedContentTokenCount"] == cached_gemini.prefix_cache_hits[1] > 0
    assert usage["cachedContentTokenCount"] <= usage["promptTokenCount"]


# --------------------------------------------------------------------------------------------
# LangChain: ChatOpenAI (invoke, stream) and ChatGoogleGenerativeAI (invoke)
# --------------------------------------------------------------------------------------------
def _langchain_route(llm: Any) -> Any:
    from langchain_core.documents import Document

    from langchain_selfroute import SelfRoute
    from tests.unit.langchain_selfroute.fakes import ListRetriever

    docs = [
        Document(page_content=p, metadata={"doc_id": "bartleby", "chunk_index": i})
        for i, p in enumerate(PASSAGES)
    ]
    return SelfRoute(retriever=ListRetriever(docs=docs), llm=llm, document=DOCUMENT, prices=PRICES)


def test_langchain_chat_openai_invoke(cached_openai: ScriptedOpenAIServer) -> None:
    from tests.support.clients import chat_openai

    route = _langchain_route(chat_openai(cached_openai, timeout=httpx.Timeout(10.0)))
    first = route.invoke(Q1).result
    second = route.invoke(Q2).result
    cached = check_caching(cached_openai, first, second)
    assert second.steps[-1].model == OPENAI_MODEL
    print(f"ChatOpenAI invoke: document {DOC_TOKENS} tokens, cached on question 2: {cached}")


def test_langchain_chat_openai_stream(cached_openai: ScriptedOpenAIServer) -> None:
    from tests.support.clients import chat_openai

    route = _langchain_route(
        chat_openai(cached_openai, stream_usage=True, timeout=httpx.Timeout(10.0))
    )
    results = []
    for question in (Q1, Q2):
        chunks = list(route.stream(question))
        assert "".join(c.text for c in chunks) == LC_ANSWER
        output = chunks[-1].output
        assert output is not None
        results.append(output.result)
    assert all(
        b["stream"] and b["stream_options"] == {"include_usage": True}
        for b in cached_openai.requests
    )
    cached = check_caching(cached_openai, *results)
    print(f"ChatOpenAI stream: document {DOC_TOKENS} tokens, cached on question 2: {cached}")


def test_langchain_chat_google_invoke(cached_gemini: ScriptedGeminiServer) -> None:
    from tests.support.clients import chat_google

    # langchain-google-genai maps usageMetadata.cachedContentTokenCount to
    # usage_metadata["input_token_details"]["cache_read"], which the adapter reads.
    route = _langchain_route(chat_google(cached_gemini, model=GEMINI_MODEL))
    first = route.invoke(Q1).result
    second = route.invoke(Q2).result
    cached = check_caching(cached_gemini, first, second)
    assert second.steps[-1].model == GEMINI_MODEL
    print(f"ChatGoogleGenerativeAI: document {DOC_TOKENS} tokens, cached on question 2: {cached}")


def test_langchain_chat_google_stream(cached_gemini: ScriptedGeminiServer) -> None:
    """Gemini repeats the cumulative usage (with the cached count) on every streamed chunk;
    LangChain turns it into deltas whose sum is the call's usage."""
    from tests.support.clients import chat_google

    route = _langchain_route(chat_google(cached_gemini, model=GEMINI_MODEL))
    results = []
    for question in (Q1, Q2):
        chunks = list(route.stream(question))
        assert "".join(c.text for c in chunks) == LC_ANSWER
        output = chunks[-1].output
        assert output is not None
        results.append(output.result)
    assert all(":streamGenerateContent" in path for path in cached_gemini.paths)
    check_caching(cached_gemini, *results)


# --------------------------------------------------------------------------------------------
# LlamaIndex: the OpenAI LLM
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("streaming", [False, True], ids=["query", "streaming-query"])
def test_llamaindex_openai_query(cached_openai: ScriptedOpenAIServer, streaming: bool) -> None:
    from llama_index.core import Document, VectorStoreIndex

    from llamaindex_selfroute import (
        HashingEmbedding,
        SelfRouteQueryEngine,
        WordChunkNodeParser,
        get_route_result,
    )
    from tests.support.clients import llamaindex_openai

    index = VectorStoreIndex.from_documents(
        [Document(text=DOCUMENT, id_="bartleby")],
        embed_model=HashingEmbedding(),
        transformations=[WordChunkNodeParser(chunk_words=300)],
    )
    engine = SelfRouteQueryEngine.from_index(
        index,
        llamaindex_openai(cached_openai, model=OPENAI_MODEL),
        prices=PRICES,
        streaming=streaming,
    )
    results = []
    for question in (Q1, Q2):
        response = engine.query(question)
        if streaming:
            shown = "".join(response.response_gen)  # type: ignore[union-attr,arg-type]
            result = get_route_result(response)
            # the long-context answer declines: people read the engine's not-found text
            assert result.answer == LC_ANSWER and result.abstained
            assert shown == "Not found in the documents."
        results.append(get_route_result(response))
    cached = check_caching(cached_openai, *results)
    assert results[1].steps[-1].model == OPENAI_MODEL
    print(f"LlamaIndex OpenAI ({streaming=}): document {DOC_TOKENS} tokens, cached: {cached}")
