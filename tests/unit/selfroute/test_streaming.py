"""The streaming sentinel sniffer."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import selfroute as sr
from selfroute._verdict._parse import _clean, _kind, _norm, _sentences, strip_reasoning


def _feed(pieces: list[str], **kw: object) -> tuple[list[str], sr.flow.SentinelSniffer]:
    sniffer = sr.flow.SentinelSniffer(**kw)  # type: ignore[arg-type]
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
    sniffer = sr.flow.SentinelSniffer()
    shown = sniffer.feed("Thirty-one")
    assert shown == "Thirty-one"
    assert sniffer.remainder("Thirty-one years.") == " years."
    assert sniffer.remainder("Thirty-one years.") == ""
    # A final answer that does not extend what was shown adds nothing.
    assert sniffer.remainder("Something else") == ""


@pytest.mark.parametrize(
    "prefix",
    [
        "The text chunks provided do",
        "The provided financial statement does not",
        "The 10-K filing excerpt",
        "Paper 2 does",
        "None of the passages",
        "Nothing in the",
        "Sure! ",
        "Sure! Based on the passages, the passages do not",
        "Thank you for providing the passages. Unfortunately",
        "I apologize, but",
        "After reviewing the passages, I do not see",
        "However, the text",
        "No, the paper does not",
        "Unable to answer",
    ],
)
def test_structural_decline_openings_are_held(prefix: str) -> None:
    out, sniffer = _feed([prefix])
    assert out == [""] and not sniffer.released


@pytest.mark.parametrize(
    "text",
    [
        "The Eiffel Tower is 330 metres tall and was finished in 1889.",
        "Sure! Paris is the capital of France and its largest city.",
        "The report was filed in 2019 by the auditors of the company.",
        "No, Paris is not in Spain; it is the capital of France.",
    ],
)
def test_answers_with_source_like_openings_are_released(text: str) -> None:
    words = text.split(" ")
    out, sniffer = _feed([words[0], *(" " + w for w in words[1:])])
    assert sniffer.released and any(out[:-1])  # shown before the answer ended
    assert "".join(out) == text.rstrip(".") or "".join(out) == text


def test_streamed_and_parsed_verdicts_agree_on_structural_declines() -> None:
    """What the sniffer holds to the end is what parse_verdict declines (grammar openings)."""
    for text in [
        "The provided financial statement does not list the CEO's salary.",
        "Sure! Here's the answer based on the given passages: the passages do not mention it.",
        "Based on the provided chunks from the paper, there is no discussion of the dataset size.",
        "I looked through the passages but couldn't find the answer.",
    ]:
        sniffer = sr.flow.SentinelSniffer()
        shown = "".join(sniffer.feed(w + " ") for w in text.split(" "))
        assert shown == "" and sr.parse_verdict(text).declined, text


def _opening_declines_shown(path: str, hold_chars: int = 0) -> tuple[int, list[str]]:
    """(opening declines parse_verdict catches, those the sniffer showed) in a labelled file."""
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "refusals" / path
    total, shown = 0, []
    for line in fixture.read_text(encoding="utf-8").splitlines():
        text = json.loads(line)["prediction"]
        if not sr.parse_verdict(text).declined:
            continue
        kinds = [_kind(_norm(s)) for s in _sentences(_clean(strip_reasoning(text)[0]))]
        if next((k for k in kinds if k != "P"), "P") not in "RQFP":
            continue  # content first: only the end of the answer can tell (retracted)
        total += 1
        sniffer = sr.flow.SentinelSniffer(hold_chars=hold_chars)
        for i in range(0, len(text), 4):
            sniffer.feed(text[i : i + 4])
        if sniffer.released:
            shown.append(text)
    return total, shown


def test_no_opening_decline_of_the_held_out_source_is_ever_shown() -> None:
    total, shown = _opening_declines_shown("ragtruth_labelled.jsonl")
    assert total >= 60 and shown == []


def test_opening_declines_shown_on_the_tuning_sources_are_the_known_passive_shape() -> None:
    """ "X is not mentioned in the provided text" opens like an answer: shown, then retracted.

    So does a label whose value is the decline ("GhostVLAD approach : unanswerable", "the answer
    is: unanswerable"): since the detector reads a label's value (#15), those two count as
    opening declines too (237 instead of 235), and the sniffer cannot hold every "X :" opening.
    """
    total, shown = _opening_declines_shown("labelled.jsonl")
    assert total >= 200 and len(shown) <= 21
    for text in shown:
        assert (
            re.search(r"\b(?:is|are) not (?:explicitly )?(?:mentioned|specified|stated)", text)
            or re.search(r"\b(?:Yes|According)\b", text)
            or re.search(r"^[^.:]{1,60}: *unanswerable\b", text.strip())
            or not re.search(r"\w", text)
        ), text


def test_with_a_stream_hold_the_passive_shape_is_not_shown_either() -> None:
    """``hold_chars=80``: the detector reads the first sentence before anything is shown."""
    total, shown = _opening_declines_shown("labelled.jsonl", hold_chars=80)
    assert total >= 200 and len(shown) <= 1
    assert _opening_declines_shown("ragtruth_labelled.jsonl", hold_chars=80)[1] == []
