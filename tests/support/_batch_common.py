"""What the OpenAI and Gemini batch doubles share: answering one request as online would."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from tests.support._loopback import (
    Completion,
    LoopbackServer,
    Reply,
    _Handler,
    prompt_text,
    word_count,
)

__all__ = ["complete", "serve_api"]


def serve_api(
    server: LoopbackServer,
    handler: _Handler,
    lock: threading.RLock,
    call: Callable[[bytes], tuple[int, Any]],
) -> None:
    """Read the request body, answer with ``call(body)`` under ``lock`` and send the reply (JSON,
    or raw bytes for file contents). A missing object is a 404, a bug in the double a 500 (never
    a hang)."""
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length) if length else b""
    try:
        with lock:
            status, payload = call(raw)
    except KeyError as exc:
        status, payload = 404, server.error_body(404, f"no such object: {exc}")
    except Exception as exc:
        server.errors.append(exc)
        status, payload = 500, server.error_body(500, f"{type(exc).__name__}: {exc}")
    if isinstance(payload, bytes) and status == 200:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/octet-stream")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        handler.wfile.flush()
        return
    handler.send_json(status, payload)


def complete(server: LoopbackServer, body: dict[str, Any], model: str) -> tuple[Reply, Completion]:
    """The scripted reply to ``body`` and the completion it renders to (token counts as the
    online endpoint reports them). A reply of kind ``error``/``malformed``/``hang`` is a failed
    request; the caller writes it as one."""
    reply = server._resolve(body)
    text = "" if reply.kind == "empty" else reply.text
    prompt_tokens = (
        reply.prompt_tokens if reply.prompt_tokens is not None else word_count(prompt_text(body))
    )
    completion_tokens = (
        reply.completion_tokens if reply.completion_tokens is not None else word_count(text)
    )
    name = reply.model if reply.model is not None else model
    return reply, Completion(body, reply, name, text, prompt_tokens, completion_tokens)
