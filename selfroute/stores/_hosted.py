"""Hosted embedding APIs called concurrently while indexing: OpenAI-compatible and Gemini.

``index`` with ``--embedding openai`` (OpenAI, or any OpenAI-compatible ``/v1/embeddings``
server: TEI, vLLM, Ollama) or ``--embedding google`` (Gemini ``batchEmbedContents``) spends its
time waiting on the provider. :class:`HostedEmbedder` keeps up to ``concurrency`` requests in
flight (``--embedding-concurrency``, :data:`DEFAULT_EMBEDDING_CONCURRENCY`), each one sized by
tokens within the provider's limits (:class:`ProviderLimits`), and returns the vectors in input
order. Sizes are bounded without tokenizing (:func:`token_bound`: a text has at most as many
tokens as UTF-8 bytes, for the provider's tokenizer too, which the bundled ``o200k_base`` is
not); only a text whose bound passes the per-input limit is counted with the bundled
``o200k_base`` tokenizer, and cut to the limit (with a safety margin) if it is over
(:attr:`EmbedStats.truncated`). Counting every chunk cost about as much CPU as the rest of the
embedding work.

A request refused with HTTP 429 or 408, or failing with a 5xx or a connection error, is retried
up to ``max_attempts`` times in all: after the delay the server asked for (``Retry-After`` in
seconds or as an HTTP date, or ``retry-after-ms``) when it said, else after an exponential
backoff with jitter. After the last attempt, or at once for another 4xx (a bad key, an unknown
model), :class:`EmbeddingUnavailableError` names the step, the status and the server's message,
with keys masked.

The vectors are what the provider returns, in float32 (requested as base64, read as floats when
a server ignores that): the same vectors Chroma's own embedding functions give, so queries
embedded through Chroma's function match the stored chunks.
"""

from __future__ import annotations

import base64
import email.utils
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute._redact import cap_text, redact
from selfroute._tokens import TokenCounter, default_token_counter
from selfroute.stores._embedding import EmbeddingChoice, require_key
from selfroute.stores._errors import EmbeddingUnavailableError

__all__ = [
    "DEFAULT_EMBEDDING_CONCURRENCY",
    "GEMINI_LIMITS",
    "HOSTED_KINDS",
    "OPENAI_LIMITS",
    "EmbedStats",
    "HostedEmbedder",
    "PendingVectors",
    "ProviderLimits",
    "hosted_embedder",
    "plan_requests",
    "retry_delay",
    "token_bound",
]

#: The embedding kinds served by a hosted API.
HOSTED_KINDS = ("openai", "google")
#: Embedding requests in flight at once by default (``--embedding-concurrency``).
DEFAULT_EMBEDDING_CONCURRENCY = 8
#: Attempts per request (the first one and the retries).
DEFAULT_MAX_ATTEMPTS = 6
#: The longest wait between attempts, whatever the server asks.
MAX_RETRY_WAIT_S = 120.0
#: Statuses worth another attempt besides the 5xx.
_RETRYABLE = frozenset({408, 409, 429})
#: Requests are cut to this share of the provider's token limits: o200k_base counts are close
#: to, not equal to, the provider's own.
_MARGIN = 0.9
#: A request is not split below this many tokens (bytes, as bounded) to spread the work.
_MIN_SPREAD_TOKENS = 16384

_OPENAI_URL = "https://api.openai.com/v1"
_GEMINI_URL = "https://generativelanguage.googleapis.com"


@dataclass(frozen=True)
class ProviderLimits:
    """What one embedding request may carry.

    Attributes:
        max_inputs: Texts per request.
        max_request_tokens: Tokens per request (``None``: only ``max_inputs`` x
            ``max_input_tokens``).
        max_input_tokens: Tokens per text (a longer one is cut to this).
    """

    max_inputs: int
    max_request_tokens: int | None
    max_input_tokens: int


#: OpenAI ``/v1/embeddings``: 2,048 inputs and 300,000 tokens per request, 8,191 per input.
OPENAI_LIMITS = ProviderLimits(2048, 300_000, 8191)
#: Gemini ``batchEmbedContents``: 100 requests per batch, 2,048 tokens per text.
GEMINI_LIMITS = ProviderLimits(100, None, 2048)


