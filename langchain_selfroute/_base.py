"""The ``Runnable`` surface of :class:`~langchain_selfroute.SelfRoute`.

:class:`RouteRunnable` is the LangChain side of a route: ``invoke``/``ainvoke``, ``batch``/
``abatch``, ``stream``/``astream``/``transform``/``atransform`` (the core's drivers' events as
:class:`SelfRouteChunk` mappings, :class:`~langchain_selfroute._stream.EventChunker`) and the
other forms (``answer_only``, ``as_tool``). It runs whatever flow and handler
:meth:`RouteRunnable._start` gives for one input; ``SelfRoute`` builds those from its settings.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Generator, Iterator, Sequence
from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableConfig, RunnableSerializable
from langchain_core.tools import BaseTool

from langchain_selfroute._handlers import LangChainHandler
from langchain_selfroute._input import SelfRouteInput, SelfRouteInputDict, join_inputs
from langchain_selfroute._output import SelfRouteChunk, SelfRouteOutput
from langchain_selfroute._stream import EventChunker
from selfroute import ConfigurationError, RouteResult
from selfroute.flow import Step, adrive, arun_flow, drive, run_flow

__all__ = ["RouteRunnable"]


def _step_shape(value: Any, run_manager: Any, config: Any) -> None:
    """The parameters LangChain looks for in a runnable's step (``run_manager``, ``config``)."""


#: The signature of every step handed to ``_call_with_config`` and friends. LangChain inspects
#: the step on every call (``accepts_config``/``accepts_run_manager``); a bound method costs
#: ~30 µs to inspect, a function carrying its ``__signature__`` ~4 µs.
_STEP_SIGNATURE = inspect.signature(_step_shape)


def _step(fn: Callable[[Any, Any, Any], Any]) -> Any:
    """``fn`` (a bound ``_invoke``/``_transform``...) as a step whose signature is known."""

    def step(value: Any, run_manager: Any, config: Any) -> Any:
        return fn(value, run_manager, config)

    step.__signature__ = _STEP_SIGNATURE  # type: ignore[attr-defined]
    return step


