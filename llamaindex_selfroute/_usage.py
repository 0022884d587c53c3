"""Token usage and model names from LlamaIndex LLM responses.

LlamaIndex LLM classes keep what the provider reported in ``ChatResponse.raw`` (the provider's
response object or dict) and, for the OpenAI family, copy the counts into
``ChatResponse.additional_kwargs``. This module reads both, whatever the provider's naming
(OpenAI ``prompt_tokens``, Anthropic ``input_tokens``, Gemini ``prompt_token_count``), into a
:class:`selfroute.Usage` labelled ``provider``. When nothing was reported it returns ``None`` and
the core estimates the usage and labels it an estimate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from selfroute import Usage
from selfroute._faults import INCOMPLETE, normalize_finish_reason

__all__ = [
    "StreamUsage",
    "finish_reason_from_response",
    "model_from_response",
    "usage_from_response",
]

_INPUT_KEYS = ("prompt_tokens", "input_tokens", "prompt_token_count")
_OUTPUT_KEYS = ("completion_tokens", "output_tokens", "candidates_token_count")
_TOTAL_KEYS = ("total_tokens", "total_token_count")
_CACHED_KEYS = ("cache_read_input_tokens", "cached_content_token_count", "cached_tokens")
_DETAIL_KEYS = ("prompt_tokens_details", "input_token_details", "input_tokens_details")


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    """A dict view of a dict, a pydantic model or a plain object (``None`` if impossible)."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            dumped = dump()
        except Exception:  # a broken provider object must not cost the answer
            dumped = None
        if isinstance(dumped, Mapping):
            return dumped
    try:
        attrs = vars(value)
    except TypeError:
        return None
    return {k: v for k, v in attrs.items() if not k.startswith("_")}


def _get(container: Any, key: str) -> Any:
    if container is None:
        return None
    if isinstance(container, Mapping):
        return container.get(key)
    return getattr(container, key, None)


def _first_int(mapping: Mapping[str, Any], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, (int, float)):
            return int(value)
    return None


def _cached(mapping: Mapping[str, Any]) -> int | None:
    found = _first_int(mapping, _CACHED_KEYS)
    if found is not None:
        return found
    for key in _DETAIL_KEYS:
        details = _as_mapping(mapping.get(key))
        if details:
            found = _first_int(details, ("cached_tokens", "cache_read"))
            if found is not None:
                return found
    return None


def _usage_from_mapping(mapping: Mapping[str, Any] | None) -> Usage | None:
    if not mapping:
        return None
    input_tokens = _first_int(mapping, _INPUT_KEYS)
    output_tokens = _first_int(mapping, _OUTPUT_KEYS)
    if input_tokens is None and output_tokens is None:
        return None
    if not input_tokens and not output_tokens:
        return None  # all-zero counts: the provider reported nothing real
    total = _first_int(mapping, _TOTAL_KEYS)
    return Usage.of(
        input_tokens or 0,
        output_tokens or 0,
        total_tokens=total if total else None,
        cached_input_tokens=_cached(mapping),
        source="provider",
    )


def usage_from_response(response: Any) -> Usage | None:
    """Provider-reported usage of a LlamaIndex ``ChatResponse`` / ``CompletionResponse``.

    Looks at ``raw.usage`` (OpenAI, Anthropic, OpenAI-compatible servers), ``raw.usage_metadata``
    (Gemini), then ``additional_kwargs`` (where LlamaIndex's OpenAI class copies the counts).
    Dicts, pydantic models and plain objects are all accepted.

    Args:
        response: The LLM response.

    Returns:
        The usage labelled ``provider``, or ``None`` when the provider reported nothing.
    """
    raw = getattr(response, "raw", None)
    for key in ("usage", "usage_metadata"):
        usage = _usage_from_mapping(_as_mapping(_get(raw, key)))
        if usage is not None:
            return usage
    return _usage_from_mapping(getattr(response, "additional_kwargs", None))


def model_from_response(response: Any) -> str | None:
    """The model name the provider reported in ``raw`` (``model`` / ``model_version``)."""
    raw = getattr(response, "raw", None)
    for key in ("model", "model_version", "modelVersion"):
        value = _get(raw, key)
        if isinstance(value, str) and value:
            return value
    return None


def _first(value: Any) -> Any:
    if isinstance(value, (list, tuple)) and value:
        return value[0]
    return None


def finish_reason_from_response(response: Any) -> str | None:
    """How the call ended, from ``raw`` (normalized: ``stop``, ``length``, ``content_filter``).

    Reads ``raw.choices[0].finish_reason`` (OpenAI and compatible servers),
    ``raw.candidates[0].finish_reason`` (Gemini) and ``raw.stop_reason`` (Anthropic); ``None``
    when the response does not say.
    """
    raw = getattr(response, "raw", None)
    for container, key in (
        (_first(_get(raw, "choices")), "finish_reason"),
        (_first(_get(raw, "candidates")), "finish_reason"),
        (raw, "stop_reason"),
        (raw, "finish_reason"),
    ):
        reason = normalize_finish_reason(_get(container, key))
        if reason is not None:
            return reason
    return None


class StreamUsage:
    """Collects usage over the chunks of a streamed response.

    Providers report streamed usage differently: OpenAI sends it once on a final chunk, Anthropic
    sends input tokens on the first event and the running output count later, some servers repeat
    the running totals on every chunk. Taking the largest value seen for each field is right for
    all of them (summing would double-count repeated totals).
    """

    def __init__(self) -> None:
        self._input = 0
        self._output = 0
        self._total = 0
        self._cached: int | None = None
        self.model: str | None = None
        self.seen = False
        self._finish: str | None = None
        self._chunked = False  # an OpenAI-style stream (chunks with ``choices``)

    def add(self, response: Any) -> None:
        """Fold in one streamed chunk."""
        model = model_from_response(response)
        if model:
            self.model = model
        if _get(getattr(response, "raw", None), "choices") is not None:
            self._chunked = True
        finish = finish_reason_from_response(response)
        if finish is not None:
            self._finish = finish
        usage = usage_from_response(response)
        if usage is None:
            return
        self.seen = True
        self._input = max(self._input, usage.input_tokens)
        self._output = max(self._output, usage.output_tokens)
        self._total = max(self._total, usage.total_tokens)
        if usage.cached_input_tokens is not None:
            self._cached = max(self._cached or 0, usage.cached_input_tokens)

    def finish_reason(self) -> str | None:
        """How the stream ended: the last finish reason reported; ``incomplete`` for an
        OpenAI-style stream that ended without one; ``None`` when the provider does not say."""
        if self._finish is None and self._chunked:
            return INCOMPLETE
        return self._finish

    def usage(self) -> Usage | None:
        """The usage of the whole stream, or ``None`` if no chunk reported any."""
        if not self.seen:
            return None
        return Usage.of(
            self._input,
            self._output,
            total_tokens=max(self._total, self._input + self._output),
            cached_input_tokens=self._cached,
            source="provider",
        )
