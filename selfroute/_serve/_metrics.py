"""``/metrics`` of ``selfroute serve``: Prometheus text format (``prometheus-client``).

Every series is labelled by collection (a tenant's name, never its key): requests by endpoint and
status, questions by route and reason, streamed replies that failed mid-way, tokens by stage and
kind, long-context calls, the always-long-context input tokens and the input tokens saved against them, and latency histograms
of requests and questions.
"""

from __future__ import annotations

from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute._result import RouteResult, Stage

try:
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        generate_latest,
    )
except ImportError as exc:  # pragma: no cover - exercised without the serve extra
    raise MissingDependencyError("prometheus-client", "serve") from exc

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class Metrics:
    """The server's counters, in a registry of its own (two apps in one process do not mix)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "selfroute_requests",
            "HTTP requests by endpoint and status",
            ["endpoint", "status"],
            registry=r,
        )
        self.request_seconds = Histogram(
            "selfroute_request_seconds",
            "HTTP request latency",
            ["endpoint"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.questions = Counter(
            "selfroute_questions",
            "questions answered by route and reason",
            ["collection", "route", "reason"],
            registry=r,
        )
        self.question_seconds = Histogram(
            "selfroute_question_seconds",
            "time to answer a question",
            ["collection", "route"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.tokens = Counter(
            "selfroute_tokens",
            "model tokens by stage and kind (input, output)",
            ["collection", "stage", "kind"],
            registry=r,
        )
        self.lc_calls = Counter(
            "selfroute_long_context_calls", "long-context model calls", ["collection"], registry=r
        )
        self.always_lc = Counter(
            "selfroute_always_long_context_input_tokens",
            "input tokens always-long-context would have sent",
            ["collection"],
            registry=r,
        )
        self.saved = Gauge(
            "selfroute_saved_input_tokens",
            "always-long-context input tokens minus the input tokens sent (running sum)",
            ["collection"],
            registry=r,
        )
        self.in_flight = Gauge(
            "selfroute_in_flight_requests", "requests being answered", registry=r
        )
        self.stream_errors = Counter(
            "selfroute_stream_errors",
            "streamed replies that failed after their first event (an error event ends them)",
            ["collection", "code"],
            registry=r,
        )
        self.rejected = Counter(
            "selfroute_rejected", "requests refused before any work, by why", ["why"], registry=r
        )  # fmt: skip

    def request(self, endpoint: str, status: int, seconds: float) -> None:
        """Count one HTTP request."""
        self.requests.labels(endpoint, str(status)).inc()
        self.request_seconds.labels(endpoint).observe(seconds)

    def question(self, collection: str, result: RouteResult, seconds: float) -> None:
        """Count one answered question (the ``RouteService`` observer)."""
        self.questions.labels(collection, result.route.value, result.reason.value).inc()
        self.question_seconds.labels(collection, result.route.value).observe(seconds)
        for step in result.steps:
            stage = step.stage.value
            self.tokens.labels(collection, stage, "input").inc(step.usage.input_tokens)
            self.tokens.labels(collection, stage, "output").inc(step.usage.output_tokens)
            if step.stage is Stage.LONG_CONTEXT:
                self.lc_calls.labels(collection).inc()
        if result.long_context_tokens is not None:
            self.always_lc.labels(collection).inc(result.long_context_tokens)
            self.saved.labels(collection).inc(
                result.long_context_tokens - result.usage.input_tokens
            )

    def stream_error(self, collection: str, code: str | None) -> None:
        """Count one streamed reply that ended with an error event."""
        self.stream_errors.labels(collection, code or "error").inc()

    def render(self) -> bytes:
        """The text exposition format."""
        out: Any = generate_latest(self.registry)
        return bytes(out)