class RouteRunnable(RunnableSerializable[SelfRouteInput, SelfRouteOutput]):
    """Invoke, batch and stream a route whose subclass starts the flow (see the module docstring)."""

    def _start(
        self,
        value: Any,
        config: RunnableConfig,
        run_manager: CallbackManagerForChainRun | AsyncCallbackManagerForChainRun,
    ) -> tuple[Generator[Step, Any, RouteResult], LangChainHandler, dict[str, Any]]:
        """``(flow, handler, passed-through input keys)`` for one input (the subclass's)."""
        raise NotImplementedError

    @classmethod
    def is_lc_serializable(cls) -> bool:
        """Not serializable with ``dumpd`` (retrievers and stores are live objects)."""
        return False

    @property
    def InputType(self) -> Any:
        """A question string, a :class:`SelfRouteInputDict` (extra keys allowed) or messages."""
        return str | SelfRouteInputDict | dict[str, Any] | list[BaseMessage]

    @property
    def OutputType(self) -> type[SelfRouteOutput]:
        """:class:`SelfRouteOutput`."""
        return SelfRouteOutput

    # invoke -----------------------------------------------------------------------------------
    def _invoke(
        self, value: Any, run_manager: CallbackManagerForChainRun, config: RunnableConfig
    ) -> SelfRouteOutput:
        flow, handler, passthrough = self._start(value, config, run_manager)
        result = run_flow(flow, handler)
        return SelfRouteOutput.from_result(result, passthrough, handler.long_context_documents)

    async def _ainvoke(
        self, value: Any, run_manager: AsyncCallbackManagerForChainRun, config: RunnableConfig
    ) -> SelfRouteOutput:
        flow, handler, passthrough = self._start(value, config, run_manager)
        result = await arun_flow(flow, handler)
        return SelfRouteOutput.from_result(result, passthrough, handler.long_context_documents)

    def invoke(
        self, input: SelfRouteInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> SelfRouteOutput:
        """Answer one question (RAG first, long context only when the RAG step declines)."""
        return self._call_with_config(
            _step(self._invoke), input, config, run_type="chain", **kwargs
        )

    async def ainvoke(
        self, input: SelfRouteInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> SelfRouteOutput:
        """Async :meth:`invoke`: awaits the retriever and models, never blocks the event loop."""
        return await self._acall_with_config(
            _step(self._ainvoke), input, config, run_type="chain", **kwargs
        )

    # Typed with Sequence so that a list[str] (or of dicts) is accepted as it is.
    def batch(
        self,
        inputs: Sequence[SelfRouteInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[SelfRouteOutput]:
        """Answer many questions concurrently (``max_concurrency`` in the config caps it)."""
        return super().batch(list(inputs), config, return_exceptions=return_exceptions, **kwargs)

    async def abatch(
        self,
        inputs: Sequence[SelfRouteInput],
        config: RunnableConfig | list[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[SelfRouteOutput]:
        """Async :meth:`batch`."""
        return await super().abatch(
            list(inputs), config, return_exceptions=return_exceptions, **kwargs
        )

    # streaming --------------------------------------------------------------------------------
    def _transform(
        self,
        inputs: Iterator[Any],
        run_manager: CallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> Iterator[SelfRouteChunk]:
        flow, handler, passthrough = self._start(join_inputs(inputs), config, run_manager)
        chunker = EventChunker(passthrough, lambda: handler.long_context_documents)
        for event in drive(flow, handler, stream=True):
            yield from chunker.chunks(event)

    async def _atransform(
        self,
        inputs: AsyncIterator[Any],
        run_manager: AsyncCallbackManagerForChainRun,
        config: RunnableConfig,
    ) -> AsyncIterator[SelfRouteChunk]:
        value = join_inputs([c async for c in inputs])
        flow, handler, passthrough = self._start(value, config, run_manager)
        chunker = EventChunker(passthrough, lambda: handler.long_context_documents)
        async for event in adrive(flow, handler, stream=True):
            for chunk in chunker.chunks(event):
                yield chunk

    # SelfRouteChunk is a SelfRouteOutput-shaped mapping (the chunks add up to the output) but
    # not a SelfRouteOutput: the stream methods are typed with it.
    def transform(  # type: ignore[override]
        self, input: Iterator[SelfRouteInput], config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[SelfRouteChunk]:
        """Stream from a streamed input (the input chunks are joined first)."""
        # LangChain's stream generator itself (as lazy: nothing runs before the first chunk is
        # asked for), not a generator around it: a layer would cost every chunk a resumption.
        transformer: Any = _step(self._transform)
        chunks = self._transform_stream_with_config(
            input, transformer, config, run_type="chain", **kwargs
        )
        return cast(Iterator[SelfRouteChunk], chunks)

    def stream(  # type: ignore[override]
        self, input: SelfRouteInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[SelfRouteChunk]:
        """Stream the answer as :class:`SelfRouteChunk` mappings: ``{"answer": delta}`` chunks
        (each knowing the route), then the other keys. Nothing is sent before there is answer
        text or the result, so ``with_fallbacks`` falls back on a failure of either step. RAG-step
        text is held back until it can no longer be the start of a decline. The chunks add up to
        :meth:`invoke`'s output."""
        return self.transform(iter([input]), config, **kwargs)

    def atransform(  # type: ignore[override]
        self,
        input: AsyncIterator[SelfRouteInput],
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[SelfRouteChunk]:
        """Async :meth:`transform`."""
        # LangChain's async generator itself (lazy too), not one around it (see transform).
        transformer: Any = _step(self._atransform)
        chunks = self._atransform_stream_with_config(
            input, transformer, config, run_type="chain", **kwargs
        )
        return cast(AsyncIterator[SelfRouteChunk], chunks)

    def astream(  # type: ignore[override]
        self, input: SelfRouteInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[SelfRouteChunk]:
        """Async :meth:`stream`."""

        async def one() -> AsyncIterator[SelfRouteInput]:
            yield input

        return self.atransform(one(), config, **kwargs)

    # other forms ------------------------------------------------------------------------------
    def answer_only(self) -> Runnable[SelfRouteInput, str]:
        """This route with a string output: ``invoke`` returns the answer, ``stream`` yields its
        text deltas (for ``| StrOutputParser()`` and string chains).

        A string stream cannot withdraw text: in the rare case of a retraction (a refusal whose
        opening looked like an answer), the joined stream starts with the withdrawn text; use
        the mapping form (``route.stream``) to see retractions.
        """
        return self.pick("answer").with_config(run_name="SelfRouteAnswer")

    def as_retrieval_chain(self) -> Runnable[Any, dict[str, Any]]:
        """This route in ``create_retrieval_chain``'s shape, to swap one for the other.

        Takes ``{"input": question, "chat_history": [...], ...}`` and returns a dict with every
        input key passed through, ``context`` (the documents the answer was written from: the
        retrieved chunks when the RAG step answered, else the long-context documents) and
        ``answer`` (a string); ``selfroute`` holds the whole :class:`SelfRouteOutput`. It
        streams like ``create_retrieval_chain``: addable dicts, ``{"answer": delta}`` chunks
        then one with the other keys (nothing before answer text, so ``with_fallbacks`` works).
        As with :meth:`answer_only`, a joined stream cannot withdraw text in the rare case of
        a retraction.
        """
        from langchain_selfroute._retrieval_chain import retrieval_chain_form

        return self | retrieval_chain_form()

    def as_tool(
        self,
        args_schema: Any = None,
        *,
        name: str | None = None,
        description: str | None = None,
        arg_types: dict[str, type] | None = None,
    ) -> BaseTool:
        """This route as an agent tool (:func:`~langchain_selfroute.create_selfroute_tool`): the
        agent reads the short answer (or "not found in the documents" when it abstained, never
        the bare decline word), ``ToolMessage.artifact`` keeps the whole result.

        ``args_schema`` and ``arg_types`` are not supported: the tool takes one ``question``.
        """
        from langchain_selfroute._tool import DEFAULT_TOOL_DESCRIPTION, create_selfroute_tool

        if args_schema is not None or arg_types is not None:
            raise ConfigurationError(
                "SelfRoute.as_tool takes one 'question' argument; args_schema/arg_types are not "
                "supported (wrap the route in your own runnable to change them)"
            )
        return create_selfroute_tool(
            self,
            name=name or "answer_from_documents",
            description=description or DEFAULT_TOOL_DESCRIPTION,
        )
