"""Plain-Python use of the core: a tiny BM25 index and a handler built from functions."""

from __future__ import annotations

import inspect
import json
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from selfroute._chunking import DEFAULT_CHUNK_WORDS, Chunk, chunk_text
from selfroute._errors import ConfigurationError
from selfroute._fitting import ContextDocument
from selfroute._flow import (
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    Retrieve,
    RouteConfig,
    arun_flow,
    run_flow,
    self_route_flow,
)
from selfroute._result import Passage, RouteResult, Stage
from selfroute._structured import load_structured, structured_unsupported
from selfroute._text import terms

__all__ = ["FunctionHandler", "LexicalIndex", "aself_route", "self_route"]


class LexicalIndex:
    """An in-memory Okapi BM25 index over chunks (pure Python, no dependencies).

    Args:
        chunks: The chunks to index.
        k1: BM25 term-frequency saturation.
        b: BM25 length normalisation.
    """

    def __init__(self, chunks: Sequence[Chunk], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.chunks = list(chunks)
        self.k1 = k1
        self.b = b
        self._tfs = [Counter(terms(c.text)) for c in self.chunks]
        self._lens = [sum(tf.values()) for tf in self._tfs]
        self._avg = (sum(self._lens) / len(self._lens)) if self._lens else 0.0
        df: Counter[str] = Counter()
        for tf in self._tfs:
            df.update(tf.keys())
        n = len(self.chunks)
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    @classmethod
    def from_text(
        cls, text: str, *, doc_id: str | None = None, chunk_words: int = DEFAULT_CHUNK_WORDS
    ) -> LexicalIndex:
        """Chunk ``text`` and index it."""
        return cls(chunk_text(text, doc_id=doc_id, chunk_words=chunk_words))

    def scores(self, query: str) -> list[float]:
        """BM25 score of every chunk for ``query``."""
        query_terms = terms(query)
        out = []
        for tf, length in zip(self._tfs, self._lens, strict=False):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * length / (self._avg or 1))
            for t in query_terms:
                f = tf.get(t)
                if f:
                    s += self._idf[t] * f * (self.k1 + 1) / (f + norm)
            out.append(s)
        return out

    def search(self, query: str, k: int) -> list[Passage]:
        """Top-``k`` chunks with a positive score, best first."""
        scored = [(s, i) for i, s in enumerate(self.scores(query)) if s > 0]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return [
            Passage(
                text=self.chunks[i].text,
                doc_id=self.chunks[i].doc_id,
                score=s,
                metadata={"chunk_index": self.chunks[i].index, **self.chunks[i].metadata},
                source=self.chunks[i],
            )
            for s, i in scored[:k]
        ]


