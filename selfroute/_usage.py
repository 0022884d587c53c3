"""Normalized token usage, named as LangChain names it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Usage"]

#: ``source`` values. ``provider`` means the model API reported the numbers; ``tokenizer`` means a
#: local tokenizer counted them (an estimate of what the provider would bill); ``heuristic`` means a
#: characters-per-token guess (a rough estimate).
USAGE_SOURCES = ("provider", "tokenizer", "heuristic", "mixed", "none")


@dataclass(frozen=True)
class Usage:
    """Token usage of one model call or of several added together.

    Attributes:
        input_tokens: Prompt tokens.
        output_tokens: Completion tokens.
        total_tokens: ``input_tokens + output_tokens`` unless the provider said otherwise.
        cached_input_tokens: Input tokens served from the provider's prompt cache, when reported.
        source: Where the numbers come from: ``provider`` (reported by the API), ``tokenizer`` or
            ``heuristic`` (estimates, made only where the provider reported nothing), ``mixed``
            when sums combine several sources, ``none`` for an empty usage.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int | None = None
    source: str = "provider"
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        input_tokens: int,
        output_tokens: int,
        *,
        total_tokens: int | None = None,
        cached_input_tokens: int | None = None,
        source: str = "provider",
    ) -> Usage:
        """Build a usage, filling ``total_tokens`` from the parts when not given."""
        return cls(
            input_tokens=int(input_tokens),
            output_tokens=int(output_tokens),
            total_tokens=int(total_tokens)
            if total_tokens is not None
            else int(input_tokens) + int(output_tokens),
            cached_input_tokens=cached_input_tokens,
            source=source,
        )

    @classmethod
    def zero(cls) -> Usage:
        """An empty usage (nothing was called)."""
        return cls(source="none")

    @property
    def is_estimate(self) -> bool:
        """True when any part of the numbers was estimated rather than provider-reported."""
        return self.source not in ("provider", "none")

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        if self.source == "none":
            source = other.source
        elif other.source == "none" or other.source == self.source:
            source = self.source
        else:
            source = "mixed"
        cached: int | None
        if self.cached_input_tokens is None and other.cached_input_tokens is None:
            cached = None
        else:
            cached = (self.cached_input_tokens or 0) + (other.cached_input_tokens or 0)
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            cached_input_tokens=cached,
            source=source,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form (JSON-serializable)."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cached_input_tokens": self.cached_input_tokens,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage:
        """The inverse of :meth:`to_dict` (missing counts are 0; ``extra`` kept if present)."""
        d = dict(data or {})
        return cls(
            input_tokens=int(d.get("input_tokens") or 0),
            output_tokens=int(d.get("output_tokens") or 0),
            total_tokens=int(d.get("total_tokens") or 0),
            cached_input_tokens=d.get("cached_input_tokens"),
            source=str(d.get("source") or "provider"),
            extra=dict(d.get("extra") or {}),
        )
