"""selfroute: Self-Route (Li et al., EMNLP 2024) as a framework-free core.

Retrieve the top-k chunks and ask the model to answer from them or write "unanswerable"; only when it
declines, answer again with the whole document in a long-context model. This package holds the
prompts, the verdict parser, the routing flow (written once, run by a sync and an async driver),
chunking, context fitting, the token/cost ledger and errors. It imports no framework: the LangChain
and LlamaIndex adapters live in ``langchain_selfroute`` and ``llamaindex_selfroute``.

This namespace holds what an application uses: the call, its configuration, the result and its
enums, verdict parsing, errors, prices, the batch job. The step protocol, for whoever writes their
own driver or adapter, is :mod:`selfroute.flow` (imported with this package). ``docs/api.md``
lists both.
"""

from __future__ import annotations

from selfroute import flow as flow
from selfroute._batch import (
    AsyncBatchBackend,
    BatchBackend,
    BatchCostReport,
    BatchEvent,
    BatchItem,
    BatchJob,
    BatchOutcome,
    BatchPoll,
    BatchReply,
    BatchRequest,
    BatchState,
    GeminiBatchBackend,
    JobStatus,
    LocalBatchBackend,
    OpenAIBatchBackend,
    batch_cost_report,
)
from selfroute._budget import BudgetDecision, LongContextBudget
from selfroute._chunking import (
    DEFAULT_CHUNK_WORDS,
    Chunk,
    chunk_text,
    document_id,
    rebuild_document,
)
from selfroute._embeddings import HashingEmbedding, chroma_embedding_function
from selfroute._errors import (
    ConfigurationError,
    ContextOverflowError,
    InvalidInputError,
    LongContextError,
    MissingDependencyError,
    ModelConfigurationError,
    ModelOutputError,
    RetrievalError,
    SelfRouteError,
)
from selfroute._extractive import ExtractiveReader
from selfroute._fitting import ContextDocument, FittedContext, OverflowStrategy, fit_context
from selfroute._flow import Generation, OnError, RouteConfig
from selfroute._grounding import Citation, Grounding, GroundingSource, check_grounding
from selfroute._preroute import DEFAULT_GLOBAL_PATTERNS, PreRoute, is_global_question
from selfroute._pricing import PriceTable
from selfroute._prompts import (
    DEFAULT_LONG_CONTEXT_PROMPT,
    DEFAULT_RAG_PROMPT,
    DEFAULT_SENTINEL,
    DEFAULT_STRUCTURED_RAG_PROMPT,
    GROUNDING_PREFIX,
    Prompts,
)
from selfroute._redact import RedactingFilter, redact, register_secret
from selfroute._result import (
    Abstention,
    Passage,
    Reason,
    Route,
    RouteResult,
    RouteStats,
    Stage,
    StepRecord,
)
from selfroute._simple import FunctionHandler, LexicalIndex, aself_route, self_route
from selfroute._structured import VerdictMode, parse_structured_verdict, verdict_schema
from selfroute._tokens import HeuristicCounter, TiktokenCounter, TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import DeclineDetector, DeclinePattern, Verdict, VerdictKind, parse_verdict

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CHUNK_WORDS",
    "DEFAULT_GLOBAL_PATTERNS",
    "DEFAULT_LONG_CONTEXT_PROMPT",
    "DEFAULT_RAG_PROMPT",
    "DEFAULT_SENTINEL",
    "DEFAULT_STRUCTURED_RAG_PROMPT",
    "GROUNDING_PREFIX",
    "Abstention",
    "AsyncBatchBackend",
    "BatchBackend",
    "BatchCostReport",
    "BatchEvent",
    "BatchItem",
    "BatchJob",
    "BatchOutcome",
    "BatchPoll",
    "BatchReply",
    "BatchRequest",
    "BatchState",
    "BudgetDecision",
    "Chunk",
    "Citation",
    "ConfigurationError",
    "ContextDocument",
    "ContextOverflowError",
    "DeclineDetector",
    "DeclinePattern",
    "ExtractiveReader",
    "FittedContext",
    "FunctionHandler",
    "GeminiBatchBackend",
    "Generation",
    "Grounding",
    "GroundingSource",
    "HashingEmbedding",
    "HeuristicCounter",
    "InvalidInputError",
    "JobStatus",
    "LexicalIndex",
    "LocalBatchBackend",
    "LongContextBudget",
    "LongContextError",
    "MissingDependencyError",
    "ModelConfigurationError",
    "ModelOutputError",
    "OnError",
    "OpenAIBatchBackend",
    "OverflowStrategy",
    "Passage",
    "PreRoute",
    "PriceTable",
    "Prompts",
    "Reason",
    "RedactingFilter",
    "RetrievalError",
    "Route",
    "RouteConfig",
    "RouteResult",
    "RouteStats",
    "SelfRouteError",
    "Stage",
    "StepRecord",
    "TiktokenCounter",
    "TokenCounter",
    "Usage",
    "Verdict",
    "VerdictKind",
    "VerdictMode",
    "__version__",
    "aself_route",
    "batch_cost_report",
    "check_grounding",
    "chroma_embedding_function",
    "chunk_text",
    "default_token_counter",
    "document_id",
    "fit_context",
    "is_global_question",
    "parse_structured_verdict",
    "parse_verdict",
    "rebuild_document",
    "redact",
    "register_secret",
    "self_route",
    "verdict_schema",
]