def _piece(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ConfigurationError(
        "a stream_structured function must yield str pieces of the object's JSON text, "
        f"got {type(value).__name__}"
    )


def _streamed_object(text: str) -> Generation:
    """The object a ``stream_structured`` function streamed (a cut-off or malformed one is no
    verdict: the flow then goes to long context)."""
    obj = load_structured(text)
    if obj is None:
        return Generation(text=text, structured_error="the streamed object could not be parsed")
    return Generation(text=json.dumps(obj, ensure_ascii=False), structured=obj)


def _joined(chunks: Sequence[GenerationChunk]) -> Generation:
    """An unstreamed call from a streamed structured one: its closing piece."""
    last = chunks[-1]
    return Generation(
        text=last.text, structured=last.structured, structured_error=last.structured_error
    )


GenerateFn = Callable[[str], str | Generation | Awaitable[str | Generation]]


def _as_generation(value: Any) -> Generation:
    if isinstance(value, Generation):
        return value
    if isinstance(value, str):
        return Generation(text=value)
    raise ConfigurationError(
        f"a generate function must return str or selfroute.Generation, got {type(value).__name__}"
    )


def _as_structured(value: Any) -> Generation:
    if isinstance(value, Generation):
        return value
    if isinstance(value, Mapping):
        return Generation(text=json.dumps(dict(value)), structured=dict(value))
    if isinstance(value, str):  # JSON text
        return Generation(text=value, structured=load_structured(value))
    raise ConfigurationError(
        "a generate_structured function must return a dict, JSON text or selfroute.Generation, "
        f"got {type(value).__name__}"
    )


class FunctionHandler:
    """A step handler from plain functions (sync or async).

    Args:
        retrieve: ``retrieve(question, k) -> list[Passage]``.
        generate: ``generate(prompt) -> str | Generation`` for the RAG step.
        long_context_generate: Same for the LC step; defaults to ``generate``.
        long_context: The long context (a string, ``ContextDocument`` list) or a function
            ``long_context(question, passages) -> documents | None``.
        generate_structured: Optional ``generate_structured(prompt, schema) -> dict |
            Generation`` for structured verdicts (``verdict="structured"`` or ``"auto"``); a
            ``Generation`` must carry the object in ``structured``.
        stream_structured: Optional ``stream_structured(prompt, schema)`` yielding (or async
            yielding) the object's JSON text piece by piece as the model writes it (a
            JSON-schema response's content deltas, or a tool call's argument deltas): streamed
            structured verdicts show the ``answer`` text as it arrives, once ``answerable`` is
            true. Unstreamed calls join it when ``generate_structured`` is not given.
    """

    def __init__(
        self,
        *,
        retrieve: Callable[[str, int], Any],
        generate: GenerateFn,
        long_context_generate: GenerateFn | None = None,
        long_context: Any = None,
        generate_structured: Callable[[str, Mapping[str, Any]], Any] | None = None,
        stream_structured: Callable[[str, Mapping[str, Any]], Any] | None = None,
    ) -> None:
        self._retrieve = retrieve
        self._structured = generate_structured
        self._stream_structured = stream_structured
        self._gen = {Stage.RAG: generate, Stage.LONG_CONTEXT: long_context_generate or generate}
        self._lc = long_context

    def _docs(self, step: LoadLongContext) -> Any:
        if callable(self._lc):
            return self._lc(step.question, step.passages)
        if self._lc is None:
            return None
        if isinstance(self._lc, (str, ContextDocument)):
            return [self._lc]
        return list(self._lc)

    # sync
    def retrieve(self, step: Retrieve) -> Sequence[Passage]:
        return list(self._retrieve(step.question, step.k))

    def _structured_call(self, step: Generate) -> Any:
        """The structured call's (possibly awaitable) value, or ``None`` to send the plain prompt."""
        request = step.structured
        if request is None:
            return None
        if self._structured is None:
            if self._stream_structured is not None:
                return None  # generate/agenerate join the stream
            structured_unsupported(request.required, "no generate_structured function was given")
            return None
        return self._structured(request.prompt, request.schema)

    def _streams_structured(self, step: Generate) -> bool:
        return step.structured is not None and self._stream_structured is not None

    def generate(self, step: Generate) -> Generation:
        if self._structured is None and self._streams_structured(step):
            return _joined(list(self.stream(step)))
        value = self._structured_call(step)
        if value is not None:
            return _as_structured(value)
        return _as_generation(self._gen[step.stage](step.prompt))

    def stream(self, step: Generate) -> Iterable[GenerationChunk]:
        if not self._streams_structured(step):
            yield GenerationChunk.of(self.generate(step))
            return
        assert self._stream_structured is not None and step.structured is not None
        pieces = self._stream_structured(step.structured.prompt, step.structured.schema)
        text: list[str] = []
        for piece in pieces:
            if piece := _piece(piece):
                text.append(piece)
                yield GenerationChunk(structured_delta=piece)
        yield GenerationChunk.of(_streamed_object("".join(text)))

    def load_long_context(self, step: LoadLongContext) -> Any:
        return self._docs(step)

    # async
    async def _await(self, value: Any) -> Any:
        return await value if inspect.isawaitable(value) else value

    async def aretrieve(self, step: Retrieve) -> Sequence[Passage]:
        return list(await self._await(self._retrieve(step.question, step.k)))

    async def agenerate(self, step: Generate) -> Generation:
        if self._structured is None and self._streams_structured(step):
            return _joined([chunk async for chunk in self.astream(step)])
        value = self._structured_call(step)
        if value is not None:
            return _as_structured(await self._await(value))
        return _as_generation(await self._await(self._gen[step.stage](step.prompt)))

    async def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        if not self._streams_structured(step):
            yield GenerationChunk.of(await self.agenerate(step))
            return
        assert self._stream_structured is not None and step.structured is not None
        pieces = await self._await(
            self._stream_structured(step.structured.prompt, step.structured.schema)
        )
        text: list[str] = []
        if hasattr(pieces, "__aiter__"):
            async for piece in pieces:
                if piece := _piece(piece):
                    text.append(piece)
                    yield GenerationChunk(structured_delta=piece)
        else:
            for piece in pieces:
                if piece := _piece(piece):
                    text.append(piece)
                    yield GenerationChunk(structured_delta=piece)
        yield GenerationChunk.of(_streamed_object("".join(text)))

    async def aload_long_context(self, step: LoadLongContext) -> Any:
        return await self._await(self._docs(step))


def self_route(
    question: str,
    document: str,
    generate: Callable[[str], str | Generation],
    *,
    long_context_generate: Callable[[str], str | Generation] | None = None,
    config: RouteConfig | None = None,
) -> RouteResult:
    """Self-Route one question over one document with plain functions.

    Chunks ``document`` into 300-word chunks, retrieves the top-k with BM25, asks ``generate`` to
    answer from them or decline, and falls back to ``long_context_generate`` (default:
    ``generate``) over the whole document.

    Example:
        >>> result = self_route("Who wrote it?", text, my_llm)  # doctest: +SKIP
        >>> result.route, result.answer, result.token_ratio  # doctest: +SKIP
    """
    cfg = config or RouteConfig()
    index = LexicalIndex.from_text(document, doc_id="document", chunk_words=cfg.chunk_words)
    handler = FunctionHandler(
        retrieve=index.search,
        generate=generate,
        long_context_generate=long_context_generate,
        long_context=document,
    )
    return run_flow(self_route_flow(question, cfg), handler)


async def aself_route(
    question: str,
    document: str,
    generate: Callable[[str], Any],
    *,
    long_context_generate: Callable[[str], Any] | None = None,
    config: RouteConfig | None = None,
) -> RouteResult:
    """Async :func:`self_route`; ``generate`` may be an ``async def``."""
    cfg = config or RouteConfig()
    index = LexicalIndex.from_text(document, doc_id="document", chunk_words=cfg.chunk_words)
    handler = FunctionHandler(
        retrieve=index.search,
        generate=generate,
        long_context_generate=long_context_generate,
        long_context=document,
    )
    return await arun_flow(self_route_flow(question, cfg), handler)
