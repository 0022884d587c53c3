"""LlamaIndex adapter for selfroute: Self-Route as a query engine and an agent tool.

``SelfRouteQueryEngine`` asks a (cheap) LLM to answer from the top-k retrieved chunks or write
"unanswerable", and only then asks a long-context LLM with the whole source documents. Routing
is the core's (:mod:`selfroute`); this package only translates its steps into LlamaIndex calls.

Example:
    >>> from llamaindex_selfroute import SelfRouteQueryEngine  # doctest: +SKIP
    >>> engine = SelfRouteQueryEngine.from_index(index, llm=cheap, long_context_llm=strong)
    >>> response = engine.query("When was Mara Holt born?")
    >>> response.metadata["selfroute"]["route"], response.metadata["selfroute"]["token_ratio"]
"""

from __future__ import annotations

from selfroute._errors import MissingDependencyError as _MissingDependencyError

try:  # the framework is an optional extra: name it when it is missing
    import llama_index.core as _framework  # noqa: F401
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess test
    raise _MissingDependencyError("llama-index-core", "llamaindex") from _exc

from llamaindex_selfroute._embeddings import HashingEmbedding, HostedEmbedding
from llamaindex_selfroute._engine import (
    RESULT_KEY,
    RESULT_OBJECT_KEY,
    SelfRouteQueryEngine,
    get_route_result,
)
from llamaindex_selfroute._events import (
    SelfRouteResultEvent,
    SelfRouteRouteEvent,
    SelfRouteStepEndEvent,
    SelfRouteStepStartEvent,
)
from llamaindex_selfroute._handlers import LlamaIndexHandler, node_to_passage
from llamaindex_selfroute._node_parser import WordChunkNodeParser
from llamaindex_selfroute._parents import (
    CallableContext,
    FixedContext,
    LongContextSource,
    ParentDocuments,
)
from llamaindex_selfroute._store import build_index, load_index
from llamaindex_selfroute._store_retriever import SelfRouteStoreRetriever
from llamaindex_selfroute._tool import SelfRouteTool, create_selfroute_tool
from llamaindex_selfroute._usage import model_from_response, usage_from_response

__all__ = [
    "RESULT_KEY",
    "RESULT_OBJECT_KEY",
    "CallableContext",
    "FixedContext",
    "HashingEmbedding",
    "HostedEmbedding",
    "LlamaIndexHandler",
    "LongContextSource",
    "ParentDocuments",
    "SelfRouteQueryEngine",
    "SelfRouteResultEvent",
    "SelfRouteRouteEvent",
    "SelfRouteStepEndEvent",
    "SelfRouteStepStartEvent",
    "SelfRouteStoreRetriever",
    "SelfRouteTool",
    "WordChunkNodeParser",
    "build_index",
    "create_selfroute_tool",
    "get_route_result",
    "load_index",
    "model_from_response",
    "node_to_passage",
    "usage_from_response",
]
