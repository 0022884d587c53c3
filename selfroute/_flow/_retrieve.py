"""Stage 1, retrieve: the top chunks for the question (enough for the largest k-ladder rung).

A retriever failure escalates to long context (recorded in the result) unless
``on_retrieval_error="raise"``; an empty retrieval routes to long context (``no_chunks``).
"""

from __future__ import annotations

from typing import Any

from selfroute._errors import RetrievalError
from selfroute._flow._config import OnError
from selfroute._flow._state import CALLER_ERRORS, FlowState, Steps, to_passages, warn_escalation
from selfroute._flow._steps import Retrieve
from selfroute._redact import redact_exception
from selfroute._result import Reason

__all__ = ["retrieve"]


def retrieve(state: FlowState) -> Steps[FlowState]:
    """Yield one :class:`~selfroute.flow.Retrieve` and keep what came back.

    Returns:
        The state with ``ranked`` (everything retrieved), ``passages`` and ``parents_of`` (the top
        ``k``), and, when nothing usable came back, ``reason`` ``retrieval_error`` or
        ``no_chunks``.

    Raises:
        RetrievalError: The retriever failed and ``on_retrieval_error`` is ``raise``.
    """
    cfg = state.config
    deepest = cfg.rungs[-1]
    retrieved: Any = None
    try:
        retrieved = yield Retrieve(state.question, deepest, state.bound(cfg.retrieval_timeout_s))
    except CALLER_ERRORS:
        raise
    except Exception as exc:  # includes a RetrievalError raised by a store: same policy
        state.check_time(exc, RetrievalError, "retrieval")
        if cfg.on_retrieval_error is OnError.RAISE:
            if isinstance(exc, RetrievalError):
                raise
            raise RetrievalError(
                f"retrieval failed: {redact_exception(exc)}", question=state.question
            ) from exc
        warn_escalation("retrieval failed", exc)
        return state.evolve(
            error=f"retrieval: {redact_exception(exc)}",
            retrieval_failed=True,
            reason=Reason.RETRIEVAL_ERROR,
        )
    ranked = to_passages(retrieved)[:deepest]
    top = ranked[: cfg.k]
    return state.evolve(
        ranked=ranked,
        passages=top,
        parents_of=top,
        reason=None if top else Reason.NO_CHUNKS,
    )
