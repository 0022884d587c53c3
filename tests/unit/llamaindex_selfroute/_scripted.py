"""Scripted LlamaIndex LLMs and retrievers for the adapter's unit tests (no network)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Callable, Generator, Sequence
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    ChatResponseAsyncGen,
    ChatResponseGen,
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
    MessageRole,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.llms.llm import ToolSelection
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from pydantic import PrivateAttr

import selfroute as sr
from tests.conformance.scenarios import LC_MODEL, LC_USAGE, RAG_MODEL, RAG_USAGE, Scenario

SYNC_METHODS = ("chat", "complete", "stream_chat", "stream_complete")


def _pieces(text: str) -> list[str]:
    """Split text into word-sized stream pieces that join back to ``text``."""
    out: list[str] = []
    for i, word in enumerate(text.split(" ")):
        out.append(word if i == 0 else " " + word)
    return [p for p in out if p] or ([text] if text else [])


class ScriptedLLM(CustomLLM):
    """Answers every prompt with ``reply`` (a string or ``prompt -> str``), reporting ``usage``.

    ``usage_style`` says where usage is reported: ``raw`` (``raw["usage"]`` dict, OpenAI
    style), ``kwargs`` (``additional_kwargs`` like LlamaIndex's OpenAI class) or ``none``.
    Streams one word per chunk with the usage on the last chunk only. Records every call.
    """

    reply: Any = ""
    usage: Any = None
    model: str = "scripted"
    chat_model: bool = True
    usage_style: str = "raw"
    delay_s: float = 0.0
    window: int = 128_000
    fail: Any = None
    _calls: list[str] = PrivateAttr(default_factory=list)
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _messages: list[list[ChatMessage]] = PrivateAttr(default_factory=list)

    @property
    def calls(self) -> list[str]:
        return self._calls

    @property
    def prompts(self) -> list[str]:
        return self._prompts

    @property
    def messages(self) -> list[list[ChatMessage]]:
        return self._messages

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.window,
            num_output=256,
            is_chat_model=self.chat_model,
            model_name=self.model,
        )

    # -- helpers ---------------------------------------------------------------------------
    def _text(self, prompt: str) -> str:
        if self.fail is not None:
            raise self.fail
        return self.reply(prompt) if callable(self.reply) else str(self.reply)

    def _raw(self, final: bool = True) -> dict[str, Any]:
        raw: dict[str, Any] = {"model": self.model}
        if final and self.usage is not None and self.usage_style == "raw":
            raw["usage"] = {
                "prompt_tokens": self.usage.input_tokens,
                "completion_tokens": self.usage.output_tokens,
                "total_tokens": self.usage.total_tokens,
            }
        return raw

    def _kwargs(self, final: bool = True) -> dict[str, Any]:
        if final and self.usage is not None and self.usage_style == "kwargs":
            return {
                "prompt_tokens": self.usage.input_tokens,
                "completion_tokens": self.usage.output_tokens,
                "total_tokens": self.usage.total_tokens,
            }
        return {}

    def _record(self, method: str, prompt: str, messages: Sequence[ChatMessage] = ()) -> str:
        self._calls.append(method)
        self._prompts.append(prompt)
        if messages:
            self._messages.append(list(messages))
        return self._text(prompt)

    @staticmethod
    def _prompt_of(messages: Sequence[ChatMessage]) -> str:
        return str(messages[-1].content or "")

    def _chat_response(self, text: str) -> ChatResponse:
        return ChatResponse(
            message=ChatMessage(role=MessageRole.ASSISTANT, content=text),
            raw=self._raw(),
            additional_kwargs=self._kwargs(),
        )

    def _completion(self, text: str) -> CompletionResponse:
        return CompletionResponse(text=text, raw=self._raw(), additional_kwargs=self._kwargs())

    def _chat_chunks(self, text: str) -> list[ChatResponse]:
        pieces = _pieces(text)
        out, so_far = [], ""
        for i, piece in enumerate(pieces):
            so_far += piece
            final = i == len(pieces) - 1
            out.append(
                ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, content=so_far),
                    delta=piece,
                    raw=self._raw(final),
                    additional_kwargs=self._kwargs(final),
                )
            )
        if not out:
            out.append(
                ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, content=""),
                    delta="",
                    raw=self._raw(),
                    additional_kwargs=self._kwargs(),
                )
            )
        return out

    def _completion_chunks(self, text: str) -> list[CompletionResponse]:
        return [
            CompletionResponse(
                text=str(c.message.content),
                delta=c.delta,
                raw=c.raw,
                additional_kwargs=c.additional_kwargs,
            )
            for c in self._chat_chunks(text)
        ]

    # -- sync ------------------------------------------------------------------------------
    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        return self._chat_response(self._record("chat", self._prompt_of(messages), messages))

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._completion(self._record("complete", prompt))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        text = self._record("stream_chat", self._prompt_of(messages), messages)

        def gen() -> Generator[ChatResponse, None, None]:
            yield from self._chat_chunks(text)

        return gen()

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = self._record("stream_complete", prompt)

        def gen() -> Generator[CompletionResponse, None, None]:
            yield from self._completion_chunks(text)

        return gen()

    # -- async -----------------------------------------------------------------------------
    async def _pause(self) -> None:
        await asyncio.sleep(self.delay_s)

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        await self._pause()
        return self._chat_response(self._record("achat", self._prompt_of(messages), messages))

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        await self._pause()
        return self._completion(self._record("acomplete", prompt))

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        text = self._record("astream_chat", self._prompt_of(messages), messages)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            for chunk in self._chat_chunks(text):
                await self._pause()
                yield chunk

        return gen()

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        text = self._record("astream_complete", prompt)

        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            for chunk in self._completion_chunks(text):
                await self._pause()
                yield chunk

        return gen()


class ScriptedToolLLM(ScriptedLLM, FunctionCallingLLM):
    """A function-calling :class:`ScriptedLLM`: ``chat_with_tools`` answers with a tool call.

    ``tool_reply`` is the call's arguments: a dict, raw argument text (``'{"answerable": tr'`` for
    garbled JSON), ``prompt -> either``, or ``None`` for no tool call (the model writes ``reply``
    as text instead). ``function_calling=False`` makes the metadata say the model cannot call
    tools. Tool calls are recorded as ``chat_with_tools`` / ``achat_with_tools``; ``tool_requests``
    keeps the tool specs and ``tool_required`` of each.
    """

    tool_reply: Any = None
    function_calling: bool = True
    _tool_requests: list[dict[str, Any]] = PrivateAttr(default_factory=list)

    @property
    def tool_requests(self) -> list[dict[str, Any]]:
        return self._tool_requests

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(
            context_window=self.window,
            num_output=256,
            is_chat_model=True,
            is_function_calling_model=self.function_calling,
            model_name=self.model,
        )

    def _prepare_chat_with_tools(
        self,
        tools: Sequence[Any],
        user_msg: str | ChatMessage | None = None,
        chat_history: list[ChatMessage] | None = None,
        verbose: bool = False,
        allow_parallel_tool_calls: bool = False,
        tool_required: bool = False,
        **kwargs: Any,
    ) -> dict[str, Any]:
        messages = list(chat_history or [])
        if isinstance(user_msg, str):
            user_msg = ChatMessage(role=MessageRole.USER, content=user_msg)
        if user_msg is not None:
            messages.append(user_msg)
        specs = [tool.metadata.to_openai_tool() for tool in tools]
        return {"messages": messages, "tools": specs, "tool_required": tool_required, **kwargs}

    def _tool_response(
        self, method: str, messages: Sequence[ChatMessage], kwargs: dict[str, Any]
    ) -> ChatResponse:
        prompt = self._prompt_of(messages)
        self._calls.append(method)
        self._prompts.append(prompt)
        self._messages.append(list(messages))
        self._tool_requests.append(
            {"tools": kwargs["tools"], "tool_required": kwargs.get("tool_required")}
        )
        if self.fail is not None:
            raise self.fail
        args = self.tool_reply(prompt) if callable(self.tool_reply) else self.tool_reply
        if args is None:
            return self._chat_response(self._text(prompt))
        name = kwargs["tools"][0]["function"]["name"]
        call = ToolCallBlock(tool_call_id="call-1", tool_name=name, tool_kwargs=args)
        return ChatResponse(
            message=ChatMessage(role=MessageRole.ASSISTANT, blocks=[call]),
            raw=self._raw(),
            additional_kwargs=self._kwargs(),
        )

    def _tool_chunks(self, response: ChatResponse) -> list[ChatResponse]:
        """A tool-call response streamed: the call's arguments growing a word at a time (as the
        OpenAI integration hands them out); a text response streamed as text."""
        calls = [b for b in response.message.blocks if isinstance(b, ToolCallBlock)]
        if not calls:
            return self._chat_chunks(str(response.message.content or ""))
        call = calls[0]
        args = call.tool_kwargs
        text = args if isinstance(args, str) else json.dumps(args)
        pieces, out, so_far = _pieces(text), [], ""
        for i, piece in enumerate(pieces):
            so_far += piece
            final = i == len(pieces) - 1
            block = ToolCallBlock(
                tool_call_id=call.tool_call_id, tool_name=call.tool_name, tool_kwargs=so_far
            )
            out.append(
                ChatResponse(
                    message=ChatMessage(role=MessageRole.ASSISTANT, blocks=[block]),
                    delta="",
                    raw=self._raw(final),
                    additional_kwargs=self._kwargs(final),
                )
            )
        return out

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        if "tools" not in kwargs:
            return super().stream_chat(messages, **kwargs)
        chunks = self._tool_chunks(self._tool_response("stream_chat_with_tools", messages, kwargs))

        def gen() -> Generator[ChatResponse, None, None]:
            yield from chunks

        return gen()

    @llm_chat_callback()
    async def astream_chat(
        self, messages: Sequence[ChatMessage], **kwargs: Any
    ) -> ChatResponseAsyncGen:
        if "tools" not in kwargs:
            return await super().astream_chat(messages, **kwargs)
        response = self._tool_response("astream_chat_with_tools", messages, kwargs)
        chunks = self._tool_chunks(response)

        async def gen() -> AsyncGenerator[ChatResponse, None]:
            for chunk in chunks:
                await self._pause()
                yield chunk

        return gen()

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        if "tools" in kwargs:
            return self._tool_response("chat_with_tools", messages, kwargs)
        return self._chat_response(self._record("chat", self._prompt_of(messages), messages))

    @llm_chat_callback()
    async def achat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        await self._pause()
        if "tools" in kwargs:
            return self._tool_response("achat_with_tools", messages, kwargs)
        return self._chat_response(self._record("achat", self._prompt_of(messages), messages))

    def get_tool_calls_from_response(
        self, response: ChatResponse, error_on_no_tool_call: bool = True, **kwargs: Any
    ) -> list[ToolSelection]:
        calls = [b for b in response.message.blocks if isinstance(b, ToolCallBlock)]
        if not calls and error_on_no_tool_call:
            raise ValueError("no tool call")
        out = []
        for call in calls:
            args = call.tool_kwargs
            if isinstance(args, str):  # like the OpenAI integration: unparseable -> {}
                try:
                    args = json.loads(args)
                except ValueError:
                    args = {}
            out.append(
                ToolSelection(
                    tool_id=call.tool_call_id or "", tool_name=call.tool_name, tool_kwargs=args
                )
            )
        return out


def make_node(
    text: str,
    doc_id: str | None = "doc-1",
    score: float = 1.0,
    metadata: dict[str, Any] | None = None,
) -> NodeWithScore:
    """A retrieved chunk of document ``doc_id``."""
    relationships = {}
    if doc_id is not None:
        relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    node = TextNode(text=text, metadata=dict(metadata or {}), relationships=relationships)
    return NodeWithScore(node=node, score=score)


class ScriptedRetriever(BaseRetriever):
    """Returns fixed nodes (or raises ``fail``); records sync and async calls and bundles."""

    def __init__(
        self,
        nodes: Sequence[NodeWithScore] | Callable[[str], Sequence[NodeWithScore]] = (),
        *,
        delay_s: float = 0.0,
        fail: Exception | None = None,
    ) -> None:
        super().__init__()
        self._nodes = nodes
        self.delay_s = delay_s
        self.fail = fail
        self.calls: list[str] = []
        self.bundles: list[QueryBundle] = []

    def _result(self, bundle: QueryBundle) -> list[NodeWithScore]:
        self.bundles.append(bundle)
        if self.fail is not None:
            raise self.fail
        nodes = self._nodes(bundle.query_str) if callable(self._nodes) else self._nodes
        return list(nodes)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("retrieve")
        return self._result(query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        self.calls.append("aretrieve")
        await asyncio.sleep(self.delay_s)
        return self._result(query_bundle)


def scenario_parts(
    scenario: Scenario, *, chat_model: bool = True, usage_style: str = "raw", delay_s: float = 0.0
) -> tuple[ScriptedRetriever, ScriptedLLM, ScriptedLLM]:
    """Retriever, RAG LLM and LC LLM scripted for a conformance scenario."""
    retriever = ScriptedRetriever(
        [make_node(t, "doc-1", score=1.0 - i / 10) for i, t in enumerate(scenario.passages)],
        delay_s=delay_s,
    )
    rag = ScriptedLLM(
        reply=scenario.rag_output,
        usage=RAG_USAGE,
        model=RAG_MODEL,
        chat_model=chat_model,
        usage_style=usage_style,
        delay_s=delay_s,
    )
    lc = ScriptedLLM(
        reply=scenario.lc_output,
        usage=LC_USAGE,
        model=LC_MODEL,
        chat_model=chat_model,
        usage_style=usage_style,
        delay_s=delay_s,
    )
    return retriever, rag, lc


def usage_tuple(usage: sr.Usage) -> tuple[int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.total_tokens)
