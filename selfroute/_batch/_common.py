"""What the provider backends share: the structured form of a step and reading a reply."""

from __future__ import annotations

import json
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._faults import normalize_finish_reason
from selfroute._flow import Generate, Generation, StructuredRequest
from selfroute._structured import load_structured
from selfroute._usage import Usage

__all__ = ["REFUSED", "STRUCTURED_SUFFIX", "reply_generation", "structured_form"]

#: Appended to the key of a request sent with a JSON schema: its reply is an object.
STRUCTURED_SUFFIX = "~json"
#: Status codes of a create call the server refused (nothing was created, nothing to look up).
REFUSED = (400, 401, 403, 404, 405, 422, 501)


def structured_form(step: Generate, enabled: bool, backend: str) -> StructuredRequest | None:
    """The structured request to send for ``step`` (``None``: send its plain prompt).

    Raises:
        ConfigurationError: The flow requires structured verdicts and the backend was built
            with ``structured=False``.
    """
    request = step.structured
    if request is None:
        return None
    if enabled:
        return request
    if request.required:
        raise ConfigurationError(
            f"the {backend} batch backend was built with structured=False but the flow "
            "requires structured verdicts"
        )
    return None


def reply_generation(
    text: str, usage: Usage | None, model: Any, structured: bool, finish_reason: Any = None
) -> Generation:
    """A :class:`~selfroute.Generation` from a reply's text (an object when it answers a
    structured request; a reply that holds none keeps its text and says so), with the
    provider's finish reason in the core's words."""
    name = str(model) if model else None
    finish = normalize_finish_reason(finish_reason)
    if not structured:
        return Generation(text, usage, name, finish_reason=finish)
    obj = load_structured(text)
    if obj is not None:
        text, error = json.dumps(obj, ensure_ascii=False), None
    else:
        error = "the model returned no structured object"
    return Generation(
        text, usage, name, structured=obj, structured_error=error, finish_reason=finish
    )
