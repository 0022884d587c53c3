"""The ASGI app of ``selfroute serve``: ``/mcp``, ``/v1/chat/completions``, ``/v1/models``,
``/healthz`` and ``/metrics``, with tenants, limits and a graceful drain.

Order of checks on every request, before any work: draining (503), the body size
(``Content-Length`` over the limit is a 413 before the body is read; a chunked body is cut off at
the limit), the bearer key (401 without one or with an unknown one; ``/healthz`` needs none). A
key names its tenant: one collection, one :class:`~selfroute._serve._service.RouteService`, one
MCP server with its own session manager (a session opened with one key is unknown to every
other). Keys are compared in constant time and never written to a log or an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from selfroute._errors import ConfigurationError, SelfRouteError
from selfroute._serve._chat_api import (
    ApiError,
    api_error,
    chat_completion,
    error_body,
    models_body,
    question_of,
    stream_completion,
)
from selfroute._serve._mcp import build_mcp
from selfroute._serve._metrics import CONTENT_TYPE, Metrics
from selfroute._serve._service import Busy, RouteService

__all__ = ["Limits", "ServeApp", "SlotGate", "Tenant", "load_keys"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True)
class Limits:
    """The server's limits.

    Attributes:
        max_concurrency: Questions answered at once.
        queue_timeout_s: Seconds a question waits for a slot before a 503.
        max_body_bytes: Largest request body.
        shutdown_timeout_s: Seconds a drain waits for requests in flight.
    """

    max_concurrency: int = 32
    queue_timeout_s: float = 30.0
    max_body_bytes: int = 256 * 1024
    shutdown_timeout_s: float = 60.0


class SlotGate:
    """At most ``limit`` questions at once; the rest wait up to ``queue_timeout_s``."""

    def __init__(self, limit: int, queue_timeout_s: float) -> None:
        self._sem = asyncio.Semaphore(limit)
        self.queue_timeout_s = queue_timeout_s

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold a slot.

        Raises:
            Busy: None freed up in time.
        """
        try:
            await asyncio.wait_for(self._sem.acquire(), self.queue_timeout_s)
        except asyncio.TimeoutError:
            raise Busy(
                f"the server is busy: no free slot within {self.queue_timeout_s:g}s "
                "(--max-concurrency, --queue-timeout)"
            ) from None
        try:
            yield
        finally:
            self._sem.release()


@dataclass
class Tenant:
    """One collection served to the holders of one or more keys.

    Attributes:
        name: The collection.
        service: Its questions.
        mcp: Its MCP server.
        mcp_app: The MCP server's streamable HTTP app (its own session manager).
    """

    name: str
    service: RouteService
    mcp: Any
    mcp_app: Any


def load_keys(path: str) -> dict[str, dict[str, Any]]:
    """The keys file: ``{"<key>": {"collection": "<name>", "max_lc_calls": N?}}``.

    Raises:
        ConfigurationError: Unreadable, not that shape (the message never shows a key).
    """
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(
            f"--keys {path}: cannot read it as JSON: {type(exc).__name__}"
        ) from None
    if not isinstance(data, dict) or not data:
        raise ConfigurationError(f"--keys {path}: must be a non-empty JSON object of keys")
    for n, (key, spec) in enumerate(data.items(), 1):
        where = f"--keys {path}: entry {n}"
        if not isinstance(key, str) or len(key) < 8 or not key.isprintable() or " " in key:
            raise ConfigurationError(
                f"{where}: a key must be at least 8 printable characters, no spaces"
            )
        if (
            not isinstance(spec, dict)
            or not isinstance(spec.get("collection"), str)
            or not spec["collection"]
        ):
            raise ConfigurationError(f'{where}: needs a "collection" name')
        unknown = set(spec) - {"collection", "max_lc_calls"}
        if unknown:
            raise ConfigurationError(f"{where}: unknown fields {sorted(unknown)}")
        calls = spec.get("max_lc_calls")
        if calls is not None and (
            isinstance(calls, bool) or not isinstance(calls, int) or calls < 0
        ):
            raise ConfigurationError(f"{where}: max_lc_calls must be a non-negative integer")
    return data


def make_tenant(service: RouteService, *, check_host: bool) -> Tenant:
    """A tenant: the service, its MCP server and that server's streamable HTTP app.

    ``check_host`` keeps the SDK's DNS-rebinding protection (only a loopback ``Host``); with
    keys it is off (a rebound page cannot know a key, and a reverse proxy sends its own name)."""
    from mcp.server.transport_security import TransportSecuritySettings

    mcp = build_mcp(service)
    security = (
        None if check_host else TransportSecuritySettings(enable_dns_rebinding_protection=False)
    )
    app = mcp.streamable_http_app(streamable_http_path="/mcp", transport_security=security)
    return Tenant(service.name, service, mcp, app)


