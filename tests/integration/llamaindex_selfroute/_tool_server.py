"""The loopback OpenAI server, able to answer with a tool call (for structured verdicts).

``tests/support/openai_server.ScriptedOpenAIServer`` only writes message text. Until it can script
tool calls itself, this subclass does: a scripted reply whose text is ``tool_call(arguments)``
(the ``TOOL_CALL:`` prefix, then the arguments' JSON text -- or any text, for garbled arguments) is
sent as an OpenAI ``tool_calls`` message calling the request's first tool (``finish_reason``
``tool_calls``), with the usual usage block. Every other reply is unchanged. Non-streaming only
(the adapter makes structured calls without streaming).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tests.support._loopback import Completion
from tests.support.openai_server import ScriptedOpenAIServer

__all__ = ["TOOL_CALL", "ToolCallingOpenAIServer", "tool_call"]

TOOL_CALL = "TOOL_CALL:"


def tool_call(arguments: dict[str, Any] | str) -> str:
    """Reply text that the server sends as a tool call with ``arguments`` (a dict or raw text)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return TOOL_CALL + text


class ToolCallingOpenAIServer(ScriptedOpenAIServer):
    """A :class:`ScriptedOpenAIServer` that can answer with a tool call (see the module doc)."""

    def completion_body(self, done: Completion) -> dict[str, Any]:
        body = super().completion_body(done)
        tools = done.body.get("tools") or []
        if not done.text.startswith(TOOL_CALL) or not tools:
            return body
        arguments = done.text[len(TOOL_CALL) :]
        choice = body["choices"][0]
        choice["message"] = {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "tool_calls": [
                {
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {"name": tools[0]["function"]["name"], "arguments": arguments},
                }
            ],
        }
        choice["finish_reason"] = "tool_calls"
        return body
