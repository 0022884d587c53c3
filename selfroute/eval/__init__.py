"""Evaluation harness: reproduce the paper's Table 1 and Figures 2-3 on any labelled set.

Runs three methods on every item -- LC (the whole document), RAG (top-k BM25 chunks, plain
prompt) and Self-Route (the core flow) -- and reports score, answerable ratio, tokens and token
ratio versus LC, money and latency.

Example:
    >>> from selfroute.eval import OracleReader, evaluate, load_sample
    >>> summary = evaluate(load_sample(), reader=OracleReader(), ks=[1, 5, 10])  # doctest: +SKIP
    >>> summary.row("self_route", 5).token_ratio  # doctest: +SKIP
"""

from __future__ import annotations

from selfroute.eval._cache import CachedAnswer, ResponseCache, default_cache_path
from selfroute.eval._data import (
    EvalItem,
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
    ModelRequest,
    OracleReader,
    Reader,
    chat_model_from_spec,
)
from selfroute.eval._report import write_outputs
from selfroute.eval._runner import METHODS, BM25Retriever, Retriever, aevaluate, evaluate
from selfroute.eval._summary import CallRecord, Comparison, MethodSummary, RunRecord, Summary

__all__ = [
    "METHODS",
    "BM25Retriever",
    "CachedAnswer",
    "CallRecord",
    "ChatModelReader",
    "Comparison",
    "Estimate",
    "EstimateRow",
    "EvalItem",
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
    "load_dataset",
    "load_lara",
    "load_longbench",
    "load_sample",
    "load_squad",
    "parse_prices",
    "write_outputs",
]
