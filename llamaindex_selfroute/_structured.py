"""Structured verdicts through LlamaIndex tool calling.

With ``verdict="structured"`` (or ``"auto"``) the core offers the RAG step in a structured form: a
prompt and the JSON schema of an ``{answerable, answer}`` object
(:class:`selfroute.flow.StructuredRequest`). A LlamaIndex ``FunctionCallingLLM`` whose metadata says ``is_function_calling_model`` gets it as one
required tool built from that schema; the tool call's arguments are the object. Other LLMs cannot
(the core then falls back to the sentinel, or raises for ``verdict="structured"``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, ClassVar

from llama_index.core.llms import LLM
from llama_index.core.llms.function_calling import FunctionCallingLLM
from llama_index.core.tools import FunctionTool, ToolMetadata
from pydantic import BaseModel, ConfigDict, Field, create_model

__all__ = [
    "ArgumentDeltas",
    "raw_arguments",
    "structured_support",
    "tool_arguments",
    "verdict_tool",
]


def structured_support(llm: LLM) -> str | None:
    """Why ``llm`` cannot give a structured verdict, or ``None`` when it can (tool calling)."""
    if not isinstance(llm, FunctionCallingLLM):
        return f"{type(llm).__name__} is not a LlamaIndex FunctionCallingLLM"
    try:
        calling = bool(llm.metadata.is_function_calling_model)
    except Exception:  # metadata of a third-party LLM may raise: treat as not supported
        calling = False
    if not calling:
        return f"{type(llm).__name__}'s metadata says is_function_calling_model=False"
    return None


class _SchemaModel(BaseModel):
    """Base of the tool's argument model: its JSON schema is exactly the core's."""

    model_config = ConfigDict(extra="forbid")
    selfroute_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return copy.deepcopy(cls.selfroute_schema)


_JSON_TYPES: dict[str, Any] = {
    "boolean": bool,
    "string": str,
    "integer": int,
    "number": float,
    "object": dict[str, Any],
}


def _python_type(spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    if kind == "array":
        items = spec.get("items")
        return list[_python_type(items) if isinstance(items, Mapping) else Any]  # type: ignore[misc]
    return _JSON_TYPES.get(str(kind), Any)


@lru_cache(maxsize=16)
def _model(schema_json: str) -> type[BaseModel]:
    schema = json.loads(schema_json)
    required = set(schema.get("required") or ())
    fields: dict[str, Any] = {}
    for name, spec in dict(schema.get("properties") or {}).items():
        spec = spec if isinstance(spec, Mapping) else {}
        default = ... if name in required else None
        fields[name] = (
            _python_type(spec),
            Field(default=default, description=spec.get("description")),
        )
    model: type[_SchemaModel] = create_model(
        str(schema.get("title") or "rag_verdict"), __base__=_SchemaModel, **fields
    )
    model.selfroute_schema = schema
    return model


def verdict_tool(schema: Mapping[str, Any], name: str) -> FunctionTool:
    """A tool whose parameters are ``schema`` (the model "calls" it to give its verdict).

    The tool is never run: its arguments are the answer.
    """
    fn_schema = _model(json.dumps(dict(schema)))  # key order kept: "answerable" first
    description = str(schema.get("description") or "Give the answer.")
    metadata = ToolMetadata(description=description, name=name, fn_schema=fn_schema)
    return FunctionTool(fn=_verdict, metadata=metadata)


def _verdict(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def tool_arguments(
    llm: FunctionCallingLLM, response: Any, name: str
) -> tuple[dict[str, Any] | None, str | None]:
    """The arguments of the response's call of tool ``name`` (or of its first tool call).

    Returns:
        ``(arguments, None)`` for a tool call with an argument object; ``(None, why)`` when the
        response has no tool call or its arguments are not an object.
    """
    calls = llm.get_tool_calls_from_response(response, error_on_no_tool_call=False)
    if not calls:
        return None, f"the model answered without calling the {name} tool"
    chosen = next((c for c in calls if getattr(c, "tool_name", None) == name), calls[0])
    args = getattr(chosen, "tool_kwargs", None)
    if isinstance(args, str):  # some integrations leave the JSON text unparsed
        try:
            args = json.loads(args)
        except ValueError:
            args = None
    if not isinstance(args, Mapping):
        return None, f"the {name} tool call's arguments are not a JSON object"
    return dict(args), None


def raw_arguments(response: Any) -> str | None:
    """The first tool call's argument text so far in a streamed response (``None``: none yet,
    or an integration that hands out parsed arguments only)."""
    message = getattr(response, "message", None)
    for block in getattr(message, "blocks", None) or ():
        if getattr(block, "block_type", None) == "tool_call":
            kwargs = getattr(block, "tool_kwargs", None)
            return kwargs if isinstance(kwargs, str) else None
    calls = (getattr(message, "additional_kwargs", None) or {}).get("tool_calls") or ()
    for call in calls:
        function = (
            call.get("function") if isinstance(call, Mapping) else getattr(call, "function", None)
        )
        args = (
            function.get("arguments")
            if isinstance(function, Mapping)
            else getattr(function, "arguments", None)
        )
        return args if isinstance(args, str) else None
    return None


class ArgumentDeltas:
    """The pieces of the verdict tool call's argument text, from ``stream_chat_with_tools``.

    LlamaIndex hands out each streamed response with the tool call's arguments so far; the new
    piece is what follows the length already seen (no text is compared again: linear in the
    arguments). Arguments that shrink (an integration that rewrites them) end the pieces: the
    final response's tool call decides.
    """

    def __init__(self) -> None:
        self._seen = 0
        self._broken = False

    def delta(self, response: Any) -> str:
        """The argument text ``response`` adds."""
        args = raw_arguments(response)
        if self._broken or args is None:
            return ""
        if len(args) < self._seen:
            self._broken = True
            return ""
        out, self._seen = args[self._seen :], len(args)
        return out
