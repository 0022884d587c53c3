"""Finding 13 of issue #16: pricing always-LC must not cost more than the answer.

On a RAG-routed call the flow loads the long context only to count what always-LC would have sent.
Before the fix it fitted the document (chunked it, ranked every chunk, counted every chunk again)
on every call: a 200 MB document took 78 s of a 92 s ``ask``. Now the document is tokenised once
per content (the counter remembers it by a digest, not by keeping the text), and a document over
the window is priced at the window's capacity without fitting. Real ``ChatOpenAI`` through
``SelfRoute`` against the loopback server; the token counter is spied on to count what it
tokenises.
"""

from __future__ import annotations

from typing import Any

import pytest

import selfroute as sr
from selfroute._tokens import TiktokenCounter
from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer

lcs = pytest.importorskip("langchain_selfroute")

WINDOW = 8_000
PARAGRAPH = (
    "Grey Point lighthouse was kept by Mara Holt for thirty-one years. She was born in Dunmore "
    "in 1901. The lens was replaced in 1947 after a winter storm broke the old one. "
)


class SpyCounter:
    """A fresh tiktoken counter (its own cache) that records how many characters it encodes."""

    def __init__(self) -> None:
        inner = sr.default_token_counter()
        assert isinstance(inner, TiktokenCounter), "tiktoken encodings are vendored offline"
        self.counter = TiktokenCounter(inner._enc, "o200k_base")
        self.encoded = 0
        original = self.counter._encode_len

        def encode_len(text: str) -> int:
            self.encoded += len(text)
            return original(text)

        self.counter._encode_len = encode_len  # type: ignore[method-assign]
        self.name, self.source = self.counter.name, self.counter.source

    def count(self, text: str) -> int:
        return self.counter.count(text)

    def head(self, text: str, max_tokens: int) -> str:
        return self.counter.head(text, max_tokens)

    def tail(self, text: str, max_tokens: int) -> str:
        return self.counter.tail(text, max_tokens)


def test_the_document_is_tokenised_once_across_rag_routed_calls(
    openai_server: ScriptedOpenAIServer,
) -> None:
    document = PARAGRAPH * 2_000  # ~330 KB, about 70k tokens: far over the 8k window
    openai_server.responder = lambda body: (
        "Thirty-one years." if is_rag(last_user_text(body)) else Reply("unused")
    )
    spy = SpyCounter()
    route = lcs.SelfRoute(
        llm=chat_openai(openai_server),
        document=document,
        long_context_window=WINDOW,
        token_counter=spy,
    )
    spy.encoded = 0  # what building the route counted is not the calls' business
    outputs = [route.invoke(f"How long did Mara Holt keep the lamp? ({i})") for i in range(3)]
    assert all(o.route is sr.Route.RAG for o in outputs)
    assert openai_server.calls == 3  # RAG steps only: pricing calls no model
    # three calls priced always-LC, the document was tokenised once (plus prompts and answers)
    assert spy.encoded < 1.1 * len(document)
    for o in outputs:
        context: dict[str, Any] = o.result.context or {}
        assert context["truncated"] and context["original_tokens"] > WINDOW
        # priced at the window minus the answer budget (the upper bound of what fill sends)
        assert o.long_context_tokens == WINDOW - 1024


def test_a_document_that_fits_is_priced_exactly(openai_server: ScriptedOpenAIServer) -> None:
    document = PARAGRAPH * 20
    openai_server.responder = lambda body: "Thirty-one years."
    route = lcs.SelfRoute(llm=chat_openai(openai_server), document=document)
    out = route.invoke("How long did Mara Holt keep the lamp?")
    prompt = sr.Prompts().long_context_prompt("How long did Mara Holt keep the lamp?", document)
    # exact, in the provider's tokens (issue 17): the local count times the provider/local ratio
    # the server's usage shows on this call's RAG prompt
    from selfroute._flow._counterfactual import provider_ratio

    ratio = provider_ratio(out.result.steps)
    assert ratio is not None and out.result.long_context_tokens_source == "provider_scaled"
    local = sr.default_token_counter().count(prompt)
    assert out.long_context_tokens == pytest.approx(local * ratio, abs=2)
    assert out.result.context is not None and out.result.context["strategy"] == "none"
