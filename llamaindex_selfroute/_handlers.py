"""The step handler: the flow's steps translated into LlamaIndex calls (sync and async).

No routing happens here. ``retrieve`` calls the retriever (and node postprocessors),
``generate``/``stream`` call the stage's LLM with the prompt the flow rendered and report what the
provider said about usage, ``load_long_context`` asks the long-context source. The async methods
only await (``aretrieve``, ``achat``, ``astream_chat`` ...); they never call the sync ones.

A RAG step offered in structured form (``verdict="structured"``/``"auto"``) goes to a
function-calling LLM as one required tool call (``chat_with_tools``); other LLMs get the plain
sentinel prompt (or, for ``verdict="structured"``, a ``ConfigurationError``).
"""

from __future__ import annotations

import gc
import inspect
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import replace
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, QueryBundle
from llama_index.core.tools import BaseTool
from llama_index_instrumentation import get_dispatcher

from llamaindex_selfroute._events import SelfRouteStepEndEvent, SelfRouteStepStartEvent
from llamaindex_selfroute._parents import LongContextSource
from llamaindex_selfroute._retrieval import RetrievalSteps, node_to_passage
from llamaindex_selfroute._structured import (
    ArgumentDeltas,
    raw_arguments,
    structured_support,
    tool_arguments,
    verdict_tool,
)
from llamaindex_selfroute._usage import (
    StreamUsage,
    finish_reason_from_response,
    model_from_response,
    usage_from_response,
)
from selfroute import Generation, Stage
from selfroute._faults import classified
from selfroute._structured_stream import complete_object
from selfroute.flow import (
    Generate,
    GenerationChunk,
    StructuredRequest,
    load_structured,
    structured_unsupported,
)

__all__ = ["LlamaIndexHandler", "configured_model_name", "node_to_passage"]

dispatcher = get_dispatcher(__name__)


def configured_model_name(llm: LLM) -> str | None:
    """The model name an LLM is configured with (``None`` when it does not say)."""
    try:
        name = llm.metadata.model_name
    except Exception:  # metadata of a third-party LLM may raise; the name is only a label
        return None
    return name if isinstance(name, str) and name and name != "unknown" else None


def _close(responses: Any) -> None:
    """Close a stream abandoned before its end (a cancelled call) down to the HTTP response.

    LlamaIndex wraps the provider's stream in generators (callbacks, instrumentation), and the
    OpenAI SDK's stream object is in a reference cycle with its own generator: closing the outer
    generator leaves the HTTP response open until the cycle collector runs, while the provider
    keeps generating. So the generators under ``responses`` (each suspended generator references
    the next: a local, or the iterator of its ``for`` loop) are closed innermost first; the
    innermost (the HTTP client's byte stream) closes the connection when closed.
    """
    if not inspect.isgenerator(responses):
        return
    chain: list[Any] = [responses]
    while len(chain) < 32:  # a suspended generator references what its frame holds
        refs = gc.get_referents(chain[-1])
        inner = next((r for r in refs if inspect.isgenerator(r) and r not in chain), None)
        if inner is None:
            break
        chain.append(inner)
    for generator in reversed(chain):
        generator.close()


def _is_chat_model(llm: LLM) -> bool:
    try:
        return bool(llm.metadata.is_chat_model)
    except Exception:  # same as above: fall back to the chat API, which every LLM has
        return True


