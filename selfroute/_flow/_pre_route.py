"""Stage 2, pre-route: skip the RAG step for questions it predictably cannot answer.

The policy itself (global-question patterns, weak retrieval) is :class:`~selfroute.PreRoute`; this
stage applies it when ``pre_route`` is configured and the RAG step could otherwise run.
"""

from __future__ import annotations

from selfroute._flow._state import FlowState

__all__ = ["pre_route"]


def pre_route(state: FlowState) -> FlowState:
    """The state with ``reason`` set to the pre-routing reason when the question goes straight to
    long context; unchanged otherwise (no step: pre-routing needs no I/O)."""
    policy = state.config.pre_route
    if policy is None or state.reason is not None:
        return state
    reason = policy.check(state.question, state.ranked)
    return state if reason is None else state.evolve(reason=reason)
