"""The incremental reader of streamed structured verdicts (``selfroute._structured_stream``).

Property-style: for many JSON texts, every way of splitting them into pieces decodes to what
``json.loads`` reads from the whole text.
"""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from selfroute._structured_stream import JsonStringDecoder, StreamStatus, VerdictStream

#: Strings whose JSON forms exercise every escape, \\u escapes (BMP, surrogate pairs, lone
#: surrogates), raw non-ASCII text and quotes.
STRINGS = [
    "",
    "Paris",
    'He said "yes" \\ no / maybe',
    "line one\nline two\ttabbed\r\b\f",
    "café naïve — ‘quoted’ 東京 😀 𝄞",
    "\u0000\u001f control",
    "\ud83d\ude00",  # a pair
    "\ud800 lone high",
    "lone low \udc00",
    "\ud800\ud800\udc00",  # a lone high, then a pair
    "ends high \ud83d",
    "x" * 50 + "\\" + "y" * 10,
]


def _forms(value: str) -> list[str]:
    """JSON forms of ``value``: escaped ASCII, raw unicode, and \\u for every character."""
    forms = {json.dumps(value), json.dumps(value, ensure_ascii=False)}
    forms.add('"' + "".join(f"\\u{ord(c):04x}" for c in value) + '"')
    forms.add(json.dumps(value).replace("/", "\\/"))
    return sorted(f for f in forms if json.loads(f) == value)


CASES = [form for value in STRINGS for form in _forms(value)]


def _decode(pieces: list[str]) -> tuple[str, str]:
    """Decoded text and the raw text left after the closing quote."""
    decoder = JsonStringDecoder()
    out, rest = [], []
    for piece in pieces:
        if decoder.done:
            rest.append(piece)
            continue
        used, text = decoder.feed(piece)
        assert not decoder.error
        out.append(text)
        rest.append(piece[used:])
    assert decoder.done
    return "".join(out), "".join(rest)


@pytest.mark.parametrize("form", CASES)
def test_every_split_point_decodes_like_json_loads(form: str) -> None:
    body = form[1:] + ",tail"
    expected = json.loads(form)
    assert _decode([body]) == (expected, ",tail")
    for cut in range(len(body) + 1):
        assert _decode([body[:cut], body[cut:]]) == (expected, ",tail"), cut


@pytest.mark.parametrize("form", CASES)
def test_one_character_at_a_time(form: str) -> None:
    assert _decode(list(form[1:]))[0] == json.loads(form)


@settings(max_examples=300, deadline=None)
@given(st.text(), st.lists(st.integers(min_value=0, max_value=10_000), max_size=8), st.booleans())
def test_random_strings_and_splits(value: str, cuts: list[int], ascii_only: bool) -> None:
    body = json.dumps(value, ensure_ascii=ascii_only)[1:]
    points = sorted({c % (len(body) + 1) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True)]
    assert _decode(pieces) == (value, "")


@pytest.mark.parametrize("bad", ['\\x"', '\\u12g4"', '\\uZZZZ"'])
def test_invalid_escapes_are_errors(bad: str) -> None:
    decoder = JsonStringDecoder()
    decoder.feed(bad)
    assert decoder.error and not decoder.done


# -- the verdict object ----------------------------------------------------------------------
def _stream(pieces: list[str]) -> tuple[VerdictStream, list[str]]:
    stream = VerdictStream()
    return stream, [stream.feed(p) for p in pieces]


def _splits(text: str, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    out = [[text], list(text)]
    for _ in range(20):
        points = sorted(rng.sample(range(len(text) + 1), k=min(5, len(text))))
        out.append([text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)])
    return out


OBJECTS = [{"answerable": True, "answer": value} for value in STRINGS if value] + [
    {"answerable": True, "answer": "48 volts", "quotes": ["The charger needs 48 volts."]},
    {"answerable": "true", "answer": "Paris"},
    {"answerable": "yes", "answer": "Paris"},
]