async def _respond(send: Send, status: int, body: bytes, content_type: str, **headers: str) -> None:
    raw = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]
    raw += [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, payload: Any, **headers: str) -> None:
    body = json.dumps(payload, ensure_ascii=False).encode()
    await _respond(send, status, body, "application/json", **headers)


async def _error(send: Send, error: ApiError, **headers: str) -> None:
    if error.status == 401:
        headers.setdefault("www_authenticate", 'Bearer realm="selfroute"')
    await _json(send, error.status, error_body(error), **headers)


class _TooLarge(Exception):
    pass


def _endpoint(path: str) -> str:
    for known in ("/v1/chat/completions", "/v1/models", "/mcp", "/healthz", "/metrics"):
        if path == known or path.startswith(known + "/"):
            return known
    return "other"


class ServeApp:
    """The ASGI app.

    Args:
        tenants: Key -> tenant (``None``: no keys, everyone is ``default``).
        default: The tenant without keys.
        limits: The limits.
    """

    def __init__(
        self, tenants: dict[str, Tenant] | None, default: Tenant | None, limits: Limits
    ) -> None:
        self.keys = tenants
        self.default = default
        self.limits = limits
        self.metrics = Metrics()
        self.gate = SlotGate(limits.max_concurrency, limits.queue_timeout_s)
        self.tenants = list({id(t): t for t in self._all()}.values())
        for tenant in self.tenants:
            tenant.service.slots = self.gate
            tenant.service.observer = self.metrics.question
        self.draining = False
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def _all(self) -> list[Tenant]:
        return (
            list(self.keys.values()) if self.keys is not None else [t for t in (self.default,) if t]
        )

    # lifecycle ------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The MCP session managers run while this is open; the model clients close after."""
        async with contextlib.AsyncExitStack() as stack:
            for tenant in self.tenants:
                await stack.enter_async_context(tenant.mcp.session_manager.run())
                stack.push_async_callback(tenant.service.aclose)
            yield

    async def drain(self) -> bool:
        """Refuse new requests (503) and wait for those in flight; ``False`` on time-out."""
        self.draining = True
        try:
            await asyncio.wait_for(self._idle.wait(), self.limits.shutdown_timeout_s)
        except asyncio.TimeoutError:
            return False
        return True

    # ASGI -----------------------------------------------------------------------------------
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        endpoint = _endpoint(scope["path"])
        status = {"code": 500}

        async def tracked(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        t0 = time.perf_counter()
        # requests that do work; not the MCP session's standing GET stream, probes or metrics
        counted = endpoint not in ("/healthz", "/metrics") and not (
            endpoint == "/mcp" and scope["method"] == "GET"
        )
        if counted:
            self.in_flight += 1
            self._idle.clear()
            self.metrics.in_flight.inc()
        try:
            await self._handle(scope, receive, tracked, endpoint)
        finally:
            if counted:
                self.in_flight -= 1
                self.metrics.in_flight.dec()
                if self.in_flight == 0:
                    self._idle.set()
            self.metrics.request(endpoint, status["code"], time.perf_counter() - t0)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with self.running():
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})

    async def _handle(self, scope: Scope, receive: Receive, send: Send, endpoint: str) -> None:
        if endpoint == "/healthz":
            ok = not self.draining
            await _json(
                send,
                200 if ok else 503,
                {"status": "ok" if ok else "draining", "in_flight": self.in_flight},
            )
            return
        if self.draining:
            self.metrics.rejected.labels("draining").inc()
            await _error(
                send,
                ApiError(503, "the server is shutting down", code="shutting_down"),
                connection="close",
                retry_after="1",
            )
            return
        if self.keys is None and not _loopback_host(scope):
            self.metrics.rejected.labels("host").inc()
            await _error(
                send,
                ApiError(
                    403, "without --keys only a loopback Host is served", code="forbidden_host"
                ),
            )
            return
        size = _content_length(scope)
        if size is not None and size > self.limits.max_body_bytes:
            self.metrics.rejected.labels("too_large").inc()
            await _error(send, self._too_large(), connection="close")
            return
        tenant = self._tenant(scope)
        if tenant is None:
            self.metrics.rejected.labels("unauthorized").inc()
            await _error(
                send,
                ApiError(
                    401,
                    "a valid bearer key is required (Authorization: Bearer KEY)",
                    code="invalid_api_key",
                ),
            )
            return
        limited = self._limited(receive)
        try:
            if endpoint == "/mcp":
                await tenant.mcp_app(scope, limited, send)
            elif endpoint == "/metrics":
                await _respond(send, 200, self.metrics.render(), CONTENT_TYPE)
            elif endpoint == "/v1/models":
                await _json(send, 200, models_body())
            elif endpoint == "/v1/chat/completions" and scope["method"] == "POST":
                await self._chat(tenant, limited, send)
            elif endpoint == "/v1/chat/completions":
                await _error(send, ApiError(405, "use POST"))
            else:
                await _error(
                    send,
                    ApiError(404, f"no such endpoint: {scope['path'][:100]}", code="not_found"),
                )
        except _TooLarge:
            self.metrics.rejected.labels("too_large").inc()
            await _error(send, self._too_large(), connection="close")

    def _too_large(self) -> ApiError:
        return ApiError(
            413,
            f"the request body is over {self.limits.max_body_bytes:,} bytes (--max-body-kb)",
            code="request_too_large",
        )

    def _tenant(self, scope: Scope) -> Tenant | None:
        if self.keys is None:
            return self.default
        header = dict(scope.get("headers") or ()).get(b"authorization", b"")
        scheme, _, token = header.decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        token = token.strip()
        found = None
        for key, tenant in self.keys.items():  # every key compared: no early exit on a match
            if hmac.compare_digest(key.encode(), token.encode("utf-8", "replace")):
                found = tenant
        return found

    def _limited(self, receive: Receive) -> Receive:
        limit = self.limits.max_body_bytes
        seen = 0

        async def wrapped() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        return wrapped

    async def _chat(self, tenant: Tenant, receive: Receive, send: Send) -> None:
        raw = b""
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            raw += message.get("body", b"")
            more = bool(message.get("more_body"))
        await _until_disconnect(receive, self._answer(tenant, raw, send))

    async def _answer(self, tenant: Tenant, raw: bytes, send: Send) -> None:
        try:
            try:
                body = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError:
                raise ApiError(
                    400, "the request body is not valid UTF-8", code="invalid_encoding"
                ) from None
            except ValueError:
                raise ApiError(
                    400, "the request body is not valid JSON", code="invalid_json"
                ) from None
            question, stream, include_usage = question_of(body)
            try:
                question = tenant.service.check(question)
            except SelfRouteError as exc:
                raise ApiError(400, str(exc), code="invalid_question", param="messages") from None
            if not stream:
                try:
                    payload = await chat_completion(tenant.service, question)
                except Busy as exc:
                    raise ApiError(503, str(exc), code="busy") from None
                await _json(send, 200, payload)
                return
        except ApiError as error:
            extra = {"retry_after": "1"} if error.status == 503 else {}
            await _error(send, error, **extra)
            return
        failed = functools.partial(self._stream_failed, tenant.name)
        await self._stream(send, stream_completion(tenant.service, question, include_usage, failed))

    def _stream_failed(self, collection: str, error: ApiError) -> None:
        self.metrics.stream_error(collection, error.code)

    async def _stream(self, send: Send, chunks: AsyncIterator[bytes]) -> None:
        started = False
        try:
            async for data in chunks:
                if not started:
                    headers = [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-cache"),
                    ]
                    await send({"type": "http.response.start", "status": 200, "headers": headers})
                    started = True
                await send({"type": "http.response.body", "body": data, "more_body": True})
        except Busy as exc:  # raised before the first byte
            await _error(send, ApiError(503, str(exc), code="busy"), retry_after="1")
            return
        except SelfRouteError as exc:  # raised before the first byte
            await _error(send, api_error(exc))
            return
        finally:
            await chunks.aclose()  # type: ignore[attr-defined]
        await send({"type": "http.response.body", "body": b""})


async def _until_disconnect(receive: Receive, work: Awaitable[None]) -> None:
    """Run ``work``; when the client goes away first, cancel it, and the model calls with it
    (their connections close, so the provider stops generating)."""
    task = asyncio.ensure_future(work)

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.ensure_future(gone())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if not task.cancelled():
        task.result()  # its failure, if any


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def _loopback_host(scope: Scope) -> bool:
    """Whether the ``Host`` header names this machine (a DNS-rebound page names another)."""
    host = dict(scope.get("headers") or ()).get(b"host", b"").decode("latin-1").lower()
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return not host or name in _LOOPBACK_NAMES


def _content_length(scope: Scope) -> int | None:
    value = dict(scope.get("headers") or ()).get(b"content-length")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None
