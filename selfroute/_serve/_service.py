"""One collection, answered asynchronously: what ``selfroute mcp`` and ``selfroute serve`` call.

:class:`RouteService` is ``ask``'s setup (:func:`selfroute.cli._commands.route_setup`: the same
settings, store, retriever and model specs) with the core's flow driven by the core's **async**
driver (:func:`selfroute.adrive`). :class:`AsyncHandler` only translates the flow's steps into
awaited calls: the store's retriever in a worker thread (chromadb and BM25 are sync, CPU and disk
bound), the models through :mod:`selfroute._serve._clients`. No routing logic lives here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from selfroute._errors import InvalidInputError, SelfRouteError
from selfroute._faults import classified
from selfroute._fitting import ContextDocument
from selfroute._flow import (
    FlowEvent,
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    ResultEvent,
    Retrieve,
    adrive,
    arun_flow,
    self_route_flow,
)
from selfroute._question import validate_question
from selfroute._result import Passage, RouteResult, Stage
from selfroute._serve._clients import AsyncChatClient, async_client
from selfroute.cli._commands import RouteSetup

__all__ = ["AsyncHandler", "Busy", "Observer", "RouteService", "Slots", "StepNotice", "source_ref"]

logger = logging.getLogger("selfroute")

#: ``await on_step(notice)`` before each step of a question (progress reports).
StepCallback = Callable[["StepNotice"], Awaitable[None]]


class Busy(SelfRouteError):
    """No slot freed up within the queue timeout."""


class Slots(Protocol):
    """A concurrency limit: ``async with slots.slot(): ...`` answers one question."""

    def slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Wait for a free slot (or raise when none frees up in time)."""
        ...


#: ``observer(collection, result, seconds)`` after each answered question (metrics).
Observer = Callable[[str, RouteResult, float], None]


@dataclass(frozen=True)
class StepNotice:
    """A step about to start.

    Attributes:
        step: ``retrieve``, ``rag``, ``load_long_context`` or ``long_context``.
        message: What is happening, for a person.
    """

    step: str
    message: str


class AsyncHandler:
    """The async step handler of the server.

    Args:
        setup: ``ask``'s source (retriever and long context).
        clients: The async model client of each stage.
        on_step: Awaited before each step (progress), or ``None``.
    """

    def __init__(
        self,
        setup: RouteSetup,
        clients: dict[Stage, AsyncChatClient],
        on_step: StepCallback | None = None,
    ) -> None:
        self.source = setup.source
        self.clients = clients
        self.on_step = on_step

    async def _notify(self, step: str, message: str) -> None:
        if self.on_step is not None:
            await self.on_step(StepNotice(step, message))

    async def aretrieve(self, step: Retrieve) -> Sequence[Passage]:
        """The top-k passages (the sync retriever in a worker thread)."""
        await self._notify("retrieve", f"retrieving the top {step.k} chunks")
        return list(await asyncio.to_thread(self.source.retrieve, step.question, step.k))

    async def _structured(self, step: Generate) -> Generation | None:
        if step.structured is None:
            return None
        return await self.clients[step.stage].agenerate_structured(step.structured)

    async def _announce(self, step: Generate) -> None:
        if step.stage is Stage.RAG:
            await self._notify("rag", "asking the RAG model to answer from the chunks")
        else:
            await self._notify("long_context", "asking the long-context model over the documents")

    async def agenerate(self, step: Generate) -> Generation:
        """One awaited model call (structured when the step offers it and the model has it)."""
        await self._announce(step)
        client = self.clients[step.stage]
        with classified(step.stage, client.name):
            structured = await self._structured(step)
            return structured if structured is not None else await client.agenerate(step.prompt)

    async def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        """A streamed model call. A structured verdict streams its object's JSON text when the
        client can (``astream_structured``), else it is one call, delivered as one piece."""
        await self._announce(step)
        client = self.clients[step.stage]
        with classified(step.stage, client.name):
            streamed = getattr(client, "astream_structured", None)
            if step.structured is not None and streamed is not None:
                async for chunk in streamed(step.structured):
                    yield chunk
                return
            structured = await self._structured(step)
            if structured is not None:
                yield GenerationChunk.of(structured)
                return
            async for chunk in client.astream(step.prompt):
                yield chunk

    async def aload_long_context(self, step: LoadLongContext) -> list[ContextDocument] | None:
        """The documents of the retrieved chunks (in a worker thread)."""
        await self._notify("load_long_context", "loading the whole documents")
        docs = await asyncio.to_thread(self.source.long_context, step.passages)
        return None if docs is None else list(docs)


