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
    ModelConfigurationError,
    ModelOutputError,
    RetrievalError,
    SelfRouteError,
)
from selfroute._extractive import ExtractiveReader
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
    Settle,
    Speculate,
    Step,
    StepHandler,
    StructuredRequest,
    TokenEvent,
    adrive,
    arun_flow,
    clean_answer,
    drive,
    run_flow,
    self_route_flow,
    validate_question,
)
from selfroute._grounding import (
    Citation,
    Grounding,
    GroundingSource,
    check_grounding,
    locate_quote,
    split_quotes,
)
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
from selfroute._streaming import SentinelSniffer
from selfroute._structured import (
    VerdictMode,
    load_structured,
    parse_structured_verdict,
    structured_unsupported,
    verdict_schema,
)
from selfroute._tokens import HeuristicCounter, TiktokenCounter, TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute._verdict import Verdict, VerdictKind, could_start_decline, parse_verdict

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
    "AsyncStepHandler",
    "BudgetDecision",
    "Chunk",
    "Citation",
    "ConfigurationError",
    "ContextDocument",
    "ContextOverflowError",
    "ExtractiveReader",
    "FittedContext",
    "FlowEvent",
    "FunctionHandler",
    "Generate",
    "Generation",
    "GenerationChunk",
    "Grounding",
    "GroundingSource",
    "HashingEmbedding",
    "HeuristicCounter",
    "InvalidInputError",
    "LexicalIndex",
    "LoadLongContext",
    "LongContextBudget",
    "LongContextError",
    "MissingDependencyError",
    "ModelConfigurationError",
    "ModelOutputError",
    "OnError",
    "OverflowStrategy",
    "Passage",
    "PreRoute",
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
    "Settle",
    "Speculate",
    "Stage",
    "Step",
    "StepHandler",
    "StepRecord",
    "StructuredRequest",
    "TiktokenCounter",
    "TokenCounter",
    "TokenEvent",
    "Usage",
    "Verdict",
    "VerdictKind",
    "VerdictMode",
    "__version__",
    "adrive",
    "arun_flow",
    "aself_route",
    "check_grounding",
    "chroma_embedding_function",
    "chunk_text",
    "clean_answer",
    "could_start_decline",
    "default_token_counter",
    "document_id",
    "drive",
    "fit_context",
    "is_global_question",
    "load_structured",
    "locate_quote",
    "parse_structured_verdict",
    "parse_verdict",
    "rebuild_document",
    "redact",
    "register_secret",
    "run_flow",
    "self_route",
    "self_route_flow",
    "split_quotes",
    "structured_unsupported",
    "validate_question",
    "verdict_schema",
]
