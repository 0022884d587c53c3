"""The embedding endpoint of the loopback servers, with a provider's latency and rate limits.

``ScriptedOpenAIServer`` serves it at ``POST /v1/embeddings`` and ``ScriptedGeminiServer`` at
``POST /v1beta/models/{model}:batchEmbedContents``; both hand the request to their
:class:`EmbeddingEndpoint` (``server.embeddings``), which only differs from the other in wire
format (``server.embedding_texts`` / ``server.embeddings_body``).

A request takes ``base_s + per_token_s * tokens`` (tokens estimated as characters / 4), like a
hosted provider (defaults: 40 ms + 4 us per token), and at most ``max_concurrent`` requests are
worked on at once (16 by default); more wait their turn, as on a provider. The vectors are
selfroute's deterministic :class:`~selfroute._embeddings.HashingEmbedding` of each text
(``dim``), so retrieval over them is meaningful (lexical), and they are the same for the same
text in every run. :meth:`EmbeddingEndpoint.fail_next` answers the next requests with an error
(HTTP 429 with ``Retry-After`` by default) before serving again. Every request is recorded
(:class:`EmbedCall`) with the server's clock: when it arrived, how many were in flight, what it
answered -- so tests assert on attempt counts and on the server having seen a retry only after
the delay it asked for, not on wall-clock durations.

Run standalone (benchmarks)::

    python -m tests.support.openai_server --embed-dim 1536 --embed-base-ms 40 \
        --embed-us-per-token 4 --embed-max-concurrent 16
"""

from __future__ import annotations

import base64
import json
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EmbedCall", "EmbeddingEndpoint", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """The tokens the endpoint charges a text: characters / 4 (at least 1)."""
    return max(1, len(text) // 4)


@dataclass
class EmbedCall:
    """One embedding request as the server saw it.

    Attributes:
        arrived: ``time.monotonic()`` when it arrived.
        answered: ``time.monotonic()`` when its reply was sent.
        texts: Its inputs, in order.
        tokens: Their estimated tokens.
        status: The HTTP status answered.
        retry_after: The ``Retry-After`` it was given (an error reply), else ``None``.
        in_flight: Requests in flight when it arrived, itself included.
        path: The request path.
    """

    arrived: float
    texts: list[str]
    tokens: int
    in_flight: int
    path: str
    answered: float = 0.0
    status: int = 200
    retry_after: str | None = None


@dataclass
class _Fault:
    status: int
    retry_after: str | None
    left: int
    message: str | None = None


@dataclass
class EmbeddingEndpoint:
    """Serves embedding requests for a loopback server (see the module docstring).

    Attributes:
        dim: Vector size.
        base_s: Seconds per request.
        per_token_s: Seconds per (estimated) token of a request.
        max_concurrent: Requests worked on at once (more wait).
        calls: Every request, in arrival order.
        max_in_flight: The most requests in flight at once.
        hold_back: Requests whose texts it matches are answered only once a request that
            arrived after them has been answered (at most 5 s later): replies out of order
            whatever the machine's load.
    """

    dim: int = 1536
    base_s: float = 0.040
    per_token_s: float = 4e-6
    max_concurrent: int = 16
    calls: list[EmbedCall] = field(default_factory=list)
    max_in_flight: int = 0
    hold_back: Callable[[list[str]], bool] | None = None
    _in_flight: int = 0
    _faults: list[_Fault] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.BoundedSemaphore | None = None
    _embedder: Any = None

    def configure(
        self,
        *,
        dim: int | None = None,
        base_s: float | None = None,
        per_token_s: float | None = None,
        max_concurrent: int | None = None,
    ) -> EmbeddingEndpoint:
        """Change the latency model or the vector size (before requests arrive)."""
        if dim is not None:
            self.dim, self._embedder = dim, None
        if base_s is not None:
            self.base_s = base_s
        if per_token_s is not None:
            self.per_token_s = per_token_s
        if max_concurrent is not None:
            self.max_concurrent, self._slots = max_concurrent, None
        return self

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 429,
        retry_after: str | None = "1",
        message: str | None = None,
    ) -> None:
        """Answer the next ``count`` requests with ``status`` (and ``Retry-After``, if given;
        ``message``: the error's text)."""
        with self._lock:
            self._faults.append(_Fault(status, retry_after, count, message))

    def reset(self) -> None:
        """Forget the recorded requests and pending faults."""
        with self._lock:
            self.calls.clear()
            self._faults.clear()
            self.max_in_flight = 0

    def _wait_for_a_later_answer(self, call: EmbedCall, timeout_s: float = 5.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                later = self.calls[self.calls.index(call) + 1 :]
                if any(c.answered for c in later):
                    return
            time.sleep(0.005)

    @property
    def texts(self) -> list[str]:
        """Every text embedded successfully, in arrival order of the requests."""
        return [t for c in self.calls if c.status == 200 for t in c.texts]

    def vector(self, text: str) -> list[float]:
        """The vector the endpoint gives ``text``."""
        from selfroute._embeddings import HashingEmbedding

        if self._embedder is None:
            self._embedder = HashingEmbedding(self.dim)
        vector: list[float] = self._embedder.embed(text)
        return vector

    def serve(
        self,
        handler: Any,
        body: dict[str, Any],
        texts: list[str],
        reply: Callable[[list[Any]], dict[str, Any]],
        error: Callable[[int, str], dict[str, Any]],
        sleep: Callable[[float], bool],
    ) -> None:
        """Answer one request: wait for a slot and the latency, then the vectors (or a fault)."""
        tokens = sum(estimate_tokens(t) for t in texts)
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            call = EmbedCall(time.monotonic(), list(texts), tokens, self._in_flight, handler.path)
            self.calls.append(call)
            fault = self._faults[0] if self._faults else None
            if fault is not None:
                fault.left -= 1
                if fault.left <= 0:
                    self._faults.pop(0)
            if self._slots is None:
                self._slots = threading.BoundedSemaphore(self.max_concurrent)
            slots = self._slots
        try:
            if fault is not None:
                call.status, call.retry_after = fault.status, fault.retry_after
                headers = {"Retry-After": fault.retry_after} if fault.retry_after else {}
                message = fault.message or (
                    "rate limit reached" if fault.status == 429 else "server error"
                )
                call.answered = time.monotonic()
                _send(handler, fault.status, error(fault.status, message), headers)
                return
            if self.hold_back is not None and self.hold_back(call.texts):
                self._wait_for_a_later_answer(call)
            with slots:
                if not sleep(self.base_s + self.per_token_s * tokens):
                    handler.close_connection = True
                    return
                as_base64 = body.get("encoding_format") == "base64"
                vectors: list[Any] = [self.vector(t) for t in texts]
                if as_base64:
                    vectors = [base64.b64encode(array("f", v).tobytes()).decode() for v in vectors]
            call.answered = time.monotonic()
            _send(handler, 200, reply(vectors), {})
        except (BrokenPipeError, ConnectionResetError, OSError):
            handler.close_connection = True
        finally:
            with self._lock:
                self._in_flight -= 1


def _send(handler: Any, status: int, payload: Any, headers: dict[str, str]) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()
