"""selfroute: Self-Route (Li et al., EMNLP 2024) as a framework-free core.

Retrieve the top-k chunks and ask the model to answer from them or write "unanswerable"; only when it
declines, answer again with the whole document in a long-context model. This package holds the
prompts, the verdict parser, the routing flow (written once, run by a sync and an async driver),
chunking, context fitting, the token/cost ledger and errors. It imports no framework: the LangChain
and LlamaIndex adapters live in ``langchain_selfroute`` and ``llamaindex_selfroute``.
"""

from __future__ import annotations

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
    ModelOutputError,
    RetrievalError,
    SelfRouteError,
)
from selfroute._fitting import ContextDocument, FittedContext, OverflowStrategy, fit_context
from selfroute._flow import (
    AsyncStepHandler,
    FlowEvent,
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    OnError,
    ResultEvent,
    Retrieve,
    RouteConfig,
    RouteEvent,
    Step,
    StepHandler,
    TokenEvent,
    adrive,
    arun_flow,
    clean_answer,
    drive,
    run_flow,
    self_route_flow,
    validate_question,
)
from selfroute._prompts import (
    DEFAULT_LONG_CONTEXT_PROMPT,
    DEFAULT_RAG_PROMPT,
    DEFAULT_SENTINEL,
    Prompts,
)
from selfroute._redact import RedactingFilter, redact, register_secret
from selfroute._result import (
    Passage,
    PriceTable,
    Reason,
    Route,
    RouteResult,
    RouteStats,
    Stage,
    StepRecord,
)
from selfroute._simple import FunctionHandler, LexicalIndex, aself_route, self_route
from selfroute._streaming import SentinelSniffer
from selfroute._tokens import HeuristicCounter, TiktokenCounter, TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import Verdict, VerdictKind, could_start_decline, parse_verdict

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CHUNK_WORDS",
    "DEFAULT_LONG_CONTEXT_PROMPT",
    "DEFAULT_RAG_PROMPT",
    "DEFAULT_SENTINEL",
    "AsyncStepHandler",
    "BudgetDecision",
    "Chunk",
    "ConfigurationError",
    "ContextDocument",
    "ContextOverflowError",
    "FittedContext",
    "FlowEvent",
    "FunctionHandler",
    "Generate",
    "Generation",
    "GenerationChunk",
    "HashingEmbedding",
    "HeuristicCounter",
    "InvalidInputError",
    "LexicalIndex",
    "LoadLongContext",
    "LongContextBudget",
    "LongContextError",
    "MissingDependencyError",
    "ModelOutputError",
    "OnError",
    "OverflowStrategy",
    "Passage",
    "PriceTable",
    "Prompts",
    "Reason",
    "RedactingFilter",
    "ResultEvent",
    "RetrievalError",
    "Retrieve",
    "Route",
    "RouteConfig",
    "RouteEvent",
    "RouteResult",
    "RouteStats",
    "SelfRouteError",
    "SentinelSniffer",
    "Stage",
    "Step",
    "StepHandler",
    "StepRecord",
    "TiktokenCounter",
    "TokenCounter",
    "TokenEvent",
    "Usage",
    "Verdict",
    "VerdictKind",
    "__version__",
    "adrive",
    "arun_flow",
    "aself_route",
    "chroma_embedding_function",
    "chunk_text",
    "clean_answer",
    "could_start_decline",
    "default_token_counter",
    "document_id",
    "drive",
    "fit_context",
    "parse_verdict",
    "rebuild_document",
    "redact",
    "register_secret",
    "run_flow",
    "self_route",
    "self_route_flow",
    "validate_question",
]
