"""``create_retrieval_chain``'s output shape over a SelfRoute (:meth:`RouteRunnable.as_retrieval_chain`).

``create_retrieval_chain(retriever, combine_docs_chain)`` returns ``{**input, "context": docs,
"answer": text}`` and streams addable dicts. The form here maps SelfRoute's output (or its
stream of :class:`~langchain_selfroute.SelfRouteChunk`) onto those keys.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.runnables import Runnable, RunnableGenerator
from langchain_core.runnables.utils import AddableDict

from langchain_selfroute._output import SelfRouteChunk, SelfRouteOutput

__all__ = ["retrieval_chain_form", "retrieval_chain_pieces"]


def retrieval_chain_pieces(value: Any) -> list[AddableDict]:
    """The ``create_retrieval_chain`` chunks for one SelfRoute output or stream chunk."""
    if isinstance(value, SelfRouteChunk):
        if value.output is None:
            return [AddableDict(answer=value.text)] if value.text else []
        output, rest = value.output, value.text
    elif isinstance(value, SelfRouteOutput):
        output, rest = value, value.answer or ""
    else:
        output, rest = SelfRouteOutput.model_validate(value), str(value.get("answer") or "")
    final = AddableDict(output.passthrough)
    final["context"] = output.documents_used
    final["answer"] = rest
    final["selfroute"] = output
    return [final]


def _transform(values: Iterator[Any]) -> Iterator[AddableDict]:
    for value in values:
        yield from retrieval_chain_pieces(value)


async def _atransform(values: AsyncIterator[Any]) -> AsyncIterator[AddableDict]:
    async for value in values:
        for piece in retrieval_chain_pieces(value):
            yield piece


def retrieval_chain_form() -> Runnable[Any, dict[str, Any]]:
    """The step after a SelfRoute that gives ``create_retrieval_chain``'s keys."""
    return RunnableGenerator(_transform, _atransform, name="SelfRouteRetrievalChain")
