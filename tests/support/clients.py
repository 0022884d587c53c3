"""Real model clients pointed at the loopback servers (never at the internet)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_google_genai import ChatGoogleGenerativeAI
    from langchain_openai import ChatOpenAI
    from llama_index.llms.openai import OpenAI

    from tests.support.gemini_server import ScriptedGeminiServer
    from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["chat_google", "chat_openai", "llamaindex_openai", "merge_chunks"]


def merge_chunks(chunks: Iterable[Any]) -> Any:
    """Sum streamed LangChain message chunks into one (``chunk + chunk``), like LangChain does."""
    iterator = iter(chunks)
    try:
        full = next(iterator)
    except StopIteration:
        raise ValueError("merge_chunks() got no chunks") from None
    for chunk in iterator:
        full = full + chunk
    return full


def chat_openai(server: ScriptedOpenAIServer, **kw: Any) -> ChatOpenAI:
    """A real ``langchain_openai.ChatOpenAI`` talking to ``server``.

    Defaults: ``model="gpt-4o-mini"``, ``api_key="dummy"``, ``stream_usage=True``,
    ``max_retries=0``, ``timeout=10``; every default can be overridden through ``kw``.
    """
    from langchain_openai import ChatOpenAI

    params: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "api_key": "dummy",
        "stream_usage": True,
        "max_retries": 0,
        "timeout": 10,
        **kw,
        "base_url": server.base_url,
    }
    return ChatOpenAI(**params)


def chat_google(server: ScriptedGeminiServer, **kw: Any) -> ChatGoogleGenerativeAI:
    """A real ``langchain_google_genai.ChatGoogleGenerativeAI`` talking to ``server``.

    Defaults: ``model="gemini-2.5-flash"``, ``google_api_key="dummy"``, ``max_retries=1``
    (the Google SDK reads 0 as "its default"; 1 means a single attempt), ``timeout=10``.
    """
    from langchain_google_genai import ChatGoogleGenerativeAI

    params: dict[str, Any] = {
        "model": "gemini-2.5-flash",
        "google_api_key": "dummy",
        "max_retries": 1,
        "timeout": 10,
        **kw,
        "base_url": server.base_url,
    }
    return ChatGoogleGenerativeAI(**params)


def llamaindex_openai(server: ScriptedOpenAIServer, **kw: Any) -> OpenAI:
    """A real LlamaIndex ``llama_index.llms.openai.OpenAI`` LLM talking to ``server``.

    Defaults: ``model="gpt-4o-mini"`` (LlamaIndex needs a known model name for its metadata),
    ``api_key="dummy"``, ``max_retries=0``, ``timeout=10`` and
    ``additional_kwargs={"stream_options": {"include_usage": True}}`` so streamed responses end
    with a usage chunk (LlamaIndex drops ``stream_options`` on non-streaming calls).
    """
    from llama_index.llms.openai import OpenAI

    params: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "api_key": "dummy",
        "max_retries": 0,
        "timeout": 10,
        "additional_kwargs": {"stream_options": {"include_usage": True}},
        **kw,
        "api_base": server.base_url,
    }
    return OpenAI(**params)