class LlamaIndexHandler(RetrievalSteps):
    """Runs the flow's steps with a LlamaIndex retriever and LLMs.

    One handler serves one query (it keeps the caller's query bundle and, when streaming, the
    nodes retrieved ahead of the flow). Retrieval and the long context are
    :class:`~llamaindex_selfroute._retrieval.RetrievalSteps`; the model calls are here.

    Args:
        retriever: Any LlamaIndex retriever.
        llm: The RAG-step LLM.
        long_context_llm: The long-context LLM (defaults to ``llm``).
        long_context: Where the long context comes from (``None``: no long context).
        node_postprocessors: Applied to the retrieved nodes, in order.
        metadata_mode: How node metadata is rendered into the RAG prompt (``NONE``: text only).
        query_bundle: The caller's query bundle (keeps custom embeddings / embedding strings).
        llm_kwargs: Extra keyword arguments for every LLM call.
    """

    def __init__(
        self,
        *,
        retriever: BaseRetriever,
        llm: LLM,
        long_context_llm: LLM | None = None,
        long_context: LongContextSource | None = None,
        node_postprocessors: Sequence[BaseNodePostprocessor] = (),
        metadata_mode: MetadataMode = MetadataMode.NONE,
        query_bundle: QueryBundle | None = None,
        llm_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            retriever=retriever,
            long_context=long_context,
            node_postprocessors=node_postprocessors,
            metadata_mode=metadata_mode,
            query_bundle=query_bundle,
        )
        self.llms = {Stage.RAG: llm, Stage.LONG_CONTEXT: long_context_llm or llm}
        self.llm_kwargs = dict(llm_kwargs or {})

    # -- model calls -------------------------------------------------------------------------
    def _messages(self, llm: LLM, prompt: str) -> list[ChatMessage]:
        messages = [ChatMessage(role=MessageRole.USER, content=prompt)]
        extend = getattr(llm, "_extend_messages", None)  # adds the LLM's system_prompt, if any
        return list(extend(messages)) if callable(extend) else messages

    def _classified(self, step: Generate) -> Any:
        """Context of one model call: a provider rejection (401, 404 ``model_not_found`` ...)
        becomes a :class:`~selfroute.ModelConfigurationError` naming the stage and model."""
        return classified(step.stage, configured_model_name(self.llms[step.stage]))

    def _start(self, step: Generate, streaming: bool) -> LLM:
        llm = self.llms[step.stage]
        dispatcher.event(
            SelfRouteStepStartEvent(
                stage=step.stage.value,
                question=step.question,
                model=configured_model_name(llm),
                streaming=streaming,
            )
        )
        return llm

    def _end(self, step: Generate, gen: Generation) -> Generation:
        dispatcher.event(
            SelfRouteStepEndEvent(
                stage=step.stage.value,
                model=gen.model,
                text=gen.text,
                usage=gen.usage.to_dict() if gen.usage is not None else None,
            )
        )
        return gen

    def _generation(self, llm: LLM, response: Any, text: str | None) -> Generation:
        return Generation(
            text=text or "",
            usage=usage_from_response(response),
            model=model_from_response(response) or configured_model_name(llm),
            finish_reason=finish_reason_from_response(response),
        )

    # -- structured verdicts -----------------------------------------------------------------
    def _structured_llm(self, step: Generate) -> FunctionCallingLLM | None:
        """The stage's LLM if the step is offered in structured form and the LLM can do it.

        Raises:
            ConfigurationError: Structured output is required and the LLM cannot give it.
        """
        request = step.structured
        if request is None:
            return None
        llm = self.llms[step.stage]
        why = structured_support(llm)
        if why is not None:
            structured_unsupported(request.required, why)
            return None
        assert isinstance(llm, FunctionCallingLLM)
        return llm

    def _tool_request(
        self, llm: FunctionCallingLLM, request: StructuredRequest
    ) -> tuple[list[BaseTool], dict[str, Any]]:
        """The one required verdict tool and the arguments of ``chat_with_tools``."""
        messages = self._messages(llm, request.prompt)
        tools: list[BaseTool] = [verdict_tool(request.schema, request.name)]
        kwargs: dict[str, Any] = {
            "user_msg": messages[-1],
            "chat_history": messages[:-1],
            "tool_required": True,
            **self.llm_kwargs,
        }
        return tools, kwargs

    def _structured_generation(
        self, llm: FunctionCallingLLM, request: StructuredRequest, response: Any
    ) -> Generation:
        structured, error = tool_arguments(llm, response, request.name)
        raw = raw_arguments(response)
        if structured is not None and raw is not None and not complete_object(raw):
            # the integration's partial-JSON parser repairs a cut-off call: no verdict
            structured, error = None, f"the {request.name} tool call's arguments are cut off"
            text = raw
        elif structured is not None:
            text = json.dumps(structured, ensure_ascii=False)
        else:  # no valid tool call: the text may still hold the object
            text = str(getattr(getattr(response, "message", None), "content", None) or "")
            structured = load_structured(text)
            if structured is not None:
                error = None
        # with ``structured_error`` set the flow takes a plain decline in ``text`` as a decline
        # and anything else as garbled (to long context): never as an answer
        return Generation(
            text=text,
            usage=usage_from_response(response),
            model=model_from_response(response) or configured_model_name(llm),
            structured=structured,
            structured_error=error,
            finish_reason=finish_reason_from_response(response),
        )

    def _structured_call(self, step: Generate, llm: FunctionCallingLLM) -> Generation:
        assert step.structured is not None
        self._start(step, streaming=False)
        tools, kwargs = self._tool_request(llm, step.structured)
        with self._classified(step):
            response = llm.chat_with_tools(tools, **kwargs)
        return self._end(step, self._structured_generation(llm, step.structured, response))

    async def _astructured_call(self, step: Generate, llm: FunctionCallingLLM) -> Generation:
        assert step.structured is not None
        self._start(step, streaming=False)
        tools, kwargs = self._tool_request(llm, step.structured)
        with self._classified(step):
            response = await llm.achat_with_tools(tools, **kwargs)
        return self._end(step, self._structured_generation(llm, step.structured, response))

    # -- plain calls ---------------------------------------------------------------------------
    def _call(self, step: Generate) -> Generation:
        structured_llm = self._structured_llm(step)
        if structured_llm is not None:
            return self._structured_call(step, structured_llm)
        llm = self._start(step, streaming=False)
        with self._classified(step):
            if _is_chat_model(llm):
                chat = llm.chat(self._messages(llm, step.prompt), **self.llm_kwargs)
                gen = self._generation(llm, chat, chat.message.content)
            else:
                completion = llm.complete(step.prompt, **self.llm_kwargs)
                gen = self._generation(llm, completion, completion.text)
        return self._end(step, gen)

    async def _acall(self, step: Generate) -> Generation:
        structured_llm = self._structured_llm(step)
        if structured_llm is not None:
            return await self._astructured_call(step, structured_llm)
        llm = self._start(step, streaming=False)
        with self._classified(step):
            if _is_chat_model(llm):
                chat = await llm.achat(self._messages(llm, step.prompt), **self.llm_kwargs)
                gen = self._generation(llm, chat, chat.message.content)
            else:
                completion = await llm.acomplete(step.prompt, **self.llm_kwargs)
                gen = self._generation(llm, completion, completion.text)
        return self._end(step, gen)

    @dispatcher.span
    def rag_generate(self, step: Generate) -> Generation:
        """The RAG-step model call (its own instrumentation span)."""
        return self._call(step)

    @dispatcher.span
    def long_context_generate(self, step: Generate) -> Generation:
        """The long-context model call (its own instrumentation span)."""
        return self._call(step)

    @dispatcher.span
    async def arag_generate(self, step: Generate) -> Generation:
        """Async RAG-step model call (its own instrumentation span)."""
        return await self._acall(step)

    @dispatcher.span
    async def along_context_generate(self, step: Generate) -> Generation:
        """Async long-context model call (its own instrumentation span)."""
        return await self._acall(step)

    def generate(self, step: Generate) -> Generation:
        """Run the stage's LLM on the prompt."""
        if step.stage is Stage.RAG:
            return self.rag_generate(step)
        return self.long_context_generate(step)

    async def agenerate(self, step: Generate) -> Generation:
        """Async :meth:`generate`."""
        if step.stage is Stage.RAG:
            return await self.arag_generate(step)
        return await self.along_context_generate(step)

    def _stream_end(self, step: Generate, llm: LLM, acc: StreamUsage, parts: list[str]) -> Any:
        model, finish = acc.model or configured_model_name(llm), acc.finish_reason()
        gen = Generation(text="".join(parts), usage=acc.usage(), model=model, finish_reason=finish)
        self._end(step, gen)
        return GenerationChunk(text="", usage=gen.usage, model=model, finish_reason=finish)

    def stream(self, step: Generate) -> Iterator[GenerationChunk]:
        """Run the stage's LLM on the prompt, streaming text deltas; usage comes last.

        A structured step streams its tool call's arguments (the flow shows the answer once
        ``answerable`` is known), then the object.
        """
        structured_llm = self._structured_llm(step)
        if structured_llm is not None:
            yield from _stream_structured(self, step, structured_llm)
            return
        llm = self._start(step, streaming=True)
        acc, parts = StreamUsage(), []
        with self._classified(step):
            if _is_chat_model(llm):
                responses: Iterator[Any] = llm.stream_chat(
                    self._messages(llm, step.prompt), **self.llm_kwargs
                )
            else:
                responses = llm.stream_complete(step.prompt, **self.llm_kwargs)
            try:
                for response in responses:
                    acc.add(response)
                    delta = response.delta or ""
                    if delta:
                        parts.append(delta)
                        yield GenerationChunk(text=delta)
            finally:  # closed early (a cancelled call): close the provider's stream now
                _close(responses)
        yield self._stream_end(step, llm, acc, parts)

    async def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        """Async :meth:`stream`."""
        structured_llm = self._structured_llm(step)
        if structured_llm is not None:
            async for chunk in _astream_structured(self, step, structured_llm):
                yield chunk
            return
        llm = self._start(step, streaming=True)
        acc, parts = StreamUsage(), []
        with self._classified(step):
            if _is_chat_model(llm):
                responses: AsyncIterator[Any] = await llm.astream_chat(
                    self._messages(llm, step.prompt), **self.llm_kwargs
                )
            else:
                responses = await llm.astream_complete(step.prompt, **self.llm_kwargs)
            async for response in responses:
                acc.add(response)
                delta = response.delta or ""
                if delta:
                    parts.append(delta)
                    yield GenerationChunk(text=delta)
        yield self._stream_end(step, llm, acc, parts)


