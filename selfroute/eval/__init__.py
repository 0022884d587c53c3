"""Evaluation harness: reproduce the paper's Table 1 and Figures 2-3 on any labelled set.

Runs the methods on every item -- LC (the whole document), RAG (top-k BM25 chunks, the same
prompt) and Self-Route (the core flow, with the run's policies), optionally Self-Route in
grounded mode -- and reports score, answerable ratio, tokens and token ratio versus LC, money,
latency (measured, or simulated for scripted readers) and, on unanswerable questions, the
correct-decline rate.

Example:
    >>> from selfroute.eval import OracleReader, evaluate, load_sample
    >>> summary = evaluate(load_sample(), reader=OracleReader(), ks=[1, 5, 10])  # doctest: +SKIP
    >>> summary.row("self_route", 5).token_ratio  # doctest: +SKIP
"""

from __future__ import annotations

from selfroute.eval._cache import CachedAnswer, ResponseCache, default_cache_path
from selfroute.eval._data import (
    EvalItem,
    is_unanswerable_gold,
    load_dataset,
    load_lara,
    load_longbench,
    load_sample,
    load_squad,
)
from selfroute.eval._estimate import Estimate, EstimateRow, estimate
from selfroute.eval._prices import parse_prices
from selfroute.eval._readers import (
    ChatModelReader,
    FabricatingOracleReader,
    LatencyModel,
    ModelRequest,
    OracleReader,
    Reader,
    chat_model_from_spec,
    supporting_sentence,
)
from selfroute.eval._report import write_outputs
from selfroute.eval._runner import (
    DEFAULT_METHODS,
    METHODS,
    BM25Retriever,
    Retriever,
    aevaluate,
    evaluate,
)
from selfroute.eval._summary import CallRecord, Comparison, MethodSummary, RunRecord, Summary

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "BM25Retriever",
    "CachedAnswer",
    "CallRecord",
    "ChatModelReader",
    "Comparison",
    "Estimate",
    "EstimateRow",
    "EvalItem",
    "FabricatingOracleReader",
    "LatencyModel",
    "MethodSummary",
    "ModelRequest",
    "OracleReader",
    "Reader",
    "ResponseCache",
    "Retriever",
    "RunRecord",
    "Summary",
    "aevaluate",
    "chat_model_from_spec",
    "default_cache_path",
    "estimate",
    "evaluate",
    "is_unanswerable_gold",
    "load_dataset",
    "load_lara",
    "load_longbench",
    "load_sample",
    "load_squad",
    "parse_prices",
    "supporting_sentence",
    "write_outputs",
]
