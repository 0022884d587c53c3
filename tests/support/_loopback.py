"""Shared machinery for the scripted loopback model servers.

`ScriptedOpenAIServer` and `ScriptedGeminiServer` only differ in wire format; everything
else (threading, recording, latency, faults, clean shutdown, scripting) lives here.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from tests.support._embeddings import EmbeddingEndpoint

__all__ = [
    "HANG_MAX_S",
    "PREFIX_CACHE_INCREMENT",
    "PREFIX_CACHE_MIN_TOKENS",
    "Completion",
    "LoopbackServer",
    "Matcher",
    "Reply",
    "Responder",
    "common_prefix_length",
    "last_user_text",
    "prefix_cached_tokens",
    "prompt_text",
    "rules",
    "split_tokens",
    "word_count",
]

#: Upper bound of a ``kind="hang"`` reply: the server gives up after this long even when the
#: client never times out, so a forgotten timeout cannot wedge the test run.
HANG_MAX_S = 30.0

#: OpenAI's automatic prompt caching: prompts of at least 1024 tokens, cached in 128-token
#: increments (https://platform.openai.com/docs/guides/prompt-caching).
PREFIX_CACHE_MIN_TOKENS = 1024
PREFIX_CACHE_INCREMENT = 128

_S = TypeVar("_S", bound="LoopbackServer")
ReplyKind = Literal[
    "ok", "malformed", "empty", "hang", "error", "cut", "null", "no_choices", "drip"
]
_KINDS = ("ok", "malformed", "empty", "hang", "error", "cut", "null", "no_choices", "drip")


@dataclass
class Reply:
    """What the scripted model answers to one request.

    Attributes:
        text: The completion text.
        prompt_tokens: Reported input tokens; ``None`` = word count of the prompt.
        completion_tokens: Reported output tokens; ``None`` = word count of ``text``.
        model: Model name reported in the response (``None`` echoes the requested model).
        status: HTTP status. Anything other than 200 produces a provider error body.
        delay_s: Extra latency for this reply (on top of the server's ``latency_s``).
        kind: ``"ok"``; ``"malformed"`` (invalid JSON / broken SSE); ``"empty"`` (empty
            content); ``"hang"`` (never answers until the client gives up, the server stops
            or `HANG_MAX_S` passes); ``"error"`` (provider error body, status 500 unless
            ``status`` says otherwise). OpenAI server only: ``"cut"`` (a stream that ends
            without a finish reason or ``[DONE]``; not streamed: ``finish_reason: null``),
            ``"null"`` (``content: null``; streamed: no content delta), ``"no_choices"``
            (``choices: []``; streamed: no choice at all); any server: ``"drip"`` (the body
            sent one byte every ``drip_s`` seconds, so a per-read client timeout never fires).
        cached_tokens: Reported cached input tokens; ``None`` = what the server's simulated
            prefix cache computed (0 when the cache is off). An explicit value always wins.
        finish_reason: OpenAI-style finish reason (``"stop"``, ``"length"``...).
        drip_s: Pause between the bytes of a ``kind="drip"`` reply.
        piece_chars: Stream the text in pieces of this many characters instead of a word at a
            time (JSON token by token: a piece may end inside an escape or a ``\\u`` sequence).
        pause_at: Streamed: before sending stream event number ``pause_at`` (0-based, every
            event of the stream counted) the server sets its ``paused`` event and waits for
            its ``resume`` event (at most ``pause_max_s``), so a test can see what the client
            has shown while the rest of the reply is not yet sent (``paused`` is cleared and
            ``past_pause`` set when the server goes on: text the client shows before
            ``past_pause`` arrived before the rest of the reply was sent, whether or not the
            server had reached the pause yet).
        pause_max_s: The longest a paused stream waits for ``resume``.
    """

    text: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    model: str | None = "loopback-model"
    status: int = 200
    delay_s: float = 0.0
    kind: ReplyKind = "ok"
    cached_tokens: int | None = None
    finish_reason: str = "stop"
    drip_s: float = 1.0
    piece_chars: int | None = None
    pause_at: int | None = None
    pause_max_s: float = 30.0  # the test resumes it sooner; a loaded machine can be slow

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Reply.kind must be one of {_KINDS}, got {self.kind!r}")
        if self.kind == "ok" and self.status != 200:
            self.kind = "error"
        if self.kind == "error" and self.status == 200:
            self.status = 500


@dataclass(frozen=True)
class Completion:
    """Everything a protocol needs to render one successful response."""

    body: dict[str, Any]
    reply: Reply
    model: str
    text: str
    prompt_tokens: int
    completion_tokens: int
    prefix_cached_tokens: int = 0

    @property
    def cached_tokens(self) -> int:
        """Cached input tokens to report: the reply's explicit count, else the simulated cache's."""
        if self.reply.cached_tokens is not None:
            return self.reply.cached_tokens
        return self.prefix_cached_tokens


Responder = Callable[[dict[str, Any]], "Reply | str"]
Matcher = str | Callable[[str], bool]


def _content_text(content: Any) -> str:
    """Flatten OpenAI message content (str or list of parts) / Gemini parts to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_content_text(part) for part in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"] or "")
        if "parts" in content:
            return _content_text(content["parts"])
    return ""


def _messages(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) pairs of an OpenAI (``messages``) or Gemini (``contents``) request."""
    out: list[tuple[str, str]] = []
    system = body.get("systemInstruction") or body.get("system_instruction")
    if system:
        out.append(("system", _content_text(system)))
    for message in body.get("messages") or []:
        out.append((str(message.get("role", "")), _content_text(message.get("content"))))
    for content in body.get("contents") or []:
        out.append((str(content.get("role", "user")), _content_text(content.get("parts"))))
    return out


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message of an OpenAI or Gemini request body ("" if none)."""
    for role, text in reversed(_messages(body)):
        if role == "user":
            return text
    return ""


def prompt_text(body: dict[str, Any]) -> str:
    """All message text of a request body, joined by newlines."""
    return "\n".join(text for _, text in _messages(body))


def common_prefix_length(a: str, b: str) -> int:
    """Number of leading characters ``a`` and ``b`` share."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on slice equality (fast for long prompts)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_cached_tokens(prefix_tokens: int, prompt_tokens: int) -> int:
    """Cached tokens OpenAI reports for a reusable prefix of ``prefix_tokens`` tokens.

    0 below `PREFIX_CACHE_MIN_TOKENS`, else rounded down to a multiple of
    `PREFIX_CACHE_INCREMENT`; never more than ``prompt_tokens``.
    """
    if prefix_tokens < PREFIX_CACHE_MIN_TOKENS:
        return 0
    cached = (prefix_tokens // PREFIX_CACHE_INCREMENT) * PREFIX_CACHE_INCREMENT
    return max(0, min(cached, prompt_tokens))


def word_count(text: str) -> int:
    """Whitespace word count (the default token count of the scripted servers)."""
    return len(text.split())


_TOKEN_RE = re.compile(r"\s*\S+|\s+")


def split_tokens(text: str) -> list[str]:
    """Split ``text`` into stream pieces (one per word, leading whitespace kept).

    ``"".join(split_tokens(t)) == t`` always holds.
    """
    return _TOKEN_RE.findall(text)


def rules(
    *pairs: tuple[Matcher, Reply | str],
    default: Reply | str = "unanswerable",
) -> Responder:
    """Build a responder answering with the first matching rule.

    Args:
        *pairs: ``(matcher, reply)``; ``matcher`` is a substring of the last user message or a
            callable receiving that message text; ``reply`` is a `Reply` or plain text.
        default: Reply when no rule matches.

    Returns:
        A responder usable as ``server.responder``.
    """
    for matcher, _ in pairs:
        if not (isinstance(matcher, str) or callable(matcher)):
            raise TypeError(f"rule matcher must be a str or callable, got {matcher!r}")

    def responder(body: dict[str, Any]) -> Reply | str:
        user = last_user_text(body)
        for matcher, reply in pairs:
            hit = matcher in user if isinstance(matcher, str) else matcher(user)
            if hit:
                return reply
        return default

    return responder


def _default_responder(body: dict[str, Any]) -> Reply | str:
    return "This is a loopback reply."


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True
    owner: LoopbackServer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # send small header and body writes at once (no Nagle + delayed-ACK 40 ms stall per reply)
    disable_nagle_algorithm = True
    server: _Server
    # idle keep-alive connections give up after this long (the server also closes them on stop)
    timeout = 60

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        return

    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    def do_GET(self) -> None:
        self.server.owner._dispatch(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._dispatch(self, "POST")

    # -- low level writers used by the protocol subclasses --------------------------------
    def send_json(self, status: int, payload: Any) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def start_chunked(self, content_type: str = "text/event-stream") -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def write_chunk(self, data: bytes) -> None:
        if not data:
            return
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


class LoopbackServer:
    """Base of the scripted servers: a threaded HTTP server on 127.0.0.1.

    Args:
        responder: ``responder(body) -> Reply | str``; default answers a fixed sentence.
        latency_s: Latency added to every model request (before the first byte).
        token_delay_s: Pause between streamed chunks.
        host: Interface to bind (loopback only).
        port: Port (0 = pick a free one).
        prefix_cache: Simulate automatic provider prefix caching (see `enable_prefix_cache`).

    Attributes:
        requests: JSON bodies of every model request, in arrival order.
        calls: Number of model requests received.
        errors: Exceptions raised by the responder (they also produce an HTTP 500).
        max_in_flight: Peak number of model requests being served at the same time.
        prefix_cache_hits: For every model request (aligned with ``requests``), the cached input
            tokens the simulated prefix cache computed for it (0 when the cache is off, or for a
            request that got no successful answer). A reply's explicit ``cached_tokens`` overrides
            what is reported, not what is recorded here.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        latency_s: float = 0.0,
        token_delay_s: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        prefix_cache: bool = False,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"loopback servers bind to loopback only, got host={host!r}")
        self.responder: Responder = responder or _default_responder
        self.latency_s = latency_s
        self.token_delay_s = token_delay_s
        self.host = host
        self._port = port
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.errors: list[BaseException] = []
        self.calls = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.prefix_cache = prefix_cache
        self.prefix_cache_hits: list[int] = []
        self._cached_prompts: list[str] = []
        self._generation = 0  # bumped by reset(), so a late answer cannot touch newer records
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.past_pause = threading.Event()  # set once a paused stream has gone on
        #: ``(time.perf_counter(), event bytes)`` of each stream event sent, once a caller sets
        #: it to a list (benchmarks: when the server sent the first answer character).
        self.sent: list[tuple[float, bytes]] | None = None
        self._connections: set[socket.socket] = set()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        #: The embedding endpoint (``route`` gives ``"embeddings"``): latency, limits, faults.
        self.embeddings = EmbeddingEndpoint()

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def start(self: _S) -> _S:
        if self._httpd is not None:
            return self
        self._stopping.clear()
        httpd = _Server((self.host, self._port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stopping.set()  # wakes hanging / sleeping handlers
        httpd.shutdown()
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self: _S) -> _S:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget recorded requests and counters (keeps the responder)."""
        with self._lock:
            self.requests.clear()
            self.paths.clear()
            self.headers.clear()
            self.errors.clear()
            self.calls = 0
            self.max_in_flight = self.in_flight
            self.prefix_cache_hits.clear()
            self._cached_prompts.clear()
            self._generation += 1
        self.paused.clear()
        self.resume.clear()
        self.past_pause.clear()

    # -- simulated prefix cache ----------------------------------------------------------------
    def enable_prefix_cache(self, enabled: bool = True) -> None:
        """Simulate automatic provider prefix caching (off by default).

        For each model request the server takes the prompt text (`prompt_text`: all message
        contents in order), finds the longest common prefix, in characters, with any earlier
        request's prompt since the last `reset` / `clear_prefix_cache`, counts its tokens with
        ``selfroute.default_token_counter()`` and reports, following OpenAI's documented rule,
        ``0 if tokens < 1024 else tokens // 128 * 128`` cached tokens, capped at the reported
        prompt tokens: OpenAI ``usage.prompt_tokens_details.cached_tokens`` (also on the final
        streamed usage chunk) and Gemini ``usageMetadata.cachedContentTokenCount``.

        While the cache is on, a reply without scripted ``prompt_tokens`` reports the prompt's
        token count from the same tokenizer (instead of its word count), so the cached count
        and the prompt size are in the same unit. A reply's explicit ``cached_tokens`` wins.
        """
        with self._lock:
            self.prefix_cache = enabled

    def clear_prefix_cache(self) -> None:
        """Forget the prompts the simulated prefix cache has seen."""
        with self._lock:
            self._cached_prompts.clear()

    def _prefix_chars(self, prompt: str) -> int:
        """Longest common prefix (characters) of ``prompt`` with an earlier prompt; remembers it.

        Called under ``self._lock``.
        """
        best = 0
        for seen in self._cached_prompts:
            if best >= len(prompt):
                break
            best = max(best, common_prefix_length(prompt, seen))
        self._cached_prompts.append(prompt)
        return best

    # -- helpers for subclasses ----------------------------------------------------------------
    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops first. Returns ``False`` if it stopped."""
        if seconds <= 0:
            return not self._stopping.is_set()
        return not self._stopping.wait(seconds)

    def _record(
        self, handler: _Handler, body: dict[str, Any]
    ) -> tuple[tuple[int, int], str | None]:
        """Record a model request; returns its (generation, index) and, with the prefix cache
        on, the prompt's reusable prefix (``None`` when the cache is off)."""
        prompt = prompt_text(body) if self.prefix_cache else None
        with self._lock:
            index = (self._generation, len(self.requests))
            self.requests.append(body)
            self.paths.append(handler.path)
            self.headers.append({k.lower(): v for k, v in handler.headers.items()})
            self.prefix_cache_hits.append(0)
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            prefix = None if prompt is None else prompt[: self._prefix_chars(prompt)]
        return index, prefix

    def _resolve(self, body: dict[str, Any]) -> Reply:
        try:
            reply = self.responder(body)
        except Exception as exc:
            with self._lock:
                self.errors.append(exc)
            return Reply(f"responder raised {type(exc).__name__}: {exc}", kind="error")
        if isinstance(reply, str):
            return Reply(reply)
        if not isinstance(reply, Reply):
            err = TypeError(f"responder must return Reply or str, got {type(reply).__name__}")
            with self._lock:
                self.errors.append(err)
            return Reply(str(err), kind="error")
        return reply

    def _dispatch(self, handler: _Handler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        route = self.route(method, handler.path)
        if route is None:
            handler.send_json(404, self.error_body(404, f"no route for {method} {handler.path}"))
            return
        if route == "models":
            handler.send_json(200, self.models_body())
            return
        if route == "model":  # one model's metadata (GET .../models/NAME)
            name = urlsplit(handler.path).path.rstrip("/").rsplit("/", 1)[-1]
            found = [m for m in self.models_body().get("models", []) if m["name"].endswith(name)]
            if found:
                handler.send_json(200, found[0])
            else:
                handler.send_json(404, self.error_body(404, f"no model {name}"))
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError as exc:
            handler.send_json(400, self.error_body(400, f"invalid JSON body: {exc}"))
            return
        if route == "embeddings":  # recorded by the endpoint, not as a model request
            texts = self.embedding_texts(body)
            self.embeddings.serve(
                handler,
                body,
                texts,
                lambda vectors: self.embeddings_body(vectors, body, handler),
                self.error_body,
                self.sleep,
            )
            return
        index, prefix = self._record(handler, body)
        try:
            reply = self._resolve(body)
            if not self.sleep(self.latency_s + reply.delay_s):
                handler.close_connection = True
                return
            stream = self.wants_stream(handler.path, body)
            if reply.kind == "hang":
                self.sleep(HANG_MAX_S)
                handler.close_connection = True
                return
            if reply.kind == "error":
                handler.send_json(reply.status, self.error_body(reply.status, reply.text))
                return
            model = reply.model if reply.model is not None else self.requested_model(handler, body)
            text = "" if reply.kind == "empty" else reply.text
            cached = 0
            if prefix is None:
                prompt_tokens = (
                    reply.prompt_tokens
                    if reply.prompt_tokens is not None
                    else word_count(prompt_text(body))
                )
            else:
                prompt_tokens, cached = self._prefix_cache_usage(body, prefix, reply)
                with self._lock:
                    generation, position = index
                    if generation == self._generation:  # not reset meanwhile
                        self.prefix_cache_hits[position] = cached
            completion_tokens = (
                reply.completion_tokens if reply.completion_tokens is not None else word_count(text)
            )
            done = Completion(body, reply, model, text, prompt_tokens, completion_tokens, cached)
            if not stream:
                if reply.kind == "malformed":
                    handler.send_json(200, b'{"id": "broken", "choices": [{"mess')
                    return
                if reply.kind == "drip":
                    self._drip(handler, json.dumps(self.completion_body(done)).encode(), reply)
                    return
                handler.send_json(200, self.completion_body(done))
                return
            handler.start_chunked()
            if reply.kind == "malformed":
                handler.write_chunk(b'data: {"broken": [1, 2\n\n')
                handler.write_chunk(b"data: [DONE]\n\n")
                handler.end_chunked()
                return
            for i, event in enumerate(self.stream_events(done)):
                if i and not self.sleep(self.token_delay_s):
                    handler.close_connection = True
                    return
                if i == reply.pause_at:
                    self.paused.set()
                    self.resume.wait(reply.pause_max_s)
                    self.paused.clear()
                    self.past_pause.set()
                handler.write_chunk(event)
                if self.sent is not None:
                    self.sent.append((time.perf_counter(), event))
            handler.end_chunked()
        except (BrokenPipeError, ConnectionResetError, OSError):
            handler.close_connection = True  # client went away (timeout / cancel)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _drip(self, handler: _Handler, data: bytes, reply: Reply) -> None:
        """Send ``data`` one byte every ``reply.drip_s`` seconds (until the server stops)."""
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.flush()
        for i in range(len(data)):
            if not self.sleep(reply.drip_s):
                handler.close_connection = True
                return
            handler.wfile.write(data[i : i + 1])
            handler.wfile.flush()

    @staticmethod
    def _prefix_cache_usage(body: dict[str, Any], prefix: str, reply: Reply) -> tuple[int, int]:
        """(prompt tokens, cached tokens) of a request under the simulated prefix cache."""
        from selfroute import default_token_counter

        counter = default_token_counter()
        prompt_tokens = (
            reply.prompt_tokens
            if reply.prompt_tokens is not None
            else counter.count(prompt_text(body))
        )
        prefix_tokens = counter.count(prefix) if prefix else 0
        return prompt_tokens, prefix_cached_tokens(prefix_tokens, prompt_tokens)

    # -- protocol hooks ------------------------------------------------------------------------
    def route(self, method: str, path: str) -> str | None:
        """Return ``"generate"``, ``"models"`` or ``None`` (404)."""
        raise NotImplementedError

    def wants_stream(self, path: str, body: dict[str, Any]) -> bool:
        raise NotImplementedError

    def requested_model(self, handler: _Handler, body: dict[str, Any]) -> str:
        raise NotImplementedError

    def models_body(self) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def completion_body(self, done: Completion) -> dict[str, Any]:
        raise NotImplementedError

    def stream_events(self, done: Completion) -> Iterable[bytes]:
        raise NotImplementedError

    def embedding_texts(self, body: dict[str, Any]) -> list[str]:
        """The texts of an embedding request (route ``"embeddings"``)."""
        raise NotImplementedError

    def embeddings_body(self, vectors: list[Any], body: dict[str, Any], handler: Any) -> Any:
        """The reply to an embedding request, given its vectors."""
        raise NotImplementedError


def sse(payload: Any) -> bytes:
    """One server-sent event carrying ``payload`` as JSON."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def iter_pieces(text: str, piece_chars: int | None = None) -> Iterator[str]:
    """Stream pieces of ``text`` (a word each, or ``piece_chars`` characters each); an empty
    text yields nothing."""
    if piece_chars:
        yield from (text[i : i + piece_chars] for i in range(0, len(text), piece_chars))
        return
    yield from split_tokens(text)


def now() -> int:
    return int(time.time())


def extractive_responder() -> Responder:
    """A responder that answers every prompt with selfroute's :class:`~selfroute.ExtractiveReader`
    (the sentence of the prompt that covers the question, or "unanswerable"), echoing the model
    name it was asked for."""
    from selfroute import ExtractiveReader

    reader = ExtractiveReader()

    def respond(body: dict[str, Any]) -> Reply:
        return Reply(reader(last_user_text(body)), model=None)

    return respond


def load_script(path: str) -> Responder:
    """Responder from a JSON script file.

    The file holds either a list of ``{"match": substring, "text": reply}`` rules, or an object
    ``{"rules": [...], "default": text}``. Rules may also give ``prompt_tokens``,
    ``completion_tokens``, ``model``, ``status``, ``delay_s`` and ``kind``.
    """
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    default: Reply | str = "unanswerable"
    if isinstance(data, dict):
        entries = data.get("rules", [])
        if "default" in data:
            default = _script_reply(data["default"])
    elif isinstance(data, list):
        entries = data
    else:
        raise ValueError(f"{path}: script must be a JSON list or object")
    pairs: list[tuple[Matcher, Reply | str]] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "match" not in entry or "text" not in entry:
            raise ValueError(f"{path}: rule {i} needs 'match' and 'text' keys, got {entry!r}")
        pairs.append((str(entry["match"]), _script_reply(entry)))
    return rules(*pairs, default=default)


def _script_reply(entry: Any) -> Reply:
    if isinstance(entry, str):
        return Reply(entry)
    fields = {
        key: entry[key]
        for key in (
            "text",
            "prompt_tokens",
            "completion_tokens",
            "model",
            "status",
            "delay_s",
            "kind",
            "cached_tokens",
            "finish_reason",
            "drip_s",
        )
        if key in entry
    }
    return Reply(**fields)


def serve_main(server_cls: type[LoopbackServer], argv: list[str] | None = None) -> int:
    """Command-line entry point shared by the server modules."""
    import argparse
    import signal
    import sys

    parser = argparse.ArgumentParser(description=f"Run a {server_cls.__name__} on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (0 = any free port)")
    parser.add_argument("--script", help="JSON rules file (see load_script)")
    parser.add_argument(
        "--extractive",
        action="store_true",
        help="answer every prompt with selfroute's ExtractiveReader (answers from the prompt or "
        "declines)",
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--token-delay", type=float, default=0.0, help="seconds per chunk")
    parser.add_argument(
        "--prefix-cache", action="store_true", help="simulate automatic prompt prefix caching"
    )
    parser.add_argument("--embed-dim", type=int, default=1536, help="embedding vector size")
    parser.add_argument("--embed-base-ms", type=float, default=40.0, help="ms per embed request")
    parser.add_argument(
        "--embed-us-per-token", type=float, default=4.0, help="us per token of an embed request"
    )
    parser.add_argument(
        "--embed-max-concurrent", type=int, default=16, help="embed requests served at once"
    )
    args = parser.parse_args(argv)
    responder = load_script(args.script) if args.script else None
    if args.extractive:
        responder = extractive_responder()

    server = server_cls(
        responder,
        latency_s=args.latency,
        token_delay_s=args.token_delay,
        port=args.port,
        prefix_cache=args.prefix_cache,
    )
    server.embeddings.configure(
        dim=args.embed_dim,
        base_s=args.embed_base_ms / 1000,
        per_token_s=args.embed_us_per_token / 1e6,
        max_concurrent=args.embed_max_concurrent,
    )
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    # First line on stdout is the base URL so a parent process can read it.
    print(getattr(server, "base_url", server.root_url), flush=True)
    try:
        while not stop.wait(0.2):
            pass
    finally:
        server.stop()
    print(f"served {server.calls} requests", file=sys.stderr, flush=True)
    return 0
