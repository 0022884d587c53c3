"""Reading a price table from the command line or a file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._pricing import PriceTable

__all__ = ["parse_prices"]


def _pair(name: str, value: Any, where: str) -> tuple[float, float]:
    if isinstance(value, dict):
        value = (value.get("input"), value.get("output"))
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise ConfigurationError(
            f"{where}: price of {name!r} must be [input_per_million, output_per_million], "
            f"got {value!r}"
        )
    return float(value[0]), float(value[1])


def parse_prices(spec: str | Path) -> PriceTable:
    """A :class:`~selfroute.PriceTable` from ``MODEL=IN/OUT[,MODEL=IN/OUT...]`` or a JSON file.

    Prices are per million tokens. The JSON file maps model names to ``[input, output]`` (or
    ``{"input": .., "output": ..}``); an optional ``"currency"`` key labels the money.

    Examples:
        >>> parse_prices("gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6").cost("gpt-4o", ...)  # doctest: +SKIP
    """
    text = str(spec).strip()
    path = Path(text)
    if text.endswith(".json") or path.is_file():
        if not path.is_file():
            raise ConfigurationError(f"price file {path} does not exist")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"price file {path} is not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise ConfigurationError(f"price file {path} must hold a JSON object")
        currency = str(data.pop("currency", "USD"))
        table = {name: _pair(name, v, str(path)) for name, v in data.items()}
        return PriceTable(table, currency=currency)
    prices: dict[str, tuple[float, float]] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        nums = value.split("/")
        if not sep or not name.strip() or len(nums) != 2:
            raise ConfigurationError(
                f"bad price {part!r}: write MODEL=INPUT/OUTPUT per million tokens, e.g. "
                "gpt-4o-mini=0.15/0.6"
            )
        try:
            prices[name.strip()] = (float(nums[0]), float(nums[1]))
        except ValueError:
            raise ConfigurationError(f"bad price {part!r}: prices must be numbers") from None
    if not prices:
        raise ConfigurationError("empty price table")
    return PriceTable(prices)
