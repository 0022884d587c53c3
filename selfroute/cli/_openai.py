"""A framework-free client of an OpenAI-compatible ``/chat/completions`` endpoint, for the CLI.

``selfroute ask`` and ``chat`` call the model through this module rather than through LangChain's
``ChatOpenAI``: importing ``langchain_openai`` (and the ``openai`` SDK under it) costs more than a
second of start-up, while one JSON POST needs only the standard library. The client sends the
same request ``ChatOpenAI`` sends (one user message, ``temperature``, ``stream_options`` with
``include_usage`` when streaming, a ``json_schema`` response format for structured verdicts), reads
the provider's usage (``prompt_tokens``, ``completion_tokens``, cached and reasoning tokens, in the
same shape LangChain reports them), the model name and the finish reason, and retries transient
failures (connection errors, timeouts, 408, 409, 429, 5xx) like the ``openai`` SDK.

Errors are the project's own: an HTTP error status is a :class:`ProviderHTTPError` (a
:class:`~selfroute.ModelOutputError` carrying ``status_code``, which
:func:`selfroute._faults.classified` turns into a :class:`~selfroute.ModelConfigurationError` for
a rejection such as 401 or 404), any other failure a :class:`~selfroute.ModelOutputError` naming
the server and the model.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import random
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from selfroute._errors import ModelOutputError
from selfroute._faults import INCOMPLETE, mark_processed, normalize_finish_reason
from selfroute._flow import Generation, GenerationChunk, StructuredRequest
from selfroute._redact import register_secret, url_credentials
from selfroute._structured import load_structured
from selfroute._usage import Usage

__all__ = [
    "BASE_URL_VARIABLES",
    "DEFAULT_BASE_URL",
    "RETRY_STATUSES",
    "STREAM_DONE",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "OpenAIChat",
    "PermissionDeniedError",
    "ProviderHTTPError",
    "RateLimitError",
    "StructuredStream",
    "UnprocessableEntityError",
    "backoff_s",
    "error_message",
    "parse_usage",
    "reply_generation",
    "response_format",
    "retry_after",
    "status_error",
    "stream_event",
    "structured_generation",
]

#: What :meth:`OpenAIChat.stream_event` returns for the stream's ``[DONE]`` line.
STREAM_DONE: Any = object()

#: Where ``openai:NAME`` goes without ``--base-url``, ``OPENAI_API_BASE`` or ``OPENAI_BASE_URL``.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: The environment variables read when no base URL is given, in order (``ChatOpenAI`` reads the
#: first, the ``openai`` SDK under it the second).
BASE_URL_VARIABLES = ("OPENAI_API_BASE", "OPENAI_BASE_URL")
#: Optional headers from the environment, as the ``openai`` SDK sends them.
_HEADER_VARIABLES = (
    ("OpenAI-Organization", "OPENAI_ORG_ID"),
    ("OpenAI-Project", "OPENAI_PROJECT_ID"),
)
#: Statuses worth another attempt (the ``openai`` SDK's list).
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
_MAX_BACKOFF_S = 8.0


class ProviderHTTPError(ModelOutputError):
    """The server answered with an HTTP error status (a subclass per status, named as the
    ``openai`` SDK names its errors: :class:`AuthenticationError` for 401 ...).

    Attributes:
        status_code: The HTTP status.
        body: The server's error message (``error.message`` of an OpenAI error body, else the
            start of the body).
    """

    def __init__(self, message: str, *, status_code: int, body: str, **context: Any) -> None:
        super().__init__(message, status=status_code, **context)
        self.status_code = status_code
        self.body = body


class BadRequestError(ProviderHTTPError):
    """HTTP 400 (an invalid request, a prompt over the model's context length)."""


class AuthenticationError(ProviderHTTPError):
    """HTTP 401 (a wrong or missing key)."""


class PermissionDeniedError(ProviderHTTPError):
    """HTTP 403."""


class NotFoundError(ProviderHTTPError):
    """HTTP 404 (an unknown model, a wrong base URL)."""


class ConflictError(ProviderHTTPError):
    """HTTP 409."""


class UnprocessableEntityError(ProviderHTTPError):
    """HTTP 422."""


class RateLimitError(ProviderHTTPError):
    """HTTP 429 (after the retries)."""


class InternalServerError(ProviderHTTPError):
    """HTTP 5xx (after the retries)."""


#: The error class of each status, named as the ``openai`` SDK names them.
_STATUS_ERRORS: dict[int, type[ProviderHTTPError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def status_error(status: int) -> type[ProviderHTTPError]:
    """The :class:`ProviderHTTPError` subclass of an HTTP error status."""
    if status >= 500:
        return InternalServerError
    return _STATUS_ERRORS.get(status, ProviderHTTPError)


def parse_usage(raw: Mapping[str, Any] | None) -> Usage | None:
    """Provider usage from an OpenAI ``usage`` object, as LangChain's ``ChatOpenAI`` reads it.

    ``input_token_details`` holds ``audio``, ``cache_read`` (``prompt_tokens_details.
    cached_tokens``) and ``cache_creation``; ``output_token_details`` ``audio`` and
    ``reasoning`` -- each only when the provider reported it. ``None`` when there is no usage or
    it is all zeros (a server that fills zeros has reported nothing).
    """
    if not raw:
        return None
    input_tokens = int(raw.get("prompt_tokens") or 0)
    output_tokens = int(raw.get("completion_tokens") or 0)
    if input_tokens == 0 and output_tokens == 0:
        return None
    total = raw.get("total_tokens")
    prompt = raw.get("prompt_tokens_details") or {}
    completion = raw.get("completion_tokens_details") or {}
    inputs = {
        "audio": prompt.get("audio_tokens"),
        "cache_read": prompt.get("cached_tokens"),
        "cache_creation": prompt.get("cache_write_tokens"),
    }
    outputs = {
        "audio": completion.get("audio_tokens"),
        "reasoning": completion.get("reasoning_tokens"),
    }
    details = {
        "input_token_details": {k: v for k, v in inputs.items() if v is not None},
        "output_token_details": {k: v for k, v in outputs.items() if v is not None},
    }
    cached = inputs["cache_read"]
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=int(total) if total else input_tokens + output_tokens,
        cached_input_tokens=int(cached) if cached is not None else None,
        source="provider",
        extra={key: value for key, value in details.items() if value},
    )


def response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``json_schema`` response format for ``schema`` (what ``ChatOpenAI.
    with_structured_output(schema)`` sends: the title as the name, the description beside it,
    ``strict`` false)."""
    body = {k: v for k, v in schema.items() if k not in ("title", "description")}
    spec: dict[str, Any] = {"name": str(schema.get("title", "response"))}
    if schema.get("description"):
        spec["description"] = schema["description"]
    spec["strict"] = bool(schema.get("strict", False))
    spec["schema"] = body
    return {"type": "json_schema", "json_schema": spec}


def backoff_s(attempt: int) -> float:
    """Seconds to wait before retry ``attempt + 1`` (exponential, jittered, capped)."""
    return float(min(0.5 * 2**attempt, _MAX_BACKOFF_S) * (1 - 0.25 * random.random()))


def error_message(raw: bytes) -> str:
    """The message of an error body (``error.message`` of an OpenAI body, else its start)."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:300]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return text.strip()[:300]


def retry_after(headers: Any) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` / ``retry-after``), if sensible."""
    if headers is None:
        return None
    for key, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(key)
        try:
            seconds = float(value) * scale if value is not None else None
        except ValueError:
            seconds = None
        if seconds is not None and 0 <= seconds <= 60:
            return seconds
    return None


class OpenAIChat:
    """One chat model at an OpenAI-compatible server.

    Args:
        model: The model name sent in every request.
        api_key: Sent as ``Authorization: Bearer``; registered for redaction.
        base_url: The API root (``.../v1``); ``None`` reads ``OPENAI_API_BASE``, then
            ``OPENAI_BASE_URL``, else OpenAI's own. A ``user:password@`` in it is sent as HTTP
            basic auth instead of the key, as the ``openai`` SDK (httpx) sends it, and is never
            shown.
        temperature: Sampling temperature.
        timeout: Seconds per connect/read (``None``: no limit).
        max_retries: Retries of a transient failure after the first attempt.
        window: The model's input window in tokens, when known (``--lc-window auto``).

    Attributes:
        name: The model name.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        temperature: float = 0.0,
        timeout: float | None = 120.0,
        max_retries: int = 2,
        window: int | None = None,
    ) -> None:
        self.model = self.name = model
        self.window = window
        from_env = (os.environ.get(v, "").strip() for v in BASE_URL_VARIABLES)
        chosen = (base_url or next((u for u in from_env if u), DEFAULT_BASE_URL)).rstrip("/")
        self.base_url, credentials = url_credentials(chosen)
        self._basic: str | None = None
        if credentials is not None:
            self._basic = base64.b64encode(":".join(credentials).encode("utf-8")).decode("ascii")
            register_secret(self._basic)
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max(0, int(max_retries))
        self._key = api_key
        self._context: Any = None
        if api_key:
            register_secret(api_key)

    @property
    def url(self) -> str:
        """The endpoint requests go to."""
        return f"{self.base_url}/chat/completions"

    def __repr__(self) -> str:
        return f"OpenAIChat(model={self.model!r}, base_url={self.base_url!r})"

    # requests -----------------------------------------------------------------------------------
    def _body(self, prompt: str, *, stream: bool, schema: Mapping[str, Any] | None) -> bytes:
        body: dict[str, Any] = {
            "messages": [{"role": "user", "content": prompt}],
            "model": self.model,
            "stream": stream,
            "temperature": self.temperature,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if schema is not None:
            body["response_format"] = response_format(schema)
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _failure(self, exc: BaseException) -> ModelOutputError:
        reason = getattr(exc, "reason", None) or exc
        return ModelOutputError(
            f"could not reach the model server at {self.url} (model {self.model}): "
            f"{type(reason).__name__}: {reason}",
            model=self.model,
        )

    def _tls(self) -> Any:
        """The TLS context of an ``https`` server: the system's certificates when
        ``SSL_CERT_FILE``/``SSL_CERT_DIR`` say so, else ``certifi``'s when installed (as the
        ``openai`` SDK does), else the system's; ``None`` for plain ``http``."""
        if not self.url.startswith("https:"):
            return None
        if self._context is None:
            import ssl

            cafile = None
            if not (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")):
                try:
                    import certifi

                    cafile = certifi.where()
                except ImportError:
                    cafile = None
            self._context = ssl.create_default_context(cafile=cafile)
        return self._context

    def _open(self, data: bytes) -> Any:
        """POST ``data``; the open response (retrying transient failures).

        Raises:
            ProviderHTTPError: An error status (after the retries, for a transient one).
            ModelOutputError: The server could not be reached or timed out.
        """
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Basic {self._basic}" if self._basic else f"Bearer {self._key}",
            "User-Agent": "selfroute-cli",
        }
        for header, variable in _HEADER_VARIABLES:
            value = os.environ.get(variable, "").strip()
            if value:
                headers[header] = value
        attempt = 0
        while True:
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            wait: float | None = None
            try:
                return urllib.request.urlopen(request, timeout=self.timeout, context=self._tls())
            except urllib.error.HTTPError as exc:
                with exc:
                    message = error_message(exc.read())
                    wait = retry_after(exc.headers)
                error: ModelOutputError = status_error(exc.code)(
                    f"HTTP {exc.code} from {self.url} (model {self.model}): {message}",
                    status_code=exc.code,
                    body=message,
                    model=self.model,
                )
                if exc.code not in RETRY_STATUSES:
                    raise error from None
            except (urllib.error.URLError, OSError) as exc:  # refused, reset, DNS, timeout
                error = self._failure(exc)
            if attempt >= self.max_retries:
                raise error
            time.sleep(wait if wait is not None else backoff_s(attempt))
            attempt += 1

    def _read_json(self, response: Any) -> dict[str, Any]:
        with response:
            try:
                raw = response.read()
            except (OSError, http.client.HTTPException) as exc:  # reset, timeout, cut body
                raise self._failure(exc) from exc
        try:
            data = json.loads(raw)
        except ValueError:
            error = ModelOutputError(
                f"the model server at {self.url} (model {self.model}) sent a reply that is not "
                f"JSON: {raw[:200]!r}",
                model=self.model,
            )
            mark_processed(error)
            raise error from None
        if not isinstance(data, dict):
            raise ModelOutputError(f"the model server at {self.url} sent {type(data).__name__}")
        return data

    def _empty(self) -> ModelOutputError:
        error = ModelOutputError(
            f"the model server at {self.url} (model {self.model}) returned a reply with no choices",
            model=self.model,
        )
        mark_processed(error)  # a 200 reply: the provider did the work (and may bill it)
        return error

    # calls --------------------------------------------------------------------------------------
    def generate(self, prompt: str) -> Generation:
        """One non-streaming call."""
        data = self._read_json(self._open(self._body(prompt, stream=False, schema=None)))
        return reply_generation(data, self._choice(data), self.model)

    def generate_structured(self, request: StructuredRequest) -> Generation:
        """One call of ``request.prompt`` with a ``json_schema`` response format: ``structured``
        is the object, or ``structured_error`` says why there is none (``text`` then keeps the
        raw output; the core accepts a plain decline in it)."""
        body = self._body(request.prompt, stream=False, schema=request.schema)
        data = self._read_json(self._open(body))
        return structured_generation(data, self._choice(data), self.model)

    def _choice(self, data: Mapping[str, Any]) -> dict[str, Any]:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise self._empty()
        return choices[0]

    def stream(self, prompt: str) -> Iterator[GenerationChunk]:
        """A streamed call (server-sent events): text pieces as they come, then one closing
        chunk with the usage, the model name and the finish reason (``incomplete`` when the
        stream ended without one). Closing the iterator closes the connection."""
        response = self._open(self._body(prompt, stream=True, schema=None))
        model, usage, finish = self.model, None, None
        seen_choice = False
        try:
            for data in self._events(response):
                model = str(data.get("model") or model)
                if data.get("usage"):
                    usage = parse_usage(data["usage"])
                for choice in data.get("choices") or ():
                    seen_choice = True
                    reason = normalize_finish_reason(choice.get("finish_reason"))
                    finish = reason or finish
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        yield GenerationChunk(text=str(text))
        finally:
            response.close()
        if not seen_choice:
            raise self._empty()
        yield GenerationChunk(text="", usage=usage, model=model, finish_reason=finish or INCOMPLETE)

    def stream_structured(self, request: StructuredRequest) -> Iterator[GenerationChunk]:
        """A streamed call with a ``json_schema`` response format: the object's JSON text piece
        by piece (``structured_delta``), then one piece with the object as
        :meth:`generate_structured` returns it. Closing the iterator closes the connection."""
        response = self._open(self._body(request.prompt, stream=True, schema=request.schema))
        reader = StructuredStream(self.model)
        try:
            for data in self._events(response):
                if delta := reader.feed(data):
                    yield GenerationChunk(structured_delta=delta)
        finally:
            response.close()
        if not reader.seen_choice:
            raise self._empty()
        yield reader.last()

    def _lines(self, response: Any) -> Iterator[bytes]:
        """The lines of a streamed body as they arrive.

        Read with ``read1`` (not ``readline``, which ends quietly on a connection cut inside a
        chunked body): a body that breaks off is a :class:`~selfroute.ModelOutputError`, a body
        that ends properly simply ends.
        """
        buffer = b""
        while True:
            try:
                data = response.read1(65536)
            except (OSError, http.client.HTTPException) as exc:  # reset, timeout, cut chunk
                raise stream_broke(exc, url=self.url, model=self.model) from exc
            if not data:
                if buffer:
                    yield buffer
                return
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            yield from lines

    def _events(self, response: Any) -> Iterator[dict[str, Any]]:
        """The JSON payloads of a server-sent event stream, up to ``[DONE]``."""
        for line in self._lines(response):
            data = stream_event(line.decode("utf-8", "replace"), url=self.url, model=self.model)
            if data is STREAM_DONE:
                return
            if data is not None:
                yield data


def stream_broke(exc: BaseException, *, url: str, model: str) -> ModelOutputError:
    """The error for a streamed body that broke off with ``exc`` (a reset, timeout or cut
    chunk), naming the server and model."""
    return ModelOutputError(
        f"the stream from {url} (model {model}) broke off: {type(exc).__name__}: {exc}",
        model=model,
    )


def stream_event(line: str, *, url: str, model: str) -> Any:
    """The JSON payload of one server-sent event line: ``None`` to skip (blank separators,
    comments, ``event:`` lines), :data:`STREAM_DONE` at ``[DONE]``; ``url`` and ``model`` name the server in errors.

    Raises:
        ModelOutputError: The event is not JSON, or the server reports an error in it.
    """
    text = line.strip()
    if not text.startswith("data:"):
        return None
    payload = text[5:].strip()
    if payload == "[DONE]":
        return STREAM_DONE
    try:
        data = json.loads(payload)
    except ValueError:
        error = ModelOutputError(
            f"the model server at {url} (model {model}) sent a stream event "
            f"that is not JSON: {payload[:200]!r}",
            model=model,
        )
        mark_processed(error)
        raise error from None
    if isinstance(data, dict) and data.get("error"):
        message = data["error"]
        message = message.get("message", message) if isinstance(message, dict) else message
        error = ModelOutputError(
            f"the model server at {url} (model {model}) reported an error mid-stream: {message}",
            model=model,
        )
        mark_processed(error)
        raise error
    return data if isinstance(data, dict) else None


class StructuredStream:
    """Reads the server-sent events of a streamed structured reply (shared by the sync and async
    clients): the object's JSON text as it arrives -- ``content`` deltas of a ``json_schema``
    reply, or a tool call's ``arguments`` deltas -- then the whole reply as
    :func:`structured_generation` reads a non-streamed one.

    Args:
        model: The model asked for (when the events name none).
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self.seen_choice = False
        self._usage: Any = None
        self._finish: Any = None
        self._content: list[str] = []
        self._arguments: list[str] = []
        self._refusal: list[str] = []

    def feed(self, data: Mapping[str, Any]) -> str:
        """Read one event's payload; return the piece of the object's JSON text it carries."""
        self.model = str(data.get("model") or self.model)
        if data.get("usage"):
            self._usage = data["usage"]
        out: list[str] = []
        for choice in data.get("choices") or ():
            self.seen_choice = True
            self._finish = choice.get("finish_reason") or self._finish
            delta = choice.get("delta") or {}
            if delta.get("refusal"):
                self._refusal.append(str(delta["refusal"]))
            if text := delta.get("content"):
                self._content.append(str(text))
                out.append(str(text))
            for call in delta.get("tool_calls") or ():
                if (call.get("index") or 0) != 0:  # only the first call is the verdict
                    continue
                if piece := (call.get("function") or {}).get("arguments"):
                    self._arguments.append(str(piece))
                    out.append(str(piece))
        return "".join(out)

    def last(self) -> GenerationChunk:
        """The closing piece: the object (or why there is none), usage, model, finish reason
        (``incomplete`` when the stream ended without one). A cut-off object does not parse
        (the JSON is read strictly, not repaired), so it is no verdict."""
        content = "".join(self._arguments) if self._arguments else "".join(self._content)
        message = {"content": content, "refusal": "".join(self._refusal) or None}
        choice = {"message": message, "finish_reason": self._finish}
        gen = structured_generation({"usage": self._usage, "model": self.model}, choice, self.model)
        return replace(GenerationChunk.of(gen), finish_reason=gen.finish_reason or INCOMPLETE)


def reply_generation(data: Mapping[str, Any], choice: Mapping[str, Any], model: str) -> Generation:
    """The :class:`Generation` of a non-streamed chat completion ``data`` and its ``choice``
    (``model`` when the reply names none)."""
    message = choice.get("message") or {}
    return Generation(
        text=str(message.get("content") or ""),
        usage=parse_usage(data.get("usage")),
        model=str(data.get("model") or model),
        finish_reason=normalize_finish_reason(choice.get("finish_reason")),
    )


def structured_generation(
    data: Mapping[str, Any], choice: Mapping[str, Any], model: str
) -> Generation:
    """The :class:`Generation` of a ``json_schema`` chat completion: ``structured`` is the
    object, or ``structured_error`` says why there is none (``text`` then keeps the raw output;
    the core accepts a plain decline in it)."""
    message = choice.get("message") or {}
    raw = str(message.get("content") or "")
    obj = load_structured(raw)
    error = None
    if obj is None:
        refusal = message.get("refusal")
        error = (
            f"the model refused the structured output: {refusal}"
            if refusal
            else "the model's structured output could not be parsed"
        )
    return Generation(
        text=json.dumps(obj, ensure_ascii=False) if obj is not None else raw,
        usage=parse_usage(data.get("usage")),
        model=str(data.get("model") or model),
        structured=obj,
        structured_error=error,
        finish_reason=normalize_finish_reason(choice.get("finish_reason")),
    )
