"""Scripted OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1.

It also serves ``POST /v1/embeddings`` (float or base64 vectors), with a provider's latency and
rate limits (``server.embeddings``: :mod:`tests.support._embeddings`).

Usage::

    with ScriptedOpenAIServer(rules(("Passages:", "Paris"), default="unanswerable")) as srv:
        llm = ChatOpenAI(base_url=srv.base_url, api_key="dummy", model="gpt-4o-mini")

Run standalone (benchmarks, CLI end-to-end tests)::

    python -m tests.support.openai_server --port 8765 --script rules.json

The first stdout line is the base URL.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from tests.support._loopback import (
    Completion,
    LoopbackServer,
    Reply,
    Responder,
    _Handler,
    iter_pieces,
    now,
    rules,
    serve_main,
    sse,
)

#: A scripted reply starting with this is sent as a tool call (when the request offers tools).
TOOL_CALL = "TOOL_CALL:"


def tool_call(arguments: dict[str, Any] | str) -> str:
    """Reply text that the server sends as a call of the request's first tool with ``arguments``
    (a dict, or raw text for garbled arguments), streamed or not."""
    return TOOL_CALL + (arguments if isinstance(arguments, str) else json.dumps(arguments))


__all__ = ["TOOL_CALL", "Reply", "Responder", "ScriptedOpenAIServer", "rules", "tool_call"]

_ERROR_TYPES = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


class ScriptedOpenAIServer(LoopbackServer):
    """OpenAI Chat Completions API double (non-streaming, SSE streaming, ``GET /v1/models``).

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1`` — pass as ``base_url``/``api_base``.
    """

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def route(self, method: str, path: str) -> str | None:
        clean = urlsplit(path).path.rstrip("/")
        if method == "POST" and clean == "/v1/chat/completions":
            return "generate"
        if method == "GET" and clean == "/v1/models":
            return "models"
        if method == "POST" and clean == "/v1/embeddings":
            return "embeddings"
        return None

    def embedding_texts(self, body: dict[str, Any]) -> list[str]:
        given = body.get("input")
        return [given] if isinstance(given, str) else [str(t) for t in given or []]

    def embeddings_body(self, vectors: list[Any], body: dict[str, Any], handler: Any) -> Any:
        from tests.support._embeddings import estimate_tokens

        tokens = sum(estimate_tokens(t) for t in self.embedding_texts(body))
        return {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
            "model": str(body.get("model") or "loopback-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def wants_stream(self, path: str, body: dict[str, Any]) -> bool:
        return bool(body.get("stream"))

    def requested_model(self, handler: _Handler, body: dict[str, Any]) -> str:
        return str(body.get("model") or "loopback-model")

    def models_body(self) -> dict[str, Any]:
        return {
            "object": "list",
            "data": [
                {"id": name, "object": "model", "created": 0, "owned_by": "loopback"}
                for name in ("loopback-model", "gpt-4o-mini", "gpt-4o")
            ],
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        err_type, code = _ERROR_TYPES.get(status, ("server_error", None))
        return {
            "error": {
                "message": message or f"scripted error {status}",
                "type": err_type,
                "param": None,
                "code": code,
            }
        }

    @staticmethod
    def _usage(done: Completion) -> dict[str, Any]:
        return {
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens,
            "total_tokens": done.prompt_tokens + done.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": done.cached_tokens, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }

    @staticmethod
    def _envelope(done: Completion, kind: str) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": kind,
            "created": now(),
            "model": done.model,
            "system_fingerprint": "fp_loopback",
        }

    def completion_body(self, done: Completion) -> dict[str, Any]:
        kind = done.reply.kind
        content = None if kind == "null" else done.text
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        finish: str | None = None if kind == "cut" else done.reply.finish_reason
        tools = done.body.get("tools") or []
        if done.text.startswith(TOOL_CALL) and tools:
            # A scripted tool call (structured verdicts through tool calling): the request's
            # first tool is called with the text after the marker as its arguments.
            message = {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [
                    {
                        "id": f"call_{uuid.uuid4().hex[:24]}",
                        "type": "function",
                        "function": {
                            "name": tools[0]["function"]["name"],
                            "arguments": done.text[len(TOOL_CALL) :],
                        },
                    }
                ],
            }
            finish = "tool_calls"
        choices = [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}]
        return {
            **self._envelope(done, "chat.completion"),
            "choices": [] if kind == "no_choices" else choices,
            "usage": self._usage(done),
        }

    def stream_events(self, done: Completion) -> Iterable[bytes]:
        include_usage = bool((done.body.get("stream_options") or {}).get("include_usage"))
        base = self._envelope(done, "chat.completion.chunk")

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            payload: dict[str, Any] = {**base, "choices": [choice]}
            if include_usage:
                payload["usage"] = None
            return sse(payload)

        kind = done.reply.kind
        tools = done.body.get("tools") or []
        if kind == "no_choices":
            pass
        elif done.text.startswith(TOOL_CALL) and tools:  # a scripted tool call, streamed
            call = {
                "index": 0,
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": tools[0]["function"]["name"], "arguments": ""},
            }
            yield chunk({"role": "assistant", "content": None, "tool_calls": [call]})
            for piece in iter_pieces(done.text[len(TOOL_CALL) :], done.reply.piece_chars):
                yield chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            yield chunk({}, "tool_calls")
        else:
            yield chunk({"role": "assistant", "content": "", "refusal": None})
            for piece in iter_pieces("" if kind == "null" else done.text, done.reply.piece_chars):
                yield chunk({"content": piece})
            if kind == "cut":  # the connection ends cleanly, mid-answer: no finish, no [DONE]
                return
            yield chunk({}, done.reply.finish_reason)
        if include_usage:
            yield sse({**base, "choices": [], "usage": self._usage(done)})
        yield b"data: [DONE]\n\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.openai_server --port P --script FILE.json``."""
    return serve_main(ScriptedOpenAIServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
