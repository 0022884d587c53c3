"""What a served answer says: one summary of a :class:`~selfroute.RouteResult`, shared by the MCP
``ask`` tool and the ``selfroute`` field of ``/v1/chat/completions``.

The summary's shape is declared once, as pydantic models (:class:`AskOutput`), which the MCP tool
publishes as its output schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from selfroute._result import Route, RouteResult
from selfroute._serve._service import source_ref

__all__ = [
    "AskOutput",
    "SearchHit",
    "SearchOutput",
    "SourceRef",
    "StepTokens",
    "Tokens",
    "answer_text",
    "route_line",
    "saved_tokens",
    "summarize",
]


class SourceRef(BaseModel):
    """A retrieved chunk."""

    document: str = Field(description="the file (or document id) the chunk is from")
    doc_id: str | None = Field(default=None, description="the document's id in the store")
    chunk: int | None = Field(default=None, description="the chunk's index in its document")
    score: float | None = Field(default=None, description="retrieval score (higher is better)")


class SearchHit(SourceRef):
    """A retrieved chunk with its text."""

    text: str = Field(description="the chunk's text")


class Tokens(BaseModel):
    """Token counts."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    source: str | None = Field(
        default=None, description="provider (reported by the model server) or estimate"
    )


class StepTokens(Tokens):
    """One model call."""

    stage: str = Field(description="rag or long_context")
    model: str | None = None
    wasted: bool = Field(default=False, description="a cancelled speculative call")


class AskOutput(BaseModel):
    """The answer of the ``ask`` tool, with the route Self-Route took and what it cost."""

    answer: str = Field(description="the answer (a not-found message when abstained)")
    route: str = Field(description="rag (answered from retrieved chunks) or long_context")
    reason: str = Field(description="why that route was taken")
    abstained: bool = Field(description="the documents do not answer the question")
    sources: list[SourceRef] = Field(description="the chunks the RAG step was shown")
    steps: list[StepTokens] = Field(description="tokens of every model call")
    tokens: Tokens = Field(description="tokens of all calls together")
    always_long_context_tokens: int | None = Field(
        description="input tokens answering from the whole documents would have cost"
    )
    token_ratio: float | None = Field(
        description="input tokens spent / always-long-context input tokens (below 1 saved)"
    )
    saved_tokens: int | None = Field(
        description="always-long-context input tokens minus the input tokens spent"
    )
    cost: float | None = Field(default=None, description="money spent (with --prices)")
    always_long_context_cost: float | None = Field(
        default=None, description="money always-long-context would have cost (with --prices)"
    )
    collection: str = Field(description="the collection answered over")


class SearchOutput(BaseModel):
    """The top chunks of the ``search`` tool."""

    query: str
    hits: list[SearchHit]
    collection: str


def saved_tokens(result: RouteResult) -> int | None:
    """Always-LC input tokens minus the input tokens spent (negative when LC ran after RAG)."""
    if result.long_context_tokens is None:
        return None
    return int(result.long_context_tokens) - int(result.usage.input_tokens)


def answer_text(result: RouteResult) -> str:
    """The answer as shown to a person or a model."""
    if result.abstained:
        return result.answer or "The documents do not contain the answer."
    return result.answer or ""


def _tokens(usage: Any) -> dict[str, Any]:
    return {
        "input_tokens": int(usage.input_tokens),
        "output_tokens": int(usage.output_tokens),
        "total_tokens": int(usage.total_tokens),
        "source": usage.source,
    }


def summarize(result: RouteResult, collection: str) -> AskOutput:
    """The served summary of ``result``."""
    sources = []
    for p in result.sources:
        ref = source_ref(p)
        ref.pop("text")
        sources.append(SourceRef(**ref))
    steps = [
        StepTokens(stage=s.stage.value, model=s.model, wasted=s.wasted, **_tokens(s.usage))
        for s in result.steps
    ]
    return AskOutput(
        answer=answer_text(result),
        route=result.route.value,
        reason=result.reason.value,
        abstained=result.abstained,
        sources=sources,
        steps=steps,
        tokens=Tokens(**_tokens(result.usage)),
        always_long_context_tokens=result.long_context_tokens,
        token_ratio=result.token_ratio,
        saved_tokens=saved_tokens(result),
        cost=result.cost,
        always_long_context_cost=result.long_context_cost,
        collection=collection,
    )


def route_line(out: AskOutput) -> str:
    """One line saying the route, the reason and the savings (the text beside the answer)."""
    where = "answered from retrieved chunks" if out.route == Route.RAG.value else "long context"
    parts = [f"route: {out.route} ({out.reason}; {where})"]
    parts.append(f"tokens: {out.tokens.total_tokens:,} in {len(out.steps)} call(s)")
    if out.always_long_context_tokens is not None:
        parts.append(f"always-LC input: {out.always_long_context_tokens:,}")
    if out.token_ratio is not None:
        parts.append(f"ratio: {out.token_ratio:.3f}")
    return "; ".join(parts)
