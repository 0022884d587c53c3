"""What the OpenAI and Gemini batch doubles share: answering one request as online would."""

from __future__ import annotations

from typing import Any

from tests.support._loopback import Completion, LoopbackServer, Reply, prompt_text, word_count

__all__ = ["complete"]


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
