"""The price table: money per million tokens, by model name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._usage import Usage

__all__ = ["PriceTable"]


@dataclass(frozen=True)
class PriceTable:
    """Prices per million tokens, by model name.

    Args:
        prices: ``{"gpt-4o": (input_per_million, output_per_million), ...}``. A model name
            matches the longest key that it starts with (``gpt-4o-2024-08-06`` matches ``gpt-4o``),
            so dated snapshots price like their family.
        cached_input: Optional ``{model: price_per_million}`` for cached input tokens.
        currency: Label for reports.
    """

    prices: Mapping[str, tuple[float, float]]
    cached_input: Mapping[str, float] = field(default_factory=dict)
    currency: str = "USD"

    def __post_init__(self) -> None:
        for name, pair in self.prices.items():
            if (
                not isinstance(pair, (tuple, list))
                or len(pair) != 2
                or any(not isinstance(p, (int, float)) or p < 0 for p in pair)
            ):
                raise ConfigurationError(
                    f"price for {name!r} must be (input_per_million, output_per_million) "
                    f"non-negative numbers, got {pair!r}"
                )

    def _key(self, model: str | None, table: Mapping[str, Any]) -> str | None:
        if not model:
            return None
        if model in table:
            return model
        best = None
        for key in table:
            if model.startswith(key) and (best is None or len(key) > len(best)):
                best = key
        return best

    def knows(self, model: str | None) -> bool:
        """Whether ``model`` has a price."""
        return self._key(model, self.prices) is not None

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """Money for ``usage`` on ``model``, or ``None`` if the model has no price."""
        key = self._key(model, self.prices)
        if key is None:
            return None
        p_in, p_out = self.prices[key]
        cached = usage.cached_input_tokens or 0
        ckey = self._key(model, self.cached_input)
        # A cached price of another family ("gpt-4o" for "gpt-4o-mini") does not apply.
        if ckey is not None and not ckey.startswith(key):
            ckey = None
        p_cached = self.cached_input[ckey] if ckey is not None else p_in
        uncached = max(0, usage.input_tokens - cached)
        return (uncached * p_in + cached * p_cached + usage.output_tokens * p_out) / 1_000_000
