"""Every row of the decline rule table, run on its own examples.

Each row of :data:`selfroute._verdict._rules.RULES` carries outputs that must decline through it
and outputs near it that must stay answers; the trigger and the streaming openings are derived
from the rows, and the phrase rules' word lists are selections of the grammar's.
"""

from __future__ import annotations

import re

import pytest

import selfroute as sr
import selfroute.flow as srflow
from selfroute._streaming import SentinelSniffer
from selfroute._verdict import _parse, _rules, _vocabulary
from selfroute._verdict._rules import RULES, Example, Rule, RuleKind

#: Kinds whose match makes a sentence a decline of the question (kind R).
DECLINING = {RuleKind.PHRASE, RuleKind.SHAPE, RuleKind.RAW_PHRASE, RuleKind.WEAK}
#: Kinds whose match makes an answer after a decline: their decline examples are near misses
#: (the row is not found, so the decline stands); their answers go through the row.
ANSWERING = {RuleKind.HEDGE, RuleKind.INFERS, RuleKind.EXACTNESS, RuleKind.IMPLICIT}


def _split(example: Example) -> tuple[str, str | None]:
    return example if isinstance(example, tuple) else (example, None)


def _sentences(text: str) -> list[str]:
    cleaned = _parse._clean(text)
    sentences = _parse._Sentences(cleaned, _parse._norm(cleaned))
    return [sentences[i] for i in range(len(sentences))]


def _matching(row: Rule, text: str) -> list[str]:
    """The sentences of ``text`` in which ``row``'s pattern is found (as the parser searches)."""
    pattern = _rules.compiled(row.pattern)
    # a clause after "but" is read on its own too ("The text does not say, but it seems ...")
    pieces = [p for s in _sentences(text) for p in {s, _parse._BUT.split(s, maxsplit=1)[-1]}]
    return [s for s in pieces if pattern.search(s) or pattern.search(_parse._lead_stripped(s))]


def _cases(field: str) -> list[object]:
    return [
        pytest.param(row, example, id=f"{row.name}-{i}")
        for row in RULES
        for i, example in enumerate(getattr(row, field))
    ]


def test_the_table_is_well_formed() -> None:
    assert len(OPENING_DECLINES) >= 15
    names = [row.name for row in RULES]
    assert len(names) == len(set(names))
    for row in RULES:
        assert re.fullmatch(r"[a-z]+(?:-[a-z]+)*", row.name), row.name
        assert isinstance(row.kind, RuleKind)
        assert row.declines and row.answers, f"{row.name} needs examples both ways"
        if row.kind in DECLINING:
            assert row.triggers, f"{row.name} declines: it needs trigger words"
    assert {row.kind for row in RULES} == set(RuleKind)


@pytest.mark.parametrize(("row", "example"), _cases("declines"))
def test_each_decline_example_declines_through_its_row(row: Rule, example: Example) -> None:
    text, question = _split(example)
    verdict = sr.parse_verdict(text, question=question)
    assert verdict.declined, (row.name, text, verdict)
    if row.kind in ANSWERING:
        return  # a hedge that does not commit: the decline before it stands
    hits = _matching(row, text)
    assert hits, f"{row.name}'s pattern finds nothing in {text!r}"
    if row.guards:
        assert any(_parse._contains(s, row.guards) for s in hits), (row.name, hits)
    if row.triggers:
        own = _rules._trigger(set(row.triggers))
        assert any(own.search(s) for s in hits), f"{row.name}: no trigger word in {hits}"
        assert any(_rules.TRIGGER.search(s) for s in hits)


@pytest.mark.parametrize(("row", "example"), _cases("answers"))
def test_each_answer_example_stays_an_answer(row: Rule, example: Example) -> None:
    text, question = _split(example)
    verdict = sr.parse_verdict(text, question=question)
    assert verdict.answered, (row.name, text, verdict)
    if row.kind in ANSWERING:
        assert _matching(row, text), f"{row.name}: the answer must commit through the hedge"


OPENING_DECLINES = [
    pytest.param(row, example, id=f"{row.name}-{i}")
    for row in RULES
    for i, example in enumerate(row.declines)
    if row.openings and _parse._norm(_split(example)[0]).startswith(row.openings)
]


@pytest.mark.parametrize(("row", "example"), OPENING_DECLINES)
def test_a_decline_that_opens_with_its_rows_opening_is_never_shown(
    row: Rule, example: Example
) -> None:
    text, question = _split(example)
    sniffer = SentinelSniffer(question=question)
    released = "".join(sniffer.feed(text[i : i + 3]) for i in range(0, len(text), 3))
    assert released == "", (row.name, released)


def test_every_rows_openings_are_held_while_written() -> None:
    assert set(_rules.DECLINE_OPENINGS) == {o for row in RULES for o in row.openings}
    for opening in _rules.DECLINE_OPENINGS:
        for end in range(1, len(opening) + 1):
            assert srflow.could_start_decline(opening[:end]), opening[:end]


def test_the_trigger_finds_every_rows_trigger_words() -> None:
    for row in RULES:
        for word in row.triggers:
            sample = word.rstrip("*+") + ("s" if word[-1] in "*+" else "")
            if "'" in word:
                sample = "does" + word
            assert _rules.TRIGGER.search(f"so {sample} here"), (row.name, word)
    assert _rules.TRIGGER.search("the capital of peru is lima") is None


def test_a_word_no_row_needs_is_not_a_trigger() -> None:
    words = {w for row in RULES for w in row.triggers}
    assert "little" not in words
    assert _rules.TRIGGER.search("there is little here") is None


def test_the_phrase_word_lists_are_selections_of_the_grammars() -> None:
    assert set(_vocabulary.PHRASE_SOURCE_NOUNS) <= set(_vocabulary.SOURCE_HEADS)
    assert set(_vocabulary.PHRASE_INFO_VERBS) <= set(_vocabulary.INFO_VERBS)
    participles = {forms[2] for forms in _vocabulary.INFO_VERBS.values()}
    shape_words = set(re.findall(r"[a-z]+", _vocabulary.SHAPE_PARTICIPLE))
    # "X is not shown" is read by the phrase rules only (the grammar's passive has no "shown")
    assert set(_vocabulary.PHRASE_PARTICIPLES) - (participles | shape_words) == {"shown"}
    assert set(_vocabulary.PHRASE_ADVERBS) <= set(_vocabulary.ADVERBS)


def test_rules_are_found_by_name_and_kind() -> None:
    assert _rules.rule("pointer").kind is RuleKind.POINTER
    assert all(r.kind is RuleKind.SHAPE for r in _rules.rules(RuleKind.SHAPE))
    with pytest.raises(KeyError):
        _rules.rule("no-such-rule")
