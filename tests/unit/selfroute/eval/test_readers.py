"""Readers: the oracle's matching, ChatModelReader over a fake LangChain model, model specs."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from selfroute import ConfigurationError, Stage
from selfroute.eval import ChatModelReader, ModelRequest, OracleReader, chat_model_from_spec
from tests.unit.selfroute.eval._fakes import DOCUMENT, item


def _request(context: str, answers=("granite blocks",)) -> ModelRequest:
    it = item("x", "What was it built from?", answers)
    return ModelRequest(f"Passage:\n{context}\nQ", context, it.question, it, "rag", Stage.RAG)


async def test_oracle_matches_on_word_boundaries_ignoring_case_and_punctuation() -> None:
    oracle = OracleReader()
    assert (await oracle.agenerate(_request("Built from GRANITE—blocks."))).text == "granite blocks"
    assert (await oracle.agenerate(_request("granite blockshire"))).text == "unanswerable"
    gen = await oracle.agenerate(_request(DOCUMENT, answers=("1947",)))
    assert gen.text == "1947" and gen.model == "oracle"
    assert gen.usage is not None and gen.usage.source == oracle.counter.source
    assert (await oracle.agenerate(_request("nothing", answers=()))).text == "unanswerable"


async def test_chat_model_reader_reads_text_usage_and_model() -> None:
    msg = AIMessage(
        content="Granite.",
        usage_metadata={
            "input_tokens": 40,
            "output_tokens": 2,
            "total_tokens": 42,
            "input_token_details": {"cache_read": 8},
        },
        response_metadata={"model_name": "fake-2024"},
    )
    reader = ChatModelReader(GenericFakeChatModel(messages=iter([msg])), name="fake")
    gen = await reader.agenerate(_request("granite"))
    assert gen.text == "Granite." and gen.model == "fake-2024"
    assert gen.usage is not None
    assert (gen.usage.input_tokens, gen.usage.output_tokens, gen.usage.cached_input_tokens) == (
        40,
        2,
        8,
    )
    assert gen.usage.source == "provider"
    bare = ChatModelReader(GenericFakeChatModel(messages=iter([AIMessage(content="x")])))
    assert (await bare.agenerate(_request("x"))).usage is None


def test_cache_identity_tracks_answer_relevant_settings_only() -> None:
    def ident(**kw):
        base = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k1", "temperature": 0.0}
        return ChatModelReader(chat_model_from_spec("openai:gpt-4o-mini", **{**base, **kw}))

    same = ident().cache_identity()
    assert ident(api_key="k2").cache_identity() == same
    assert ident(max_retries=5).cache_identity() == same
    assert ident(timeout=5).cache_identity() == same
    assert ident(temperature=0.5).cache_identity() != same
    assert ident(max_tokens=10).cache_identity() != same
    assert ident(base_url="http://127.0.0.1:8/v1").cache_identity() != same
    other = ChatModelReader(chat_model_from_spec("openai:gpt-4o", base_url="http://127.0.0.1:9/v1"))
    assert other.cache_identity() != same and other.model_name == "gpt-4o"


def test_specs() -> None:
    local = chat_model_from_spec("my-model", base_url="http://127.0.0.1:9/v1")
    assert type(local).__name__ == "ChatOpenAI" and local.model_name == "my-model"
    google = chat_model_from_spec("google:gemini-2.5-flash", api_key="k")
    assert type(google).__name__ == "ChatGoogleGenerativeAI"
    for bad, msg in [("", "non-empty"), ("openai:", "names no model"), ("x:y", "unknown provider")]:
        with pytest.raises(ConfigurationError, match=msg):
            chat_model_from_spec(bad)
    with pytest.raises(ConfigurationError, match="LangChain chat model"):
        ChatModelReader(object())
