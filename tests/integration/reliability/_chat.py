"""A minimal step handler over a real LangChain chat model, for core-level fault tests.

It only translates steps into ``invoke``/``ainvoke`` calls (no routing logic), so the faults the
real provider client raises reach the core's flow unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

import selfroute as sr
from tests.unit.reliability._fakes import DOCUMENT, PASSAGES

RAG_MARK = "retrieved from a longer document"  # only the RAG prompts say this


def is_rag(text: str) -> bool:
    """Whether a user message is the RAG-step prompt."""
    return RAG_MARK in text


def _generation(message: Any) -> sr.Generation:
    meta = getattr(message, "usage_metadata", None)
    usage = sr.Usage.of(meta["input_tokens"], meta["output_tokens"]) if meta else None
    model = (getattr(message, "response_metadata", None) or {}).get("model_name")
    return sr.Generation(str(message.content), usage=usage, model=model)


class ChatHandler:
    """Sync + async handler: fixed passages, a fixed document, one chat model per stage."""

    def __init__(
        self,
        llm: Any,
        *,
        long_context_llm: Any = None,
        retrieve: Callable[[str, int], Sequence[sr.Passage]] | None = None,
        document: str | None = DOCUMENT,
    ) -> None:
        self.llms = {sr.Stage.RAG: llm, sr.Stage.LONG_CONTEXT: long_context_llm or llm}
        self._retrieve = retrieve or (
            lambda q, k: [sr.Passage(text=t, doc_id="doc-1") for t in PASSAGES[:k]]
        )
        self.document = document

    def retrieve(self, step: sr.flow.Retrieve) -> Sequence[sr.Passage]:
        return self._retrieve(step.question, step.k)

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        return _generation(self.llms[step.stage].invoke(step.prompt))

    def stream(
        self, step: sr.flow.Generate
    ) -> Iterable[sr.flow.GenerationChunk]:  # pragma: no cover
        gen = self.generate(step)
        yield sr.flow.GenerationChunk(gen.text, gen.usage, gen.model)

    def load_long_context(self, step: sr.flow.LoadLongContext) -> list[str] | None:
        return None if self.document is None else [self.document]

    async def aretrieve(self, step: sr.flow.Retrieve) -> Sequence[sr.Passage]:
        return self.retrieve(step)

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        return _generation(await self.llms[step.stage].ainvoke(step.prompt))

    async def astream(self, step: sr.flow.Generate) -> AsyncIterator[sr.flow.GenerationChunk]:
        gen = await self.agenerate(step)  # pragma: no cover
        yield sr.flow.GenerationChunk(gen.text, gen.usage, gen.model)  # pragma: no cover

    async def aload_long_context(self, step: sr.flow.LoadLongContext) -> list[str] | None:
        return self.load_long_context(step)
