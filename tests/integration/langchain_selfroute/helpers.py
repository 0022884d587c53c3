"""Scripted loopback responders for the LangChain adapter's integration tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

import selfroute as sr
from tests.conformance.scenarios import LC_MODEL, LC_USAGE, RAG_MODEL, RAG_USAGE
from tests.support._loopback import Reply, last_user_text
from tests.support.clients import chat_google, chat_openai
from tests.unit.langchain_selfroute.fakes import RAG_MARK

__all__ = ["PROVIDERS", "Provider", "prompts_sent", "scripted", "stage_of"]


def stage_of(prompt: str) -> str:
    """``rag`` for the RAG-and-route prompt, else ``long_context``."""
    return "rag" if RAG_MARK in prompt else "long_context"


def scripted(
    rag: str | Callable[[str], str],
    lc: str = "In 1901.",
    *,
    rag_usage: sr.Usage = RAG_USAGE,
    lc_usage: sr.Usage = LC_USAGE,
    rag_model: str | None = RAG_MODEL,
    lc_model: str | None = LC_MODEL,
    **reply: Any,
) -> Callable[[dict[str, Any]], Reply]:
    """A responder answering the RAG prompt with ``rag`` (or ``rag(prompt)``) and the
    long-context prompt with ``lc``, reporting the given usage and model names
    (``None`` echoes the requested model)."""

    def responder(body: dict[str, Any]) -> Reply:
        prompt = last_user_text(body)
        if stage_of(prompt) == "rag":
            text = rag(prompt) if callable(rag) else rag
            usage, model = rag_usage, rag_model
        else:
            text, usage, model = lc, lc_usage, lc_model
        return Reply(
            text,
            prompt_tokens=usage.input_tokens,
            completion_tokens=usage.output_tokens,
            model=model,
            **reply,
        )

    return responder


class Provider:
    """One real client family against its loopback server."""

    def __init__(self, name: str, server: Any) -> None:
        self.name = name
        self.server = server

    def llm(self, **kw: Any) -> Any:
        """A real chat model pointed at the loopback server."""
        if self.name == "openai":
            # An unhashable timeout gives each client its own httpx client: langchain-openai
            # caches async clients by base URL, and a cached one is bound to the event loop of
            # an earlier test.
            return chat_openai(self.server, **{"timeout": httpx.Timeout(10.0), **kw})
        return chat_google(self.server, **kw)

    def script(self, responder: Callable[[dict[str, Any]], Reply]) -> None:
        self.server.responder = responder


PROVIDERS = ["openai", "gemini"]


def prompts_sent(server: Any) -> list[str]:
    """The user prompt of every request the server received."""
    return [last_user_text(body) for body in server.requests]
