"""What a batch job's answers depend on, recorded in its job file and checked on every rerun.

A finished question is answered from the job file, so a rerun with another model, temperature,
prompt, ``k``, verdict mode... would serve the old answers as if they were the new settings'.
:func:`job_settings` describes everything that changes an answer, derived from the flow's
:class:`~selfroute.RouteConfig` (every field except the few in :data:`NOT_ANSWERS`), the batch
backend's models and request options, and what the caller adds (the command line adds its
retrieval settings); :func:`changed_settings` names what differs, and the job refuses to run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from enum import Enum
from typing import Any

from selfroute._flow import RouteConfig

__all__ = ["NOT_ANSWERS", "changed_settings", "describe", "job_settings"]

#: ``RouteConfig`` fields that change what a question costs or how long it may take, never its
#: answer: a rerun may change them freely. Every other field is part of the job's settings.
NOT_ANSWERS = frozenset(
    {
        "prices",  # money in the report
        "long_context_model",  # the name the counterfactual is priced under
        "counterfactual",  # the always-LC price
        "retrieval_timeout_s",  # a store that never answers fails either way
        "deadline_s",  # off in batch runs
        "speculate_below",  # off in batch runs
        "stream_hold_chars",  # streaming only
        "tracing",  # where the spans go
    }
)

#: Longer descriptions are recorded as a hash (a prompt template).
_LONGEST = 120


def describe(value: Any) -> str:
    """A stable, short text of a setting's value (the same in every process)."""
    text = json.dumps(_plain(value), sort_keys=True, ensure_ascii=True, default=str)
    if len(text) > _LONGEST:
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]
    return text


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_plain(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__name__, **fields}
    own_repr = "__repr__" in {k for klass in type(value).__mro__[:-1] for k in vars(klass)}
    if own_repr and not callable(value):
        return repr(value)
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    if own_repr:
        return repr(value)  # a callable object with its own repr (DeclinePattern('...'))
    try:
        attrs = vars(value)
    except TypeError:
        return type(value).__name__
    public = {k: _plain(v) for k, v in sorted(attrs.items()) if not k.startswith("_")}
    return {"type": type(value).__name__, **public}


def job_settings(
    config: RouteConfig, backend: Any, extra: Mapping[str, Any] | None = None
) -> dict[str, str]:
    """``{setting: description}`` of everything a batch job's answers depend on.

    Args:
        config: The flow's settings (every field but :data:`NOT_ANSWERS`).
        backend: The batch backend: its ``models`` by stage, ``options`` (temperature...) and
            ``structured`` when it has them.
        extra: What the caller adds (the command line: retrieval mode, store, embedding...).
    """
    out: dict[str, str] = {}
    for f in dataclasses.fields(config):
        if f.name not in NOT_ANSWERS:
            out[f.name] = describe(getattr(config, f.name))
    models = getattr(backend, "models", None)
    if isinstance(models, Mapping):
        for stage, model in models.items():
            name = getattr(stage, "value", stage)
            out["model" if name == "rag" else f"{name}_model"] = describe(model)
    options = getattr(backend, "options", None)
    if isinstance(options, Mapping):
        for key, value in options.items():
            out[str(key)] = describe(value)
    structured = getattr(backend, "structured", None)
    if isinstance(structured, bool):
        out["structured_output"] = describe(structured)
    for key, value in (extra or {}).items():
        out[str(key)] = describe(value)
    return out


def changed_settings(recorded: Mapping[str, Any], wanted: Mapping[str, str]) -> list[str]:
    """``"name X (now Y)"`` for every setting that differs (or is new, or gone)."""
    out = []
    for name in sorted(set(recorded) | set(wanted)):
        old, new = recorded.get(name), wanted.get(name)
        if old != new:
            out.append(f"{name} {old if old is not None else 'unset'} (now {new or 'unset'})")
    return out
