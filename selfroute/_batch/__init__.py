"""Bulk Self-Route through provider batch APIs (private; the names are re-exported by
:mod:`selfroute`)."""

from __future__ import annotations

from selfroute._batch._core import BatchEvent, BatchItem, BatchOutcome, JobStatus
from selfroute._batch._gemini import GeminiBatchBackend
from selfroute._batch._job import BatchJob
from selfroute._batch._ledger import BatchCostReport, batch_cost_report
from selfroute._batch._local import LocalBatchBackend
from selfroute._batch._openai import OpenAIBatchBackend
from selfroute._batch._protocol import (
    AsyncBatchBackend,
    BatchBackend,
    BatchPoll,
    BatchReply,
    BatchRequest,
    BatchState,
)

__all__ = [
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
    "GeminiBatchBackend",
    "JobStatus",
    "LocalBatchBackend",
    "OpenAIBatchBackend",
    "batch_cost_report",
]