def source_ref(passage: Passage) -> dict[str, Any]:
    """Where a passage comes from: ``document`` (the file, else the document id), ``chunk`` (its
    index in the document), ``doc_id``, ``score`` and ``text``."""
    meta = passage.metadata or {}
    chunk = meta.get("chunk_index")
    score = passage.score if passage.score is not None else meta.get("score")
    return {
        "document": str(meta.get("source") or passage.doc_id or meta.get("doc_id") or ""),
        "doc_id": passage.doc_id or meta.get("doc_id"),
        "chunk": int(chunk) if isinstance(chunk, int) else None,
        "score": float(score) if isinstance(score, (int, float)) else None,
        "text": passage.text,
    }


class RouteService:
    """Self-Route over one collection (or ``--doc`` file), asynchronously.

    Args:
        setup: ``ask``'s setup (:func:`selfroute.cli._commands.route_setup`).
        max_question_chars: Longer questions are refused before any work.
        name: The collection this service answers over (for stats and errors).
    """

    def __init__(self, setup: RouteSetup, *, max_question_chars: int, name: str) -> None:
        self.slots: Slots | None = None
        self.observer: Observer | None = None
        self.setup = setup
        self.name = name
        self.max_question_chars = max_question_chars
        rag = setup.clients[Stage.RAG]
        lc = setup.clients[Stage.LONG_CONTEXT]
        arag = async_client(rag)
        self.clients: dict[Stage, AsyncChatClient] = {
            Stage.RAG: arag,
            Stage.LONG_CONTEXT: arag if lc is rag else async_client(lc),
        }

    def warm(self) -> None:
        """Load now what the first question would load (before the server says it is ready):
        the token counter's tokenizer, and the retriever's embedding, BM25 index and store
        reader (one retrieval of a throwaway query). A retrieval that fails here fails again,
        with its error, on the question that needs it: warming never stops a start."""
        self.setup.config.counter.count("selfroute warm-up")
        try:
            self.setup.source.retrieve("selfroute warm-up", 1)
        except Exception as exc:  # the first question reports it, in its own words
            logger.debug("warming the retriever failed: %s", type(exc).__name__)

    def check(self, question: object) -> str:
        """The question, validated (the core's checks, and the length limit).

        Raises:
            InvalidInputError: Not text, empty, invalid, or too long.
        """
        text = validate_question(question)
        if len(text) > self.max_question_chars:
            raise InvalidInputError(
                f"question is {len(text):,} characters; the limit is {self.max_question_chars:,} "
                "(--max-question-chars)"
            )
        return text

    def _handler(self, on_step: StepCallback | None) -> AsyncHandler:
        return AsyncHandler(self.setup, self.clients, on_step)

    def _slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        return self.slots.slot() if self.slots is not None else contextlib.nullcontext()

    def _observe(self, result: RouteResult, t0: float) -> None:
        if self.observer is not None:
            self.observer(self.name, result, time.perf_counter() - t0)

    async def answer(self, question: str, *, on_step: StepCallback | None = None) -> RouteResult:
        """Answer one question (the core's flow on the async driver), in a free slot.

        Raises:
            InvalidInputError: A bad question (before waiting for a slot).
        """
        flow = self_route_flow(self.check(question), self.setup.config)
        async with self._slot():
            t0 = time.perf_counter()
            result = await arun_flow(flow, self._handler(on_step))
        self._observe(result, t0)
        return result

    async def stream(self, question: str) -> AsyncIterator[FlowEvent]:
        """The core's stream events of one question (answer text as it can be shown), in a free
        slot (the question is checked before the first event is asked for)."""
        flow = self_route_flow(self.check(question), self.setup.config)
        async with self._slot():
            t0 = time.perf_counter()
            events = adrive(flow, self._handler(None), stream=True)
            try:
                async for event in events:
                    if isinstance(event, ResultEvent):
                        self._observe(event.result, t0)
                    yield event
            finally:
                await events.aclose()  # type: ignore[attr-defined]

    async def search(self, query: str, k: int) -> list[dict[str, Any]]:
        """The top ``k`` chunks for ``query`` (no model call)."""
        text = self.check(query)
        passages = await asyncio.to_thread(self.setup.source.retrieve, text, k)
        return [source_ref(p) for p in passages]

    async def stats(self) -> dict[str, Any]:
        """What the store holds: documents, chunks, words, embedding, index state."""
        store = self.setup.store
        if store is None:
            return {"collection": self.name, "documents": 1, "retrieval": self.setup.retrieval}
        stats = await asyncio.to_thread(store.stats)
        data = stats.to_dict()
        data["retrieval"] = self.setup.retrieval
        data["models"] = {
            "rag": str(self.setup.rag),
            "long_context": str(self.setup.long_context),
        }
        return data

    async def aclose(self) -> None:
        """Close the model clients' connections."""
        for client in {id(c): c for c in self.clients.values()}.values():
            await client.aclose()
