"""What ``SelfRoute`` takes as input, and reading the question (and a per-call document) out of it.

A question string, a dict (the question under ``question``/``input``/``query``/``messages``, an
optional ``document``, other keys passed through), a list of messages or a ``PromptValue`` (the
last human message). :func:`parse_input` is used by ``invoke``/``stream`` and by ``batch_job``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.prompt_values import PromptValue
from typing_extensions import NotRequired, TypedDict

from selfroute import InvalidInputError

__all__ = [
    "DOCUMENT_KEY",
    "QUESTION_KEYS",
    "SelfRouteInput",
    "SelfRouteInputDict",
    "join_inputs",
    "parse_input",
    "question_text",
]

#: Input keys read as the question when ``question_key`` is not set, in this order
#: (``create_retrieval_chain`` uses ``input``, LangGraph's ``MessagesState`` ``messages``).
QUESTION_KEYS = ("question", "input", "query", "messages")
#: Input key of a per-call long context.
DOCUMENT_KEY = "document"


class SelfRouteInputDict(TypedDict):
    """Dict input: the question and, optionally, this call's long context (other keys pass
    through to the output; ``input``/``query``/``messages`` may hold the question instead)."""

    question: str
    document: NotRequired[str | Document | list[Document] | list[str]]


#: What ``SelfRoute`` takes: a question string, a dict (see :class:`SelfRouteInputDict`; any
#: other keys pass through), a list of messages or a ``PromptValue`` (the last human message).
SelfRouteInput = str | SelfRouteInputDict | Mapping[str, Any] | PromptValue | Sequence[BaseMessage]


def question_text(value: Any, where: str) -> str:
    """The question in ``value``: a string, a message, messages or a ``PromptValue`` (the last
    human message)."""
    if isinstance(value, str):
        return value
    if isinstance(value, PromptValue):
        value = value.to_messages()
    if isinstance(value, BaseMessage):
        value = [value]
    if isinstance(value, Sequence) and value and all(isinstance(m, BaseMessage) for m in value):
        humans = [m for m in value if isinstance(m, HumanMessage) or m.type == "human"]
        if not humans:
            raise InvalidInputError(f"{where} has no human message to take the question from")
        return str(humans[-1].text)
    raise InvalidInputError(
        f"{where} must be a question string, messages or a PromptValue, got {type(value).__name__}"
    )


def parse_input(value: Any, question_key: str | None = None) -> tuple[str, Any, dict[str, Any]]:
    """``(question, per-call document or None, passed-through keys)`` from an input."""
    if isinstance(value, Mapping):
        keys = (question_key,) if question_key else QUESTION_KEYS
        key = next((k for k in keys if k in value), None)
        if key is None:
            others = "" if question_key else " (nor 'input', 'query' or 'messages')"
            raise InvalidInputError(
                f"the input dict has no {keys[0]!r} key{others} to read the question from; "
                f"got keys {sorted(map(str, value))}"
            )
        # Like create_retrieval_chain, the output keeps the input's keys (the question key too;
        # ``question`` is the output's own): all but a per-call document, which can be large.
        rest = {k: v for k, v in value.items() if k not in ("question", DOCUMENT_KEY)}
        return question_text(value[key], f"input {key!r}"), value.get(DOCUMENT_KEY), rest
    if isinstance(value, (str, PromptValue, BaseMessage)) or (
        isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray))
    ):
        return question_text(value, "SelfRoute input"), None, {}
    raise InvalidInputError(
        "SelfRoute input must be a question string, a dict with 'question' (or 'input', 'query', "
        f"'messages') and optionally 'document', messages or a PromptValue; got "
        f"{type(value).__name__}"
    )


def join_inputs(chunks: Iterable[Any]) -> Any:
    """Combine the chunks of a streamed input (strings concatenate; otherwise the last wins)."""
    final: Any = None
    seen = False
    for chunk in chunks:
        if not seen:
            final, seen = chunk, True
            continue
        try:
            final = final + chunk
        except TypeError:
            final = chunk
    if not seen:
        raise InvalidInputError("SelfRoute received an empty input stream")
    return final