@pytest.mark.parametrize("obj", OBJECTS, ids=range(len(OBJECTS)))
@pytest.mark.parametrize("indent", [None, 2])
def test_answer_text_streams_exactly(obj: dict, indent: int | None) -> None:
    text = json.dumps(obj, indent=indent, ensure_ascii=False)
    for pieces in _splits(text, seed=len(text)):
        stream, outs = _stream(pieces)
        assert stream.status is StreamStatus.ANSWERING
        assert "".join(outs) == obj["answer"]
        assert stream.answer_done


def test_answer_streams_before_the_object_completes() -> None:
    text = json.dumps({"answerable": True, "answer": "Paris is the capital of France."})
    cut = text.index("capital")
    stream = VerdictStream()
    assert stream.feed(text[:cut]) == "Paris is the "
    assert stream.status is StreamStatus.ANSWERING and not stream.answer_done


def test_answerable_is_known_before_the_answer() -> None:
    stream = VerdictStream()
    stream.feed('{"answerable": false')
    assert stream.status is StreamStatus.PENDING  # "false" could still go on ("falsehood")
    stream.feed(", ")
    assert stream.status is StreamStatus.DECLINED


def test_declined_object_hands_out_nothing() -> None:
    text = json.dumps({"answerable": False, "answer": "It is Paris, probably."})
    for pieces in _splits(text, seed=1):
        stream, outs = _stream(pieces)
        assert stream.status is StreamStatus.DECLINED
        assert "".join(outs) == ""


def test_fenced_object_streams() -> None:
    text = '```json\n{"answerable": true, "answer": "Paris"}\n```'
    for pieces in _splits(text, seed=2):
        _, outs = _stream(pieces)
        assert "".join(outs) == "Paris"


@pytest.mark.parametrize(
    "text",
    [
        '{"answer": "Paris", "answerable": true}',  # reordered keys
        'Sure! {"answerable": true, "answer": "Paris"}',  # prose first
        '{"answerable": null, "answer": "Paris"}',
        '{"answerable": 2, "answer": "Paris"}',
        '{"answerable": maybe, "answer": "Paris"}',
        '{"answerable": true "answer": "Paris"}',  # missing comma
        '{"answerable": true, "answer": 42}',
        '{"answerable": true, "answer": "Par\\qis"}',  # bad escape
        '{"answerable": true, "answerable": false, "answer": "Paris"}',  # repeated key
        '[true, "Paris"]',
        '{"answerable" true}',
    ],
)
def test_unsafe_objects_are_held(text: str) -> None:
    for pieces in _splits(text, seed=3):
        stream, outs = _stream(pieces)
        assert stream.status is StreamStatus.HELD, pieces
        shown = "".join(outs)
        assert "Paris"[: len(shown)] == shown and len(shown) < len("Par") + 1


def test_cut_off_object_stops_mid_answer() -> None:
    stream = VerdictStream()
    assert stream.feed('{"answerable": true, "answer": "Paris is') == "Paris is"
    assert stream.status is StreamStatus.ANSWERING and not stream.answer_done


def test_unknown_keys_between_are_skipped() -> None:
    text = '{"answerable": true, "why": {"a": [1, "}", {"b": null}]}, "n": -1.5e3, "answer": "Ok"}'
    for pieces in _splits(text, seed=4):
        stream, outs = _stream(pieces)
        assert "".join(outs) == "Ok" and stream.status is StreamStatus.ANSWERING


@pytest.mark.parametrize("grounded", [False, True])
def test_the_schema_declares_answerable_first(grounded: bool) -> None:
    """Providers generate keys in the order the schema gives (properties, or ``required``)."""
    import selfroute as sr

    schema = sr.verdict_schema(grounded=grounded)
    assert list(schema["properties"])[:2] == schema["required"][:2] == ["answerable", "answer"]
