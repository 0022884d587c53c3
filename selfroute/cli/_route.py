"""Self-Route for ``ask`` and ``chat`` without a framework: the core's flow, driven by the core's
sync driver, with a step handler that calls the store (or BM25 over one ``--doc`` file) and the
model clients of :mod:`selfroute.cli._clients`.

No routing logic lives here: :class:`CliHandler` only translates the flow's steps (retrieve, one
model call, load the long context) into calls, as the LangChain and LlamaIndex adapters do with
their frameworks; :class:`CliRoute` runs :func:`selfroute.flow.run_flow` /
:func:`selfroute.flow.drive`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from selfroute._chunking import chunk_text
from selfroute._faults import classified
from selfroute._fitting import ContextDocument
from selfroute._flow import (
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    ResultEvent,
    Retrieve,
    RouteConfig,
    RouteEvent,
    TokenEvent,
    drive,
    run_flow,
    self_route_flow,
)
from selfroute._result import Passage, RouteResult, Stage
from selfroute._simple import LexicalIndex
from selfroute.cli._clients import ChatClient

__all__ = ["CliHandler", "CliRoute", "StreamText", "document_source", "store_source"]


@dataclass(frozen=True)
class StreamText:
    """Answer text of a streamed ``ask``.

    Attributes:
        text: The text delta.
        stage: The stage that wrote it (``None`` for the answer sent again after a retraction).
    """

    text: str
    stage: Stage | None = None


@dataclass(frozen=True)
class Source:
    """Where the passages and the long context come from.

    Attributes:
        retrieve: ``retrieve(question, k) -> passages``, best first.
        long_context: ``long_context(passages) -> documents`` (most relevant first), or ``None``.
        store: The :class:`~selfroute.stores.DocumentStore` queried, or ``None`` (``--doc``).
    """

    retrieve: Callable[[str, int], Sequence[Passage]]
    long_context: Callable[[Sequence[Passage]], Sequence[ContextDocument] | None]
    store: Any = None


def store_source(retriever: Any) -> Source:
    """Passages from a :class:`~selfroute.stores.HybridRetriever`, the long context from the full
    documents of the retrieved chunks (most relevant first).

    A passage's metadata carries its ``doc_id`` and ``score`` (as the store's LangChain
    retriever puts them on its ``Document``); a parent's metadata its ``doc_id``.
    """

    def retrieve(question: str, k: int) -> list[Passage]:
        out = []
        for p in retriever.retrieve(question, k):
            metadata = dict(p.metadata)
            if p.doc_id is not None:
                metadata.setdefault("doc_id", p.doc_id)
            if p.score is not None:
                metadata.setdefault("score", p.score)
            out.append(replace(p, metadata=metadata))
        return out

    def long_context(passages: Sequence[Passage]) -> list[ContextDocument]:
        return [
            replace(d, metadata={**(d.metadata or {}), "doc_id": d.doc_id})
            for d in retriever.long_context(passages)
        ]

    return Source(retrieve, long_context, getattr(retriever, "store", None))


def document_source(
    text: str, *, doc_id: str, metadata: dict[str, Any], chunk_words: int
) -> Source:
    """BM25 over the ``chunk_words`` chunks of one document, which is also the long context.

    A passage's metadata is the document's, plus ``doc_id``, ``chunk_index``, ``start`` and
    ``end``.
    """
    index = LexicalIndex(
        chunk_text(text, doc_id=doc_id, chunk_words=chunk_words, metadata=metadata)
    )
    document = ContextDocument(text=text, doc_id=doc_id, metadata=dict(metadata))

    def retrieve(question: str, k: int) -> list[Passage]:
        out = []
        for p in index.search(question, k):
            chunk = p.source
            meta = {
                **chunk.metadata,
                "doc_id": chunk.doc_id,
                "chunk_index": chunk.index,
                "start": chunk.start,
                "end": chunk.end,
            }
            out.append(replace(p, metadata=meta))
        return out

    return Source(retrieve, lambda passages: [document])


class CliHandler:
    """The sync step handler of the command line.

    Args:
        source: The passages and the long context.
        clients: The model client of each stage.
    """

    def __init__(self, source: Source, clients: dict[Stage, ChatClient]) -> None:
        self.source = source
        self.clients = clients

    def _structured(self, step: Generate) -> Generation | None:
        """The structured call of ``step``, or ``None`` to send its plain prompt."""
        if step.structured is None:
            return None
        return self.clients[step.stage].generate_structured(step.structured)

    def retrieve(self, step: Retrieve) -> list[Passage]:
        """The top-k passages."""
        return list(self.source.retrieve(step.question, step.k))

    def generate(self, step: Generate) -> Generation:
        """One model call (structured when the step offers it and the model has it)."""
        client = self.clients[step.stage]
        with classified(step.stage, client.name):
            structured = self._structured(step)
            return structured if structured is not None else client.generate(step.prompt)

    def stream(self, step: Generate) -> Iterator[GenerationChunk]:
        """A streamed model call. A structured verdict streams its object's JSON text when the
        client can (``stream_structured``), else it is one call, delivered as one piece."""
        client = self.clients[step.stage]
        with classified(step.stage, client.name):
            streamed = getattr(client, "stream_structured", None)
            if step.structured is not None and streamed is not None:
                yield from streamed(step.structured)
                return
            structured = self._structured(step)
            if structured is not None:
                yield GenerationChunk.of(structured)
                return
            yield from client.stream(step.prompt)

    def load_long_context(self, step: LoadLongContext) -> list[ContextDocument] | None:
        """The documents of the retrieved chunks (or the ``--doc`` file)."""
        docs = self.source.long_context(step.passages)
        return None if docs is None else list(docs)


class CliRoute:
    """One Self-Route setup for the command line.

    Args:
        config: The core's settings.
        source: The passages and the long context.
        clients: The model client of each stage.
    """

    def __init__(self, config: RouteConfig, source: Source, clients: dict[Stage, ChatClient]):
        self.config = config
        self.handler = CliHandler(source, clients)

    def invoke(self, question: str) -> RouteResult:
        """Answer one question."""
        return run_flow(self_route_flow(question, self.config), self.handler)

    def stream(self, question: str) -> Iterator[tuple[str, Any]]:
        """``(kind, value)`` events of one streamed answer: ``route`` (a
        :class:`~selfroute.flow.RouteEvent`), ``text`` (:class:`StreamText`), ``retract`` (the text
        shown so far is withdrawn) and finally ``result`` (the :class:`~selfroute.RouteResult`).
        When the final answer is not the text shown (quotes cleaned off), it is retracted and
        sent again whole."""
        shown = ""
        for event in drive(self_route_flow(question, self.config), self.handler, stream=True):
            if isinstance(event, RouteEvent):
                if event.retracted:
                    shown = ""
                    yield "retract", event
                else:
                    yield "route", event
            elif isinstance(event, TokenEvent):
                shown += event.text
                yield "text", StreamText(event.text, event.stage)
            elif isinstance(event, ResultEvent):
                answer = event.result.answer or ""
                if answer.startswith(shown):
                    if answer[len(shown) :]:
                        yield "text", StreamText(answer[len(shown) :])
                else:
                    yield "retract", None
                    yield "text", StreamText(answer)
                yield "result", event.result
