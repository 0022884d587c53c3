"""Instrumentation events the engine dispatches (``llama_index.core.instrumentation``).

Every event fires on the ``llamaindex_selfroute`` dispatcher, which propagates to the root
dispatcher, so any event handler added with
``llama_index.core.instrumentation.get_dispatcher().add_event_handler(...)`` sees them. The
events carry the id of the span they were fired in (``span_id``): the RAG and long-context model
calls run inside their own spans (``LlamaIndexHandler.rag_generate`` /
``LlamaIndexHandler.long_context_generate`` and the async ``a...`` twins).
"""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation.events import BaseEvent

__all__ = [
    "SelfRouteResultEvent",
    "SelfRouteRouteEvent",
    "SelfRouteStepEndEvent",
    "SelfRouteStepStartEvent",
]


class SelfRouteStepStartEvent(BaseEvent):
    """A model call of the flow starts.

    Attributes:
        stage: ``rag`` or ``long_context``.
        question: The question.
        model: The configured model name of the LLM used for the stage.
        streaming: Whether the call streams.
    """

    stage: str
    question: str
    model: str | None = None
    streaming: bool = False

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "SelfRouteStepStartEvent"


class SelfRouteStepEndEvent(BaseEvent):
    """A model call of the flow ended.

    Attributes:
        stage: ``rag`` or ``long_context``.
        model: Model name as reported by the provider (else the configured one).
        text: What the model wrote.
        usage: Provider-reported usage (``Usage.to_dict()``), ``None`` if none was reported.
    """

    stage: str
    model: str | None = None
    text: str = ""
    usage: dict[str, Any] | None = None

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "SelfRouteStepEndEvent"


class SelfRouteRouteEvent(BaseEvent):
    """While streaming: the route became known or changed.

    Attributes:
        route: ``rag`` or ``long_context``.
        reason: Why, when known.
        retracted: RAG text was already streamed and the full output turned out to be a decline.
    """

    route: str
    reason: str | None = None
    retracted: bool = False

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "SelfRouteRouteEvent"


class SelfRouteResultEvent(BaseEvent):
    """A query finished; ``result`` is ``RouteResult.to_dict()``.

    Attributes:
        route: ``rag`` or ``long_context``.
        reason: Why that route was taken.
        result: The whole result as a JSON-serializable dict.
    """

    route: str
    reason: str
    result: dict[str, Any]

    @classmethod
    def class_name(cls) -> str:
        """Class name."""
        return "SelfRouteResultEvent"
