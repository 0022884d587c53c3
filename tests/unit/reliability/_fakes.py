"""Fakes shared by the reliability unit tests: a scripted, recording step handler."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import selfroute as sr

DOCUMENT = (
    "Grey Point lighthouse was kept by Mara Holt for thirty-one years. "
    "She was born in Dunmore in 1901. The lens was replaced in 1947. "
) * 40
PASSAGES = (
    "Grey Point lighthouse was kept by Mara Holt for thirty-one years.",
    "The lens was replaced in 1947.",
)
RAG_USAGE = sr.Usage.of(120, 6)
LC_USAGE = sr.Usage.of(1500, 9)

Behaviour = str | BaseException | Callable[[str], str | sr.Generation]


class ScriptedHandler:
    """A sync + async step handler whose model, retriever and loader are scripted.

    Args:
        rag: Text the RAG model writes, an exception to raise, or ``fn(prompt)``.
        lc: Same for the long-context model.
        passages: What the retriever returns, or an exception to raise.
        document: The long context (``None``: none), or an exception the loader raises.
        delay_s: Async only: ``await asyncio.sleep`` before each model answer.

    Attributes:
        prompts: ``(stage, prompt)`` of every model call, in order.
        retrievals: Questions given to the retriever.
    """

    def __init__(
        self,
        *,
        rag: Behaviour = "Thirty-one years.",
        lc: Behaviour = "In 1901.",
        passages: Sequence[str] | BaseException = PASSAGES,
        document: str | Sequence[Any] | BaseException | None = DOCUMENT,
        delay_s: float = 0.0,
    ) -> None:
        self.rag = rag
        self.lc = lc
        self.passages = passages
        self.document = document
        self.delay_s = delay_s
        self.prompts: list[tuple[sr.Stage, str]] = []
        self.retrievals: list[str] = []
        self._lock = threading.Lock()

    @property
    def model_calls(self) -> int:
        return len(self.prompts)

    # -- sync ----------------------------------------------------------------------------------
    def retrieve(self, step: sr.flow.Retrieve) -> Sequence[sr.Passage]:
        with self._lock:
            self.retrievals.append(step.question)
        if isinstance(self.passages, BaseException):
            raise self.passages
        return [sr.Passage(text=t, doc_id="doc-1") for t in self.passages[: step.k]]

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        with self._lock:
            self.prompts.append((step.stage, step.prompt))
        rag = step.stage is sr.Stage.RAG
        behaviour = self.rag if rag else self.lc
        if isinstance(behaviour, BaseException):
            raise behaviour
        out = behaviour(step.prompt) if callable(behaviour) else behaviour
        if not isinstance(out, str):
            return out  # a Generation, or junk on purpose
        return sr.Generation(
            out, usage=RAG_USAGE if rag else LC_USAGE, model="fake-rag" if rag else "fake-lc"
        )

    def stream(self, step: sr.flow.Generate) -> Iterable[sr.flow.GenerationChunk]:
        gen = self.generate(step)
        yield sr.flow.GenerationChunk(gen.text, gen.usage, gen.model)

    def load_long_context(self, step: sr.flow.LoadLongContext) -> Any:
        if isinstance(self.document, BaseException):
            raise self.document
        if self.document is None or isinstance(self.document, str):
            return None if self.document is None else [self.document]
        return list(self.document)

    # -- async ---------------------------------------------------------------------------------
    async def aretrieve(self, step: sr.flow.Retrieve) -> Sequence[sr.Passage]:
        await asyncio.sleep(0)
        return self.retrieve(step)

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        await asyncio.sleep(self.delay_s)
        return self.generate(step)

    async def astream(self, step: sr.flow.Generate) -> AsyncIterator[sr.flow.GenerationChunk]:
        gen = await self.agenerate(step)
        yield sr.flow.GenerationChunk(gen.text, gen.usage, gen.model)

    async def aload_long_context(self, step: sr.flow.LoadLongContext) -> Any:
        await asyncio.sleep(0)
        return self.load_long_context(step)


def run(handler: ScriptedHandler, question: Any, **config: Any) -> sr.RouteResult:
    """Run the flow synchronously with ``handler``."""
    return sr.flow.run_flow(sr.flow.self_route_flow(question, sr.RouteConfig(**config)), handler)


async def arun(handler: ScriptedHandler, question: Any, **config: Any) -> sr.RouteResult:
    """Run the flow asynchronously with ``handler``."""
    return await sr.flow.arun_flow(
        sr.flow.self_route_flow(question, sr.RouteConfig(**config)), handler
    )
