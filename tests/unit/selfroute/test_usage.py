"""Normalised token usage."""

from __future__ import annotations

import json

import selfroute as sr


def test_of_fills_the_total() -> None:
    u = sr.Usage.of(100, 7)
    assert (u.input_tokens, u.output_tokens, u.total_tokens, u.source) == (100, 7, 107, "provider")
    assert sr.Usage.of(100, 7, total_tokens=120).total_tokens == 120  # provider's total wins
    assert not u.is_estimate


def test_sums_add_every_field() -> None:
    a = sr.Usage.of(100, 7, cached_input_tokens=40)
    b = sr.Usage.of(1000, 9)
    s = a + b
    assert (s.input_tokens, s.output_tokens, s.total_tokens) == (1100, 16, 1116)
    assert s.cached_input_tokens == 40
    assert (sr.Usage.of(1, 1) + sr.Usage.of(1, 1)).cached_input_tokens is None
    assert sum([a, b], sr.Usage.zero()) == s


def test_sources_combine_and_label_estimates() -> None:
    provider = sr.Usage.of(1, 1)
    tokenizer = sr.Usage.of(1, 1, source="tokenizer")
    zero = sr.Usage.zero()
    assert zero.source == "none" and not zero.is_estimate and zero.total_tokens == 0
    assert (zero + tokenizer).source == "tokenizer"
    assert (provider + zero).source == "provider"
    assert (provider + provider).source == "provider"
    mixed = provider + tokenizer
    assert mixed.source == "mixed" and mixed.is_estimate
    assert tokenizer.is_estimate and sr.Usage.of(1, 1, source="heuristic").is_estimate


def test_adding_something_else_is_a_type_error() -> None:
    try:
        sr.Usage.of(1, 1) + 3  # type: ignore[operator]
    except TypeError:
        pass
    else:  # pragma: no cover
        raise AssertionError("expected TypeError")


def test_to_dict_is_json() -> None:
    d = sr.Usage.of(3, 4, cached_input_tokens=1, source="tokenizer").to_dict()
    assert json.loads(json.dumps(d)) == {
        "input_tokens": 3,
        "output_tokens": 4,
        "total_tokens": 7,
        "cached_input_tokens": 1,
        "source": "tokenizer",
    }