def _structured_end(
    handler: LlamaIndexHandler,
    step: Generate,
    llm: FunctionCallingLLM,
    last: Any,
    acc: StreamUsage,
) -> GenerationChunk:
    """The closing piece of a streamed tool call: the object read from the last response
    (which holds the whole call), usage and finish reason over the stream."""
    assert step.structured is not None
    if last is None:
        gen = Generation(text="", structured_error="the model's stream had no response")
    else:
        gen = handler._structured_generation(llm, step.structured, last)
    gen = replace(
        gen,
        usage=acc.usage() or gen.usage,
        model=acc.model or gen.model or configured_model_name(llm),
        finish_reason=acc.finish_reason(),
    )
    return GenerationChunk.of(handler._end(step, gen))


def _stream_structured(
    handler: LlamaIndexHandler, step: Generate, llm: FunctionCallingLLM
) -> Iterator[GenerationChunk]:
    """A structured call streamed (``stream_chat_with_tools``): the tool call's argument text
    piece by piece (``structured_delta``), then the object."""
    assert step.structured is not None
    handler._start(step, streaming=True)
    tools, kwargs = handler._tool_request(llm, step.structured)
    acc, deltas, last = StreamUsage(), ArgumentDeltas(), None
    with handler._classified(step):
        responses = llm.stream_chat_with_tools(tools, **kwargs)
        try:
            for response in responses:
                acc.add(response)
                last = response
                if delta := deltas.delta(response):
                    yield GenerationChunk(structured_delta=delta)
        finally:  # closed early (a cancelled call): close the provider's stream now
            _close(responses)
    yield _structured_end(handler, step, llm, last, acc)


async def _astream_structured(
    handler: LlamaIndexHandler, step: Generate, llm: FunctionCallingLLM
) -> AsyncIterator[GenerationChunk]:
    """Async :func:`_stream_structured`."""
    assert step.structured is not None
    handler._start(step, streaming=True)
    tools, kwargs = handler._tool_request(llm, step.structured)
    acc, deltas, last = StreamUsage(), ArgumentDeltas(), None
    with handler._classified(step):
        responses = await llm.astream_chat_with_tools(tools, **kwargs)
        async for response in responses:
            acc.add(response)
            last = response
            if delta := deltas.delta(response):
                yield GenerationChunk(structured_delta=delta)
    yield _structured_end(handler, step, llm, last, acc)
