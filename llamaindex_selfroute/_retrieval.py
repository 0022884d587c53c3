"""The handler's retrieval and long-context steps: nodes from a LlamaIndex retriever (and node
postprocessors) as passages, and the long context from a :class:`LongContextSource`."""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from llamaindex_selfroute._parents import LongContextSource
from selfroute import ContextDocument, Passage, SelfRouteError
from selfroute.flow import LoadLongContext, Retrieve

__all__ = ["RetrievalSteps", "node_to_passage"]


def node_to_passage(node: NodeWithScore, metadata_mode: MetadataMode) -> Passage:
    """A retrieved LlamaIndex node as a framework-neutral passage (``source`` keeps the node)."""
    if not isinstance(node, NodeWithScore):
        raise SelfRouteError(
            f"the retriever returned {type(node).__name__}; expected NodeWithScore"
        )
    return Passage(
        text=node.node.get_content(metadata_mode=metadata_mode),
        doc_id=node.node.ref_doc_id,
        score=node.score,
        metadata=dict(node.node.metadata),
        source=node,
    )


class RetrievalSteps:
    """``retrieve``/``aretrieve`` and ``load_long_context``/``aload_long_context`` of
    :class:`~llamaindex_selfroute.LlamaIndexHandler` (which adds the model calls).

    Args:
        retriever: Any LlamaIndex retriever.
        long_context: Where the long context comes from (``None``: no long context).
        node_postprocessors: Applied to the retrieved nodes, in order.
        metadata_mode: How node metadata is rendered into the RAG prompt (``NONE``: text only).
        query_bundle: The caller's query bundle (keeps custom embeddings / embedding strings).
    """

    def __init__(
        self,
        *,
        retriever: BaseRetriever,
        long_context: LongContextSource | None = None,
        node_postprocessors: Sequence[BaseNodePostprocessor] = (),
        metadata_mode: MetadataMode = MetadataMode.NONE,
        query_bundle: QueryBundle | None = None,
    ) -> None:
        self.retriever = retriever
        self.long_context = long_context
        self.node_postprocessors = list(node_postprocessors)
        self.metadata_mode = metadata_mode
        self.query_bundle = query_bundle
        self._prefetched: list[NodeWithScore] | None = None
        self._prefetch_error: Exception | None = None

    def _bundle(self, question: str) -> QueryBundle:
        qb = self.query_bundle
        if qb is not None and qb.query_str.strip() == question:
            return qb
        return QueryBundle(question)

    def retrieve_nodes(self, question: str) -> list[NodeWithScore]:
        """Retrieve and post-process nodes for ``question`` (sync)."""
        bundle = self._bundle(question)
        nodes = self.retriever.retrieve(bundle)
        for pp in self.node_postprocessors:
            nodes = pp.postprocess_nodes(nodes, query_bundle=bundle)
        return list(nodes)

    async def aretrieve_nodes(self, question: str) -> list[NodeWithScore]:
        """Retrieve and post-process nodes for ``question`` (async)."""
        bundle = self._bundle(question)
        nodes = await self.retriever.aretrieve(bundle)
        for pp in self.node_postprocessors:
            nodes = await pp.apostprocess_nodes(nodes, query_bundle=bundle)
        return list(nodes)

    def prefetch(self, question: str) -> list[NodeWithScore]:
        """Retrieve now (streaming needs the source nodes before the first token).

        A retrieval failure is kept and re-raised inside the flow, which handles it as usual.
        """
        try:
            self._prefetched = self.retrieve_nodes(question)
        except Exception as exc:
            self._prefetch_error = exc
            return []
        return self._prefetched

    async def aprefetch(self, question: str) -> list[NodeWithScore]:
        """Async :meth:`prefetch`."""
        try:
            self._prefetched = await self.aretrieve_nodes(question)
        except Exception as exc:
            self._prefetch_error = exc
            return []
        return self._prefetched

    def _take_prefetched(self) -> list[NodeWithScore] | None:
        if self._prefetch_error is not None:
            error, self._prefetch_error = self._prefetch_error, None
            raise error
        nodes, self._prefetched = self._prefetched, None
        return nodes

    def _passages(self, nodes: list[NodeWithScore]) -> list[Passage]:
        return [node_to_passage(n, self.metadata_mode) for n in nodes]

    def retrieve(self, step: Retrieve) -> Sequence[Passage]:
        """Top-k passages for the question."""
        nodes = self._take_prefetched()
        if nodes is None:
            nodes = self.retrieve_nodes(step.question)
        return self._passages(nodes)

    async def aretrieve(self, step: Retrieve) -> Sequence[Passage]:
        """Async :meth:`retrieve`."""
        nodes = self._take_prefetched()
        if nodes is None:
            nodes = await self.aretrieve_nodes(step.question)
        return self._passages(nodes)

    # -- long context ------------------------------------------------------------------------
    @staticmethod
    def _retrieved_nodes(step: LoadLongContext) -> list[NodeWithScore]:
        return [p.source for p in step.passages if isinstance(p.source, NodeWithScore)]

    def load_long_context(self, step: LoadLongContext) -> Sequence[ContextDocument | str] | None:
        """The long context for the question."""
        if self.long_context is None:
            return None
        return self.long_context.load(step.question, self._retrieved_nodes(step))

    async def aload_long_context(
        self, step: LoadLongContext
    ) -> Sequence[ContextDocument | str] | None:
        """Async :meth:`load_long_context`."""
        if self.long_context is None:
            return None
        return await self.long_context.aload(step.question, self._retrieved_nodes(step))
