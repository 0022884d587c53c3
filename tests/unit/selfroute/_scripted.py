"""Test helpers: a scripted step handler (sync and async) and a word-based token counter."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import selfroute as sr

DOCUMENT = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years. "
    "She was born in Dunmore in 1901. In the great storm of 1938 the supply boat could not land "
    "for six weeks. The lens was replaced in 1947 with an electric lamp. "
) * 4
PASSAGES = (
    "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years.",
    "In the great storm of 1938 the supply boat could not land for six weeks.",
)
RAG_USAGE = sr.Usage.of(120, 6)
LC_USAGE = sr.Usage.of(1500, 9)


@dataclass
class Scripted:
    """Answers each step from its fields and records the steps it saw.

    ``rag`` / ``lc`` are the model outputs; ``rag_chunks`` / ``lc_chunks`` split them for
    streaming (usage and model arrive on the last chunk). An ``*_error`` field is raised instead of
    answering that step. ``document=None`` means no long context is available.
    """

    rag: str = "Thirty-one years."
    lc: str = "In 1901."
    passages: Sequence[str] = PASSAGES
    document: str | None = DOCUMENT
    rag_usage: sr.Usage | None = RAG_USAGE
    lc_usage: sr.Usage | None = LC_USAGE
    rag_chunks: Sequence[str] | None = None
    lc_chunks: Sequence[str] | None = None
    retrieve_error: BaseException | None = None
    rag_error: BaseException | None = None
    lc_error: BaseException | None = None
    load_error: BaseException | None = None
    counterfactual_error: BaseException | None = None
    retrieve_result: Any = None
    generate_result: Any = None
    rag_outputs: Sequence[str] | None = None
    """Successive RAG outputs (one per k-ladder rung); overrides ``rag``."""
    structured: Any = None
    """What the model returns for a structured RAG step (a dict, or a list: one per rung);
    ``None``: the model cannot do structured output."""
    seen: list[Any] = field(default_factory=list)

    # -- what each step answers ------------------------------------------------------------
    def _retrieve(self, step: sr.flow.Retrieve) -> Any:
        self.seen.append(step)
        if self.retrieve_error is not None:
            raise self.retrieve_error
        if self.retrieve_result is not None:
            return self.retrieve_result
        return [
            sr.Passage(text=t, doc_id="doc-1", score=1.0 / (i + 1))
            for i, t in enumerate(self.passages)
        ]

    def _generation(self, step: sr.flow.Generate) -> sr.Generation:
        self.seen.append(step)
        if step.stage is sr.Stage.RAG:
            if self.rag_error is not None:
                raise self.rag_error
            if self.generate_result is not None:
                return self.generate_result  # type: ignore[no-any-return]
            rung = sum(
                1 for s in self.seen if isinstance(s, sr.flow.Generate) and s.stage is sr.Stage.RAG
            )
            if step.structured is not None:
                if self.structured is None:
                    sr.flow.structured_unsupported(step.structured.required, "scripted model")
                else:
                    value = (
                        self.structured[rung - 1]
                        if isinstance(self.structured, list)
                        else self.structured
                    )
                    obj = value if isinstance(value, dict) else None
                    return sr.Generation(
                        str(value),
                        usage=self.rag_usage,
                        model="rag-model",
                        structured=obj,
                        structured_error=None if obj is not None else "no JSON object",
                    )
            text = self.rag_outputs[rung - 1] if self.rag_outputs is not None else self.rag
            return sr.Generation(text, usage=self.rag_usage, model="rag-model")
        if self.lc_error is not None:
            raise self.lc_error
        return sr.Generation(self.lc, usage=self.lc_usage, model="lc-model")

    def _chunks(self, step: sr.flow.Generate) -> list[sr.flow.GenerationChunk]:
        gen = self._generation(step)
        pieces = list(
            (self.rag_chunks if step.stage is sr.Stage.RAG else self.lc_chunks) or [gen.text]
        )
        chunks = [sr.flow.GenerationChunk(text=p) for p in pieces]
        chunks[-1] = sr.flow.GenerationChunk(
            text=pieces[-1], usage=gen.usage, model=gen.model, finish_reason=gen.finish_reason
        )
        return chunks

    def _load(self, step: sr.flow.LoadLongContext) -> Any:
        self.seen.append(step)
        if step.purpose == "counterfactual" and self.counterfactual_error is not None:
            raise self.counterfactual_error
        if step.purpose == "answer" and self.load_error is not None:
            raise self.load_error
        return None if self.document is None else [sr.ContextDocument(self.document, "doc-1")]

    # -- sync handler ------------------------------------------------------------------------
    def retrieve(self, step: sr.flow.Retrieve) -> Any:
        return self._retrieve(step)

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        return self._generation(step)

    def stream(self, step: sr.flow.Generate) -> Iterator[sr.flow.GenerationChunk]:
        yield from self._chunks(step)

    def load_long_context(self, step: sr.flow.LoadLongContext) -> Any:
        return self._load(step)

    # -- async handler -----------------------------------------------------------------------
    async def aretrieve(self, step: sr.flow.Retrieve) -> Any:
        await asyncio.sleep(0)
        return self._retrieve(step)

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        await asyncio.sleep(0)
        return self._generation(step)

    async def astream(self, step: sr.flow.Generate) -> AsyncIterator[sr.flow.GenerationChunk]:
        for chunk in self._chunks(step):
            await asyncio.sleep(0)
            yield chunk

    async def aload_long_context(self, step: sr.flow.LoadLongContext) -> Any:
        await asyncio.sleep(0)
        return self._load(step)

    # -- helpers -----------------------------------------------------------------------------
    def stages(self) -> list[str]:
        """The kinds of steps seen, e.g. ``["retrieve", "rag", "counterfactual"]``."""
        out = []
        for step in self.seen:
            if isinstance(step, sr.flow.Retrieve):
                out.append("retrieve")
            elif isinstance(step, sr.flow.Generate):
                out.append(step.stage.value)
            else:
                out.append(step.purpose)
        return out


def run(script: Scripted, question: str = "Who kept the lamp?", **config: Any) -> sr.RouteResult:
    """Run the flow synchronously over ``script``."""
    return sr.flow.run_flow(sr.flow.self_route_flow(question, sr.RouteConfig(**config)), script)


async def arun(
    script: Scripted, question: str = "Who kept the lamp?", **config: Any
) -> sr.RouteResult:
    """Run the flow with the async driver over ``script``."""
    return await sr.flow.arun_flow(
        sr.flow.self_route_flow(question, sr.RouteConfig(**config)), script
    )


class WordCounter:
    """One token per white-space separated word: exact, predictable sizes for tests."""

    source = "tokenizer"
    name = "words"

    def count(self, text: str) -> int:
        return len(text.split())

    def head(self, text: str, max_tokens: int) -> str:
        ends = [m.end() for m in re.finditer(r"\S+", text)]
        if len(ends) <= max_tokens:
            return text
        return text[: ends[max_tokens - 1]] if max_tokens > 0 else ""

    def tail(self, text: str, max_tokens: int) -> str:
        starts = [m.start() for m in re.finditer(r"\S+", text)]
        if len(starts) <= max_tokens:
            return text
        return text[starts[len(starts) - max_tokens] :] if max_tokens else ""
