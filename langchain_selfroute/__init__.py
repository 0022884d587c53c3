"""LangChain adapter for selfroute: Self-Route as a ``Runnable`` that drops into chains and agents.

``SelfRoute(retriever=..., llm=...)`` retrieves the top-k chunks and asks ``llm`` to answer from
them or write "unanswerable"; only then it answers again over the whole document with
``long_context_llm``. The routing is the ``selfroute`` core's; this package only translates its
steps into LangChain calls.

Example:
    >>> from langchain_selfroute import SelfRoute  # doctest: +SKIP
    >>> route = SelfRoute(retriever=retriever, llm=cheap, long_context_llm=strong)  # doctest: +SKIP
    >>> route.invoke("When was she born?").answer  # doctest: +SKIP
"""

from __future__ import annotations

from selfroute._errors import MissingDependencyError as _MissingDependencyError

try:  # the framework is an optional extra: name it when it is missing
    import langchain_core as _framework  # noqa: F401
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess test
    raise _MissingDependencyError("langchain-core", "langchain") from _exc

from langchain_selfroute._chroma import (
    ChromaParentLoader,
    StoreParentLoader,
    chunk_documents,
    index_documents,
)
from langchain_selfroute._embeddings import HashingEmbeddings, HostedEmbeddings
from langchain_selfroute._extractive import ExtractiveChatModel
from langchain_selfroute._handlers import (
    TAG_LONG_CONTEXT,
    TAG_NOSTREAM,
    TAG_PARENTS,
    TAG_RAG,
    TAG_RETRIEVE,
    LangChainHandler,
    LongContextPlan,
)
from langchain_selfroute._output import CHECKPOINT_TYPES, SelfRouteChunk, SelfRouteOutput
from langchain_selfroute._runnable import (
    QUESTION_KEYS,
    LongContextSource,
    SelfRoute,
    SelfRouteInput,
    SelfRouteInputDict,
)
from langchain_selfroute._store_retriever import SelfRouteStoreRetriever
from langchain_selfroute._tool import (
    DEFAULT_TOOL_DESCRIPTION,
    SelfRouteToolInput,
    create_selfroute_tool,
)

__all__ = [
    "CHECKPOINT_TYPES",
    "DEFAULT_TOOL_DESCRIPTION",
    "QUESTION_KEYS",
    "TAG_LONG_CONTEXT",
    "TAG_NOSTREAM",
    "TAG_PARENTS",
    "TAG_RAG",
    "TAG_RETRIEVE",
    "ChromaParentLoader",
    "ExtractiveChatModel",
    "HashingEmbeddings",
    "HostedEmbeddings",
    "LangChainHandler",
    "LongContextPlan",
    "LongContextSource",
    "SelfRoute",
    "SelfRouteChunk",
    "SelfRouteInput",
    "SelfRouteInputDict",
    "SelfRouteOutput",
    "SelfRouteStoreRetriever",
    "SelfRouteToolInput",
    "StoreParentLoader",
    "chunk_documents",
    "create_selfroute_tool",
    "index_documents",
]
