"""``/v1/chat/completions`` and ``/v1/models``: Self-Route as an OpenAI-compatible model named
``selfroute``.

The last user message is the question. A reply carries the answer as the assistant message,
``usage`` with the real tokens of every step (the provider's counts, summed), and a ``selfroute``
field with the route, the reason, the sources and the savings (the MCP ``ask`` tool's summary).
Streamed (SSE), the long-context answer is sent as the model writes it; the RAG step's text is
held until the flow has accepted it, so a declined RAG draft is never sent. Errors use OpenAI's
error shape (``{"error": {"message", "type", "param", "code"}}``) and status codes.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from selfroute._errors import (
    ConfigurationError,
    ContextOverflowError,
    InvalidInputError,
    SelfRouteError,
)
from selfroute._flow import ResultEvent, RouteEvent, TokenEvent
from selfroute._redact import cap_text, redact
from selfroute._result import Route, RouteResult, Stage
from selfroute._serve._payload import answer_text, summarize
from selfroute._serve._service import Busy, RouteService

__all__ = [
    "MODEL_NAME",
    "ApiError",
    "api_error",
    "chat_completion",
    "error_body",
    "models_body",
    "question_of",
    "stream_completion",
]

#: The model name clients ask for.
MODEL_NAME = "selfroute"

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
    502: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
}


class ApiError(Exception):
    """A request refused or failed, with its HTTP status and OpenAI error fields."""

    def __init__(
        self, status: int, message: str, *, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = cap_text(redact(message))
        self.code = code
        self.param = param


def error_body(error: ApiError) -> dict[str, Any]:
    """OpenAI's error shape."""
    return {
        "error": {
            "message": error.message,
            "type": _TYPES.get(error.status, "api_error"),
            "param": error.param,
            "code": error.code,
        }
    }


def api_error(exc: SelfRouteError) -> ApiError:
    """The HTTP error of a failed question: 400 for the request's fault, 504 past the deadline,
    502 for the model server or the store."""
    if isinstance(exc, Busy):
        return ApiError(503, str(exc), code="busy")
    if isinstance(exc, (InvalidInputError, ContextOverflowError)):
        return ApiError(400, str(exc), code="invalid_question", param="messages")
    if exc.context.get("deadline_s") is not None:
        return ApiError(504, str(exc), code="deadline_exceeded")
    if isinstance(exc, ConfigurationError):
        return ApiError(502, f"the model server refused the request: {exc}", code="upstream_error")
    return ApiError(502, str(exc), code="upstream_error")


def models_body() -> dict[str, Any]:
    """``GET /v1/models``."""
    model = {"id": MODEL_NAME, "object": "model", "created": 0, "owned_by": "selfroute"}
    return {"object": "list", "data": [model]}


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise ApiError(
                    400, "only text content parts are supported", code="unsupported_content"
                )
            parts.append(str(part.get("text") or ""))
        return "".join(parts)
    raise ApiError(
        400, "message content must be a string or a list of text parts", param="messages"
    )


def question_of(body: Any) -> tuple[str, bool, bool]:
    """``(question, stream, include_usage)`` of a chat completions request.

    Raises:
        ApiError: Not an object, an unknown model, no user message, bad types.
    """
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != MODEL_NAME:
        raise ApiError(
            404, f"the model {model!r} does not exist; use {MODEL_NAME!r}", code="model_not_found"
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "messages must be a non-empty list", param="messages")
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise ApiError(
            400, "no user message: the last user message is the question", param="messages"
        )
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise ApiError(400, "stream must be a boolean", param="stream")
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
    return _text(users[-1].get("content")), stream, include_usage


def _usage(result: RouteResult) -> dict[str, Any]:
    usage = result.usage
    out: dict[str, Any] = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    if usage.cached_input_tokens is not None:
        out["prompt_tokens_details"] = {"cached_tokens": usage.cached_input_tokens}
    return out


def _selfroute(result: RouteResult, service: RouteService) -> dict[str, Any]:
    data = summarize(result, service.name).model_dump(mode="json")
    data.pop("answer")
    return data


def _envelope(kind: str, cid: str, created: int) -> dict[str, Any]:
    return {"id": cid, "object": kind, "created": created, "model": MODEL_NAME}


async def chat_completion(service: RouteService, question: str) -> dict[str, Any]:
    """The non-streamed reply.

    Raises:
        ApiError: The question failed (see :func:`api_error`).
    """
    try:
        result = await service.answer(question)
    except SelfRouteError as exc:
        raise api_error(exc) from None
    message = {"role": "assistant", "content": answer_text(result), "refusal": None}
    return {
        **_envelope("chat.completion", f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())),
        "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
        "usage": _usage(result),
        "selfroute": _selfroute(result, service),
    }


def _sse(payload: Any) -> bytes:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


async def stream_completion(
    service: RouteService,
    question: str,
    include_usage: bool,
    on_error: Callable[[ApiError], None] | None = None,
) -> AsyncIterator[bytes]:
    """The streamed reply, as server-sent events ending with ``data: [DONE]``.

    RAG text is held until the result (the flow's verdict) is known; long-context text is sent as
    it comes. The finish chunk (and the usage chunk, when asked for) carries the ``selfroute``
    field. A failure before the first event is raised (the caller sends its status); after it,
    it is an ``error`` event (the ``openai`` SDK raises it), reported to ``on_error`` (metrics).
    """
    base = _envelope("chat.completion.chunk", f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time()))

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return _sse({**base, "choices": [choice], **extra})

    role = chunk({"role": "assistant", "content": ""})
    sent = False
    shown = ""
    try:
        async for event in service.stream(question):
            if isinstance(event, RouteEvent) and event.route is Route.LONG_CONTEXT:
                shown = ""  # nothing of the RAG draft was sent
                continue
            live = isinstance(event, TokenEvent) and event.stage is Stage.LONG_CONTEXT
            if not sent and (live or isinstance(event, ResultEvent)):
                sent = True  # the first text: until now a failure still gets its own status
                yield role
            if isinstance(event, TokenEvent) and live:
                shown += event.text
                yield chunk({"content": event.text})
            elif isinstance(event, ResultEvent):
                result = event.result
                answer = answer_text(result)
                rest = answer[len(shown) :] if answer.startswith(shown) else ""
                if rest:
                    yield chunk({"content": rest})
                extra = _selfroute(result, service)
                yield chunk({}, "stop", selfroute=extra)
                if include_usage:
                    yield _sse({**base, "choices": [], "usage": _usage(result), "selfroute": extra})
    except SelfRouteError as exc:
        if not sent:
            raise  # nothing sent: the caller answers with the error's status
        error = api_error(exc)
        if on_error is not None:
            on_error(error)
        yield _sse(error_body(error))
    yield b"data: [DONE]\n\n"
