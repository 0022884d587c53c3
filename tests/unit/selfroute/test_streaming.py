"""The streaming sentinel sniffer."""

from __future__ import annotations

import pytest

import selfroute as sr


def _feed(pieces: list[str], **kw: object) -> tuple[list[str], sr.SentinelSniffer]:
    sniffer = sr.SentinelSniffer(**kw)  # type: ignore[arg-type]
    return [sniffer.feed(p) for p in pieces], sniffer


def test_plain_answer_is_released_at_once() -> None:
    out, sniffer = _feed(["Paris"])
    assert out == ["Paris"] and sniffer.released


@pytest.mark.parametrize(
    "prefix",
    [
        "Un",
        "unanswer",
        "**Unans",
        '"Un',
        "The text does",
        "The passages do not",
        "I cannot",
        "I'm sorry",
        "Unfortunately",
        "There is no",
        "Not mentioned",
        "Based on the passage",
        "<thi",
        "<think>Paris is the capital",
        "Answer:",
        "Answer",
        "Final ans",
        "   ",
        "",
    ],
)
def test_prefixes_that_could_still_be_a_decline_are_held(prefix: str) -> None:
    out, sniffer = _feed([prefix])
    assert out == [""] and not sniffer.released


def test_sentinel_split_over_chunks_is_never_released() -> None:
    out, sniffer = _feed(["U", "n", "answer", "able", "."])
    assert "".join(out) == "" and not sniffer.released


def test_release_happens_once_the_text_diverges_from_every_decline() -> None:
    out, _ = _feed(["The", " text", " was", " written in 1901."])
    assert out[:2] == ["", ""]  # "The text" could still be "The text does not ..."
    assert "".join(out) == "The text was written in 1901."


def test_label_and_reasoning_are_dropped_before_release() -> None:
    out, _ = _feed(["<think>", "the first passage", "</think>", "Answer:", " Paris", " is it."])
    assert "".join(out) == "Paris is it."


def test_lead_in_then_answer_is_released_after_the_comma() -> None:
    out, _ = _feed(["Based on the passage", ",", " Paris", " is the capital."])
    assert out[0] == "" and "".join(out) == "Based on the passage, Paris is the capital."


def test_strict_streams_natural_refusals_but_holds_the_sentinel() -> None:
    out, _ = _feed(["The text does not say."], strict=True)
    assert out == ["The text does not say."]
    out, _ = _feed(["Unans"], strict=True)
    assert out == [""]


def test_custom_sentinel_is_held() -> None:
    out, _ = _feed(["NO_", "ANS"], sentinel="NO_ANSWER", strict=True)
    assert out == ["", ""]
    out, _ = _feed(["Un"], sentinel="NO_ANSWER", strict=True)
    assert out == ["Un"]


def test_min_chars_holds_short_prefixes() -> None:
    out, _ = _feed(["Pa", "ris"], min_chars=4)
    assert out == ["", "Paris"]


def test_remainder_completes_the_final_answer() -> None:
    sniffer = sr.SentinelSniffer()
    shown = sniffer.feed("Thirty-one")
    assert shown == "Thirty-one"
    assert sniffer.remainder("Thirty-one years.") == " years."
    assert sniffer.remainder("Thirty-one years.") == ""
    # A final answer that does not extend what was shown adds nothing.
    assert sniffer.remainder("Something else") == ""