def token_bound(text: str) -> int:
    """At most this many tokens: ``text``'s UTF-8 bytes (a byte-level BPE token -- OpenAI's
    ``cl100k_base``, the bundled ``o200k_base`` -- or a SentencePiece piece covers at least one
    byte), computed without tokenizing."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def plan_requests(
    counts: Sequence[int], limits: ProviderLimits, *, spread: int = 1
) -> list[tuple[int, int]]:
    """Cut texts with these token ``counts`` (or upper bounds of them) into requests: contiguous
    ``(start, end)`` slices in order, each within ``limits`` (with a safety margin), and -- when
    there is enough work -- about ``spread`` of them of even size, so that ``spread`` requests in
    flight share it.

    A text counted over ``max_input_tokens`` counts as that many (it is cut before sending).
    """
    cap_input = int(limits.max_input_tokens * _MARGIN)
    sizes = [min(max(c, 1), cap_input) for c in counts]
    cap = limits.max_request_tokens
    request_cap = int(cap * _MARGIN) if cap is not None else sys.maxsize
    total = sum(sizes)
    target = max(_MIN_SPREAD_TOKENS, -(-total // max(1, spread)))
    budget = min(request_cap, target)
    slices: list[tuple[int, int]] = []
    start, tokens = 0, 0
    for i, size in enumerate(sizes):
        if i > start and (i - start >= limits.max_inputs or tokens + size > budget):
            slices.append((start, i))
            start, tokens = i, 0
        tokens += size
    if start < len(sizes):
        slices.append((start, len(sizes)))
    return slices


def retry_delay(
    headers: Mapping[str, str], attempt: int, *, backoff_s: float, now: float | None = None
) -> tuple[float, bool]:
    """How long to wait before attempt ``attempt + 1``, and whether the server said so.

    ``retry-after-ms``, then ``Retry-After`` (seconds, or an HTTP date), else exponential
    backoff from ``backoff_s`` with jitter; never more than :data:`MAX_RETRY_WAIT_S`.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    asked: float | None = None
    ms = lowered.get("retry-after-ms")
    if ms:
        try:
            asked = float(ms) / 1000.0
        except ValueError:
            asked = None
    after = lowered.get("retry-after")
    if asked is None and after:
        try:
            asked = float(after)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(after)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                asked = when.timestamp() - (time.time() if now is None else now)
    if asked is not None and asked == asked:  # not NaN
        return min(max(asked, 0.0), MAX_RETRY_WAIT_S), True
    wait = backoff_s * (2**attempt) * (0.5 + random.random() / 2)
    return min(wait, MAX_RETRY_WAIT_S), False


