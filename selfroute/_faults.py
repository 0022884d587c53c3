"""What a failed model call means, and how a model call ended: helpers for the adapters.

The flow never looks at provider exceptions or provider finish reasons itself (provider quirks
live in the adapters); the adapters use these helpers to translate what their provider clients
raise and report into the core's vocabulary:

* :func:`provider_rejection` -- the HTTP status of a provider error that is the caller's to fix
  (400 invalid request / context length exceeded, 401, 403, 404 ``model_not_found``, 422), or
  ``None`` for a transient fault (timeouts, connection errors, 408, 409, 429 after the client's
  own retries, 5xx) or an error that carries no status. A rejection is raised as
  :class:`~selfroute.ModelConfigurationError` (:func:`classified`); it is never escalated.
* :func:`normalize_finish_reason` -- a provider's finish reason (``length``, ``MAX_TOKENS``,
  ``max_tokens``, ``content_filter``, ``SAFETY`` ...) in the core's words: ``stop``, ``length``,
  ``content_filter``, ``tool_calls`` or ``incomplete`` (a stream that ended without any finish
  reason), other values lower-cased. :data:`TRUNCATING` are the ones whose text is not a whole
  answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from selfroute._errors import ModelConfigurationError, ModelOutputError
from selfroute._redact import redact_exception
from selfroute._result import Stage

__all__ = [
    "INCOMPLETE",
    "TRUNCATING",
    "classified",
    "normalize_finish_reason",
    "provider_rejection",
]

#: The finish reason of a stream that ended without one (no final chunk, no ``[DONE]``).
INCOMPLETE = "incomplete"

#: Finish reasons whose text is cut short: not a verdict.
TRUNCATING = frozenset({"length", "content_filter", INCOMPLETE})

#: HTTP statuses that say the request itself is wrong (key, permission, model name, size).
_REJECTIONS = frozenset({400, 401, 403, 404, 405, 413, 422})

_FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "eos_token": "stop",
    "finish_reason_unspecified": "stop",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",
    "content_filter": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
    "image_safety": "content_filter",
    "refusal": "content_filter",
    "tool_calls": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    INCOMPLETE: INCOMPLETE,
}


def normalize_finish_reason(raw: object) -> str | None:
    """A provider's finish reason in the core's words (``None`` when none was reported).

    Args:
        raw: ``"length"`` (OpenAI), ``"MAX_TOKENS"`` or ``FinishReason.SAFETY`` (Gemini),
            ``"max_tokens"`` (Anthropic) ...; enums are read by their name.

    Returns:
        ``stop``, ``length``, ``content_filter``, ``tool_calls``, ``incomplete``, another
        reported value lower-cased, or ``None``.
    """
    if raw is None:
        return None
    name = getattr(raw, "name", None)
    text = name if isinstance(name, str) else str(raw)
    key = text.strip().lower().rsplit(".", 1)[-1]
    if not key or key == "none":
        return None
    return _FINISH.get(key, key)


def _status(exc: BaseException) -> int | None:
    for attr in ("status_code", "code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    value = getattr(response, "status_code", None)
    if isinstance(value, int) and 100 <= value < 600:
        return value
    return None


def provider_rejection(exc: BaseException) -> int | None:
    """The HTTP status of a provider error that no retry or escalation can fix, else ``None``.

    The exception and its causes are read (a client may wrap the HTTP error): the first status
    found decides. 400, 401, 403, 404, 405, 413 and 422 are rejections; 408, 409, 429 and 5xx
    are transient, and so is an error with no status (timeout, connection reset, malformed
    body).
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        status = _status(current)
        if status is not None:
            return status if status in _REJECTIONS else None
        current = current.__cause__ or current.__context__
    return None


@contextmanager
def classified(stage: Stage, model: str | None = None) -> Iterator[None]:
    """Run a provider call; a rejection (see :func:`provider_rejection`) is raised as a
    :class:`~selfroute.ModelConfigurationError` naming the stage and the model, a reply with no
    choices at all (the clients fail reading ``choices[0]``) as a
    :class:`~selfroute.ModelOutputError` saying the reply was empty, anything else unchanged (a
    transient fault, for the flow to escalate per ``on_rag_error``)."""
    what = "RAG-step" if stage is Stage.RAG else "long-context"
    named = f" ({model})" if model else ""
    try:
        yield
    except IndexError as exc:  # LangChain and LlamaIndex read choices[0] of an empty list
        raise ModelOutputError(
            f"the {what} model{named} returned an empty reply (no choices)", stage=stage.value
        ) from exc
    except Exception as exc:
        status = provider_rejection(exc)
        if status is None or isinstance(exc, ModelConfigurationError):
            raise
        raise ModelConfigurationError(
            f"the {what} model{named} rejected the request with HTTP {status} (a key, "
            f"permission, model name or request size problem; not escalated): "
            f"{redact_exception(exc)}",
            stage=stage.value,
            status=status,
            model=model,
        ) from exc
