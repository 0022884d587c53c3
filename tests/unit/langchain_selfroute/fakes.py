"""LangChain fakes for the adapter's unit tests: a scripted chat model and a list retriever.

The chat model tells the RAG prompt from the long-context prompt, answers each with its script,
reports usage the way providers do (``AIMessage.usage_metadata`` and
``response_metadata["model_name"]``), streams in small pieces with the usage on the last chunk,
and records every call (sync or async) so tests can assert which code path ran.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForLLMRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, PrivateAttr

import selfroute as sr
from langchain_selfroute import SelfRoute
from tests.conformance.scenarios import LC_MODEL, LC_USAGE, RAG_MODEL, RAG_USAGE, Scenario

#: Only the RAG prompt says this (the long-context prompt does not).
RAG_MARK = "retrieved from a longer document"


def usage_metadata(usage: sr.Usage | None) -> UsageMetadata | None:
    """LangChain's usage dict for a core usage."""
    if usage is None:
        return None
    return UsageMetadata(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        total_tokens=usage.total_tokens,
    )


def pieces(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of ``size`` characters (how tokens arrive)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ScriptedChatModel(BaseChatModel):
    """Answers the RAG prompt with ``rag_output`` and the long-context prompt with ``lc_output``.

    Attributes:
        delay_s: Sleep per call (``time.sleep`` on sync calls, ``asyncio.sleep`` on async ones).
        piece_chars: Streaming piece size.
        fail: ``{"rag"|"long_context": exception}`` raised on that stage.
        calls: ``(mode, stage, prompt)`` for every call; mode is ``sync``, ``async``,
            ``sync_stream`` or ``async_stream``.
        report_usage: Report usage (``False`` simulates a provider that reports none).
    """

    rag_output: str = "Thirty-one years."
    lc_output: str = "In 1901."
    rag_usage: Any = RAG_USAGE
    lc_usage: Any = LC_USAGE
    rag_model: str = RAG_MODEL
    lc_model: str = LC_MODEL
    model_name: str = "scripted"
    delay_s: float = 0.0
    piece_chars: int = 4
    fail: dict[str, Any] = Field(default_factory=dict)
    report_usage: bool = True
    calls: list[tuple[str, str, str]] = Field(default_factory=list)
    gate: Any = None  # an asyncio.Event the async path waits for, when set

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _in_flight: int = PrivateAttr(default=0)
    max_in_flight: int = 0
    emitted: int = 0  # streamed pieces produced so far

    @property
    def _llm_type(self) -> str:
        return "scripted"

    # script ---------------------------------------------------------------------------------
    def stage_of(self, messages: Sequence[BaseMessage]) -> str:
        return "rag" if RAG_MARK in str(messages[-1].content) else "long_context"

    def _script(self, stage: str) -> tuple[str, sr.Usage | None, str]:
        if stage == "rag":
            return self.rag_output, self.rag_usage, self.rag_model
        return self.lc_output, self.lc_usage, self.lc_model

    def _begin(self, mode: str, messages: Sequence[BaseMessage]) -> str:
        stage = self.stage_of(messages)
        self.calls.append((mode, stage, str(messages[-1].content)))
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        return stage

    def _end(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def _raise(self, stage: str) -> None:
        if stage in self.fail:
            raise self.fail[stage]

    def _message(self, stage: str) -> AIMessage:
        text, usage, model = self._script(stage)
        return AIMessage(
            content=text,
            usage_metadata=usage_metadata(usage) if self.report_usage else None,
            response_metadata={"model_name": model},
        )

    def _chunks(self, stage: str) -> list[AIMessageChunk]:
        text, usage, model = self._script(stage)
        out = [AIMessageChunk(content=p) for p in pieces(text, self.piece_chars)]
        out.append(
            AIMessageChunk(
                content="",
                usage_metadata=usage_metadata(usage) if self.report_usage else None,
                response_metadata={"model_name": model},
                chunk_position="last",
            )
        )
        return out

    def stage_calls(self, stage: str) -> list[tuple[str, str, str]]:
        return [c for c in self.calls if c[1] == stage]

    def modes(self) -> set[str]:
        return {c[0] for c in self.calls}

    # BaseChatModel --------------------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        stage = self._begin("sync", messages)
        try:
            if self.delay_s:
                time.sleep(self.delay_s)
            self._raise(stage)
            return ChatResult(generations=[ChatGeneration(message=self._message(stage))])
        finally:
            self._end()

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        stage = self._begin("async", messages)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            self._raise(stage)
            return ChatResult(generations=[ChatGeneration(message=self._message(stage))])
        finally:
            self._end()

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        stage = self._begin("sync_stream", messages)
        try:
            self._raise(stage)
            for chunk in self._chunks(stage):
                if self.delay_s:
                    time.sleep(self.delay_s)
                self.emitted += 1
                gen = ChatGenerationChunk(message=chunk)
                if run_manager is not None:
                    run_manager.on_llm_new_token(str(chunk.content), chunk=gen)
                yield gen
        finally:
            self._end()

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        stage = self._begin("async_stream", messages)
        try:
            self._raise(stage)
            for chunk in self._chunks(stage):
                await asyncio.sleep(self.delay_s)
                self.emitted += 1
                gen = ChatGenerationChunk(message=chunk)
                if run_manager is not None:
                    await run_manager.on_llm_new_token(str(chunk.content), chunk=gen)
                yield gen
        finally:
            self._end()


class VerdictChatModel(ScriptedChatModel):
    """A :class:`ScriptedChatModel` with tool calling, so ``with_structured_output`` works.

    LangChain's default ``with_structured_output`` binds the schema as the only tool; a call
    with tools bound answers with a tool call whose arguments come from ``rag_verdict`` (one
    dict for every call, or a list used in order, the last repeated). ``None`` in the script
    means no tool call: the reply is ``verdict_text`` as plain content.

    Attributes:
        verdict_text: Content of a structured reply (besides, or instead of, the tool call).
        structured_calls: ``(mode, tool name, tool_choice, prompt)`` of every call with tools.
    """

    rag_verdict: Any = Field(
        default_factory=lambda: {"answerable": True, "answer": "Thirty-one years."}
    )
    verdict_text: str = ""
    structured_calls: list[tuple[str, str, Any, str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "verdict-scripted"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[Any, BaseMessage]:
        formatted = [convert_to_openai_tool(t) for t in tools]
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def _next_verdict(self) -> Any:
        script = self.rag_verdict
        if isinstance(script, list):
            done = len(self.structured_calls) - 1
            return script[min(done, len(script) - 1)] if script else None
        return script

    def _tool_reply(self, mode: str, messages: Sequence[BaseMessage], kwargs: Any) -> AIMessage:
        stage = self._begin(mode, messages)
        try:
            tool = kwargs["tools"][0]["function"]["name"]
            prompt = str(messages[-1].content)
            self.structured_calls.append((mode, tool, kwargs.get("tool_choice"), prompt))
            self._raise(stage)
            _, usage, model = self._script(stage)
            args = self._next_verdict()
            calls = (
                []
                if args is None
                else [{"name": tool, "args": args, "id": "call-verdict", "type": "tool_call"}]
            )
            return AIMessage(
                content=self.verdict_text,
                tool_calls=calls,
                usage_metadata=usage_metadata(usage) if self.report_usage else None,
                response_metadata={"model_name": model},
            )
        finally:
            self._end()

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if kwargs.get("tools"):
            message = self._tool_reply("sync", messages, kwargs)
            return ChatResult(generations=[ChatGeneration(message=message)])
        return super()._generate(messages, stop, run_manager, **kwargs)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if kwargs.get("tools"):
            message = self._tool_reply("async", messages, kwargs)
            return ChatResult(generations=[ChatGeneration(message=message)])
        return await super()._agenerate(messages, stop, run_manager, **kwargs)

    def _tool_chunks(self, message: AIMessage) -> list[AIMessageChunk]:
        """A tool reply streamed: its content, then the call's argument text in pieces
        (``tool_call_chunks``, as provider integrations stream them), usage last."""
        out = [AIMessageChunk(content=message.content)] if message.content else []
        for call in message.tool_calls:
            args = json.dumps(call["args"])
            for i, piece in enumerate(pieces(args, self.piece_chars)):
                first = i == 0
                chunk = {
                    "name": call["name"] if first else None,
                    "args": piece,
                    "id": call["id"] if first else None,
                    "index": 0,
                }
                out.append(AIMessageChunk(content="", tool_call_chunks=[chunk]))
        out.append(
            AIMessageChunk(
                content="",
                usage_metadata=message.usage_metadata,
                response_metadata=message.response_metadata,
                chunk_position="last",
            )
        )
        return out

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        if not kwargs.get("tools"):
            yield from super()._stream(messages, stop, run_manager, **kwargs)
            return
        for chunk in self._tool_chunks(self._tool_reply("sync_stream", messages, kwargs)):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        if not kwargs.get("tools"):
            async for gen in super()._astream(messages, stop, run_manager, **kwargs):
                yield gen
            return
        for chunk in self._tool_chunks(self._tool_reply("async_stream", messages, kwargs)):
            await asyncio.sleep(self.delay_s)
            yield ChatGenerationChunk(message=chunk)


class KRetriever(BaseRetriever):
    """Returns the first ``k`` of ``docs`` (``k`` per call, like vector-store retrievers)."""

    docs: list[Document] = Field(default_factory=list)
    k: int = 4
    asked: list[int] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        n = self.k if k is None else k
        self.asked.append(n)
        return list(self.docs[:n])


class ListRetriever(BaseRetriever):
    """Returns ``docs`` for every query; records ``sync``/``async`` calls."""

    docs: list[Document] = Field(default_factory=list)
    delay_s: float = 0.0
    fail: Any = None
    calls: list[str] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("sync")
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return list(self.docs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        self.calls.append("async")
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return list(self.docs)


class ToolCallingModel(BaseChatModel):
    """Calls the first bound tool with ``question``, then answers with what the tool said."""

    question: str = "When was Mara Holt born?"
    tool_names: list[str] = Field(default_factory=list)
    seen: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "tool-calling-fake"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, BaseMessage]:
        self.tool_names = [t.name if isinstance(t, BaseTool) else t["name"] for t in tools]
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.seen.append(list(messages))
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if results:
            message = AIMessage(content=f"According to the documents: {results[-1].content}")
        else:
            message = AIMessage(
                content="",
                tool_calls=[
                    {
                        "name": self.tool_names[0],
                        "args": {"question": self.question},
                        "id": "call-1",
                        "type": "tool_call",
                    }
                ],
            )
        return ChatResult(generations=[ChatGeneration(message=message)])


def scenario_docs(scenario: Scenario) -> list[Document]:
    """The scenario's passages as chunk Documents of ``doc-1``."""
    return [
        Document(page_content=t, metadata={"doc_id": "doc-1", "chunk_index": i})
        for i, t in enumerate(scenario.passages)
    ]


def scenario_route(scenario: Scenario, **kwargs: Any) -> tuple[SelfRoute, ScriptedChatModel]:
    """A ``SelfRoute`` over the scenario: fake retriever, scripted model, fixed document, and the
    scenario's routing settings (``kwargs`` override them)."""
    model = ScriptedChatModel(rag_output=scenario.rag_output, lc_output=scenario.lc_output)
    route = SelfRoute(
        retriever=ListRetriever(docs=scenario_docs(scenario)),
        llm=model,
        document=scenario.document,
        **{**scenario.settings, **kwargs},
    )
    return route, model