@dataclass
class EmbedStats:
    """What a :class:`HostedEmbedder` did so far.

    Attributes:
        inputs: Texts embedded.
        tokens: Their tokens as the provider reported them (OpenAI's ``usage``), else
            estimated (UTF-8 bytes / 4).
        requests: Requests answered with vectors.
        retries: Attempts repeated after a 429, 408, 5xx or connection error.
        truncated: Texts cut to the provider's input limit.
        seconds: Wall time with at least one request in flight.
    """

    inputs: int = 0
    tokens: int = 0
    requests: int = 0
    retries: int = 0
    truncated: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (with ``chunks_per_s`` and ``tokens_per_s``)."""
        busy = self.seconds
        return {
            "inputs": self.inputs,
            "tokens": self.tokens,
            "requests": self.requests,
            "retries": self.retries,
            "truncated": self.truncated,
            "seconds": busy,
            "chunks_per_s": self.inputs / busy if busy > 0 else 0.0,
            "tokens_per_s": self.tokens / busy if busy > 0 else 0.0,
        }


class PendingVectors:
    """The vectors of one :meth:`HostedEmbedder.submit`, in input order once all are back."""

    def __init__(
        self,
        plan: Future[list[Future[list[Any]]]],
        count: int,
        sent: list[threading.Event] | None = None,
        saturated: Callable[[], bool] | None = None,
    ) -> None:
        self._plan = plan
        self._count = count
        self._sent = sent if sent is not None else []
        self._saturated = saturated or (lambda: False)

    def wait_sent(self, timeout: float = 1.0) -> bool:
        """Wait until every started request's body is on the wire (requests queued for a free
        connection are not waited for), at most ``timeout`` seconds; whether they are. A caller about to hold the GIL for long (a Chroma
        write) calls this first, so the provider works on the requests meanwhile."""
        deadline = time.monotonic() + timeout
        try:
            parts = self._plan.result(timeout=timeout)
        except BaseException:  # cancelled, failed or slow: result() reports it
            return self._plan.done()
        for event, part in zip(self._sent, parts, strict=False):
            while not event.wait(0.002) and not part.done():
                if not part.running() and self._saturated():
                    break  # queued behind requests on every connection: the provider's pace
                if time.monotonic() >= deadline:
                    return False
        return True

    def result(self) -> list[Any]:
        """Wait for every request; the first failure is raised (the others are cancelled)."""
        vectors: list[Any] = []
        try:
            for part in self._plan.result():
                vectors.extend(part.result())
        except BaseException:
            self.cancel()
            raise
        if len(vectors) != self._count:  # pragma: no cover - each part is checked
            raise EmbeddingUnavailableError(f"{len(vectors)} vectors for {self._count} texts")
        return vectors

    async def aresult(self) -> list[Any]:
        """:meth:`result` without blocking the event loop (awaits the requests' futures)."""
        import asyncio

        vectors: list[Any] = []
        try:
            parts = await asyncio.wrap_future(self._plan)
            for chunk in await asyncio.gather(*(asyncio.wrap_future(p) for p in parts)):
                vectors.extend(chunk)
        except BaseException:
            self.cancel()
            raise
        return vectors

    def cancel(self) -> None:
        """Cancel the requests not started yet."""
        if not self._plan.cancel() and self._plan.done() and not self._plan.exception():
            for part in self._plan.result():
                part.cancel()


@dataclass(frozen=True)
class _Protocol:
    """How one provider's embedding request and reply look."""

    name: str
    url: str
    headers: dict[str, str]
    limits: ProviderLimits
    body: Callable[[Sequence[str], bool], dict[str, Any]]
    vectors: Callable[[Any], list[Any]]


def _decode(value: Any) -> Any:
    import numpy as np

    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


def _openai_vectors(reply: Any) -> list[Any]:
    data = sorted(reply["data"], key=lambda item: int(item.get("index", 0)))
    return [_decode(item["embedding"]) for item in data]


def _gemini_vectors(reply: Any) -> list[Any]:
    return [_decode(item["values"]) for item in reply["embeddings"]]


def _openai_protocol(choice: EmbeddingChoice) -> _Protocol:
    from_env = os.environ.get("OPENAI_API_KEY")
    key = from_env
    if not key and not choice.base_url:
        key = require_key(
            ["OPENAI_API_KEY"], "--embedding openai", "use --embedding offline (no key, no network)"
        )
    base = (choice.base_url or os.environ.get("OPENAI_BASE_URL") or _OPENAI_URL).rstrip("/")
    model = str(choice.model)

    def body(texts: Sequence[str], as_base64: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"model": model, "input": list(texts)}
        if as_base64:
            out["encoding_format"] = "base64"
        return out

    headers = {"Authorization": f"Bearer {key or 'not-needed'}"}
    return _Protocol("openai", f"{base}/embeddings", headers, OPENAI_LIMITS, body, _openai_vectors)


def _gemini_protocol(choice: EmbeddingChoice) -> _Protocol:
    key = require_key(
        ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        "--embedding google",
        "use --embedding offline (no key, no network)",
    )
    base = (os.environ.get("GOOGLE_GEMINI_BASE_URL") or _GEMINI_URL).rstrip("/")
    model = str(choice.model)
    path = model if model.startswith("models/") else f"models/{model}"

    def body(texts: Sequence[str], as_base64: bool) -> dict[str, Any]:
        return {"requests": [{"model": path, "content": {"parts": [{"text": t}]}} for t in texts]}

    headers = {"x-goog-api-key": key}
    url = f"{base}/v1beta/{path}:batchEmbedContents"
    return _Protocol("google", url, headers, GEMINI_LIMITS, body, _gemini_vectors)


class _Failure(Exception):
    """One failed attempt: retryable or not, with what the server said."""

    def __init__(self, detail: str, *, retryable: bool, headers: Mapping[str, str]) -> None:
        super().__init__(detail)
        self.retryable = retryable
        self.headers = dict(headers)


class HostedEmbedder:
    """Embeds texts through a hosted API with up to ``concurrency`` requests in flight.

    Use as a context manager (leaving it on an error cancels the requests not started).

    Args:
        choice: An ``openai`` or ``google`` :class:`EmbeddingChoice`.
        concurrency: Requests in flight at once (>= 1).
        max_attempts: Attempts per request, the first one included (>= 1).
        backoff_s: First backoff of a retry the server gave no delay for.
        timeout_s: Seconds per attempt.
        counter: Token counter (default: the bundled ``o200k_base``).
        transport: An ``httpx`` transport (tests).
        step: The step its errors name (``indexing``; ``embedding`` for a query).

    Raises:
        ConfigurationError: ``concurrency`` or ``max_attempts`` below 1, or another kind.
        MissingCredentialsError: No API key where one is needed.
        MissingDependencyError: ``httpx`` or ``numpy`` is not installed (extra ``chroma``).
    """

    def __init__(
        self,
        choice: EmbeddingChoice,
        *,
        concurrency: int = DEFAULT_EMBEDDING_CONCURRENCY,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        backoff_s: float = 0.5,
        timeout_s: float = 120.0,
        counter: TokenCounter | None = None,
        transport: Any = None,
        step: str = "indexing",
    ) -> None:
        from selfroute._errors import ConfigurationError

        for name, value in (("concurrency", concurrency), ("max_attempts", max_attempts)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigurationError(f"embedding {name} must be an integer >= 1, got {value!r}")
        if choice.kind not in HOSTED_KINDS:
            raise ConfigurationError(f"{choice.spec} is not a hosted embedding")
        try:
            import httpx
            import numpy  # noqa: F401 - the vectors are numpy arrays
        except ImportError as exc:  # pragma: no cover - both come with chromadb
            raise MissingDependencyError(exc.name or "httpx", "chroma") from exc
        self.choice = choice
        self.concurrency = concurrency
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.step = step
        maker = _openai_protocol if choice.kind == "openai" else _gemini_protocol
        self._protocol = maker(choice)
        self._given_counter = counter
        self._base64 = True
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._http = httpx.Client(timeout=timeout_s, limits=limits, transport=transport)
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="selfroute-embed")
        # counts tokens (tiktoken lets go of the GIL) and sends the requests, in submit order
        self._planner = ThreadPoolExecutor(1, thread_name_prefix="selfroute-embed-plan")
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._active = 0
        self._busy_since = 0.0
        self._stats = EmbedStats()

    def __repr__(self) -> str:
        return f"HostedEmbedder({self.choice.spec}, concurrency={self.concurrency})"

    def __enter__(self) -> HostedEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(cancel=exc_type is not None)

    @property
    def limits(self) -> ProviderLimits:
        """The provider's request limits."""
        return self._protocol.limits

    def stats(self) -> EmbedStats:
        """A copy of the counts so far."""
        with self._lock:
            out = EmbedStats(**vars(self._stats))
            if self._active:
                out.seconds += time.perf_counter() - self._busy_since
        return out

    def close(self, *, cancel: bool = False) -> None:
        """Stop the workers (``cancel``: drop the requests not started, end the retry waits)."""
        if cancel:  # requests in flight fail at once (their connections close), none retries
            self._stop.set()
            self._planner.shutdown(wait=True, cancel_futures=True)
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._http.close()
            self._pool.shutdown(wait=True)
            return
        self._planner.shutdown(wait=True)
        self._pool.shutdown(wait=True)
        self._http.close()

    def submit(self, texts: Sequence[str]) -> PendingVectors:
        """Send ``texts`` out (token-sized requests, in order, after those of earlier calls)
        and return their vectors' :class:`PendingVectors` at once: tokens are counted and the
        requests sent on a thread of the embedder's."""
        sent: list[threading.Event] = []
        plan = self._planner.submit(self._send, list(texts), sent)
        return PendingVectors(plan, len(texts), sent, self._saturated)

    def _saturated(self) -> bool:
        with self._lock:
            return self._active >= self.concurrency

    @property
    def _counter(self) -> TokenCounter:
        """The token counter, loaded when a long text first needs it."""
        if self._given_counter is None:
            self._given_counter = default_token_counter()
        return self._given_counter

    def _send(self, texts: list[str], sent: list[threading.Event]) -> list[Future[list[Any]]]:
        limits = self._protocol.limits
        cap = int(limits.max_input_tokens * _MARGIN)
        prepared: list[str] = []
        sizes: list[int] = []
        cut = 0
        for text in texts:
            text = text or " "
            size = token_bound(text)
            if size > cap:  # may be over the provider's limit: count it
                size = self._counter.count(text)
                if size > cap:
                    text, size, cut = self._counter.head(text, cap), cap, cut + 1
            prepared.append(text)
            sizes.append(size)
        with self._lock:
            self._stats.truncated += cut
        spans = plan_requests(sizes, limits, spread=self.concurrency)
        sent.extend(threading.Event() for _ in spans)
        return [
            self._pool.submit(self._embed, prepared[a:b], sum(sizes[a:b]), event)
            for (a, b), event in zip(spans, sent, strict=True)
        ]

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """The vectors of ``texts``, in order (see :meth:`submit`)."""
        return self.submit(texts).result() if texts else []

    def _embed(
        self, texts: list[str], bound: int, sent: threading.Event | None = None
    ) -> list[Any]:
        self._enter()
        try:
            vectors, tokens = self._with_retries(texts, sent)
        finally:
            self._leave()
            if sent is not None:
                sent.set()
        with self._lock:
            self._stats.inputs += len(texts)
            self._stats.tokens += tokens if tokens is not None else -(-bound // 4)
            self._stats.requests += 1
        return vectors

    def _enter(self) -> None:
        with self._lock:
            if self._active == 0:
                self._busy_since = time.perf_counter()
            self._active += 1

    def _leave(self) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0:
                self._stats.seconds += time.perf_counter() - self._busy_since

    def _with_retries(
        self, texts: list[str], sent: threading.Event | None = None
    ) -> tuple[list[Any], int | None]:
        last = ""
        for attempt in range(self.max_attempts):
            if self._stop.is_set():
                raise CancelledError("indexing stopped")
            try:
                return self._attempt(texts, sent)
            except _Failure as failure:
                last = str(failure)
                if not failure.retryable:
                    raise self._error(len(texts), last, attempt + 1, final=False) from None
                if attempt + 1 == self.max_attempts:
                    break
                wait, _ = retry_delay(failure.headers, attempt, backoff_s=self.backoff_s)
                with self._lock:
                    self._stats.retries += 1
                if self._stop.wait(wait):
                    raise CancelledError("indexing stopped") from None
        raise self._error(len(texts), last, self.max_attempts, final=True)

    def _error(self, n: int, detail: str, attempts: int, *, final: bool) -> Exception:
        tries = f" after {attempts} attempts" if final else ""
        return EmbeddingUnavailableError(
            f"{self.step}: embedding {n} texts with {self.choice.spec} at {self._protocol.url} "
            f"failed{tries}: {detail}; check the key, the model and the server, lower "
            "--embedding-concurrency if the provider rate-limits, or use --embedding offline",
            embedding=self.choice.spec,
        )

    def _attempt(
        self, texts: list[str], sent: threading.Event | None = None
    ) -> tuple[list[Any], int | None]:
        import httpx

        protocol = self._protocol
        as_base64 = self._base64 and protocol.name == "openai"
        extensions: dict[str, Any] = {}
        if sent is not None:

            def trace(event: str, info: Any) -> None:
                if event.endswith("send_request_body.complete"):
                    sent.set()  # the provider has the request: wait_sent may return

            extensions["trace"] = trace
        try:
            response = self._http.post(
                protocol.url,
                json=protocol.body(texts, as_base64),
                headers=protocol.headers,
                extensions=extensions,
            )
        except httpx.HTTPError as exc:
            detail = _clean(f"{type(exc).__name__}: {exc}", protocol.headers)
            raise _Failure(detail, retryable=True, headers={}) from None
        status = response.status_code
        if status >= 400:
            message = _clean(f"HTTP {status}: {response.text}", protocol.headers)
            if as_base64 and status in (400, 422) and "encoding" in response.text.lower():
                self._base64 = False  # a server that refuses base64: ask for floats
                raise _Failure(message, retryable=True, headers={"retry-after": "0"})
            retryable = status in _RETRYABLE or status >= 500
            raise _Failure(message, retryable=retryable, headers=response.headers)
        try:
            reply = response.json()
            vectors = protocol.vectors(reply)
            usage = reply.get("usage") if isinstance(reply, dict) else None
            tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        except (ValueError, KeyError, TypeError) as exc:
            detail = _clean(f"unreadable reply ({type(exc).__name__}: {exc})", protocol.headers)
            raise _Failure(detail, retryable=False, headers={}) from None
        if len(vectors) != len(texts):
            raise _Failure(
                f"{len(vectors)} vectors for {len(texts)} texts", retryable=False, headers={}
            )
        return vectors, tokens if isinstance(tokens, int) else None


def _clean(text: str, headers: Mapping[str, str]) -> str:
    secrets = [v.removeprefix("Bearer ") for v in headers.values()]
    return cap_text(redact(" ".join(text.split()), secrets=secrets), 300)


def hosted_embedder(
    choice: EmbeddingChoice, concurrency: int = DEFAULT_EMBEDDING_CONCURRENCY
) -> HostedEmbedder | None:
    """A :class:`HostedEmbedder` for an ``openai`` or ``google`` choice, else ``None``."""
    if choice.kind not in HOSTED_KINDS:
        return None
    return HostedEmbedder(choice, concurrency=concurrency)
