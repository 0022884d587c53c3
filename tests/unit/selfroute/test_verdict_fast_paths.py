"""The verdict parser's fast paths give the verdicts of the slow ones (issue #15, speed).

``parse_verdict`` skips work where the answer is already known: a whole-output guard for outputs
in which no sentence can decline, lazily classified sentences, substring guards before patterns,
and word lists compiled as tries. Each is checked here against the straightforward form on every
vendored real output (and recombinations of their sentences).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selfroute as sr
from selfroute._verdict import _grammar as _decline
from selfroute._verdict import _parse as _verdict
from selfroute._verdict import _rules, _vocabulary

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "refusals"


def _outputs() -> list[tuple[str, str | None]]:
    rows = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if "prediction" in row:  # a second labeller's file holds labels only
                    rows.append((str(row["prediction"]), row.get("question")))
    return rows


OUTPUTS = _outputs()
SENTENCES = sorted(
    {
        _verdict._norm(s)
        for text, _ in OUTPUTS
        for s in _verdict._sentences(_verdict._clean(_verdict.strip_reasoning(text)[0]))
    }
)


def _recombined(n: int) -> list[str]:
    rng = random.Random(15)
    raw = [s for text, _ in OUTPUTS for s in _verdict._sentences(_verdict._clean(text))]
    return [
        rng.choice([" ", "\n", "\n\n"]).join(rng.choice(raw) for _ in range(rng.randint(1, 5)))
        for _ in range(n)
    ]


def test_there_are_outputs_to_check() -> None:
    assert len(OUTPUTS) > 1000 and len(SENTENCES) > 3000


def test_is_refusal_is_kind_r() -> None:
    for sentence in SENTENCES:
        assert _verdict._is_refusal(sentence) == (_verdict._kind(sentence) == "R"), sentence


def test_kind_with_a_known_trigger_is_kind() -> None:
    for sentence in SENTENCES:
        triggered = _verdict._TRIGGER.search(sentence) is not None
        assert _verdict._kind(sentence, triggered) == _verdict._kind(sentence), sentence


def test_guarded_strong_patterns_match_where_the_unguarded_do() -> None:
    for sentence in SENTENCES:
        core = _verdict._lead_stripped(sentence)
        for pattern, guards in _verdict._STRONG:
            if pattern.search(core):
                assert not guards or _verdict._contains(core, guards), (pattern.pattern, core)


def test_guarded_shapes_match_where_the_unguarded_do() -> None:
    for sentence in SENTENCES:
        core = _verdict._lead_stripped(sentence)
        for name, pattern, guards in _decline.SHAPES:
            if _rules.compiled(pattern).search(core):
                assert _verdict._contains(core, guards), (name, core)


@pytest.mark.parametrize("question", [None, "What is it?", "When did he die?", "Do they use it?"])
def test_the_whole_output_guard_changes_no_verdict(
    question: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [t for t, _ in OUTPUTS] + _recombined(300)
    fast = [sr.parse_verdict(t, question=question) for t in texts]
    assert any(
        _verdict._cannot_decline(_verdict._norm(c), len(c))
        for c in (_verdict._clean(t) for t in texts)
    )  # the guard is taken on some of them
    monkeypatch.setattr(_verdict, "_cannot_decline", lambda flat, length: False)
    slow = [sr.parse_verdict(t, question=question) for t in texts]
    assert fast == slow


def _plain_alternation(words: list[str]) -> str:
    items = sorted(set(words), key=len, reverse=True)
    return "(?:" + "|".join(re.escape(w).replace(r"\ ", " ") for w in items) + ")"


WORD_LISTS = {
    "heads": list(_vocabulary.SOURCE_HEADS),
    "adverbs": list(_vocabulary.ADVERBS),
    "verbs": [*_vocabulary.INFO_VERBS, *(f for v in _vocabulary.INFO_VERBS.values() for f in v)],
    "absence": list(_vocabulary.ABSENCE_NOUNS),
}


@pytest.mark.parametrize("name", sorted(WORD_LISTS))
def test_a_trie_alternation_finds_what_the_word_list_finds(name: str) -> None:
    words = WORD_LISTS[name]
    trie = re.compile(rf"\b{_vocabulary.alt(words)}\b")
    plain = re.compile(rf"\b{_plain_alternation(words)}\b")
    for word in words:
        assert trie.fullmatch(word)
    for sentence in SENTENCES:
        assert [m.span() for m in trie.finditer(sentence)] == [
            m.span() for m in plain.finditer(sentence)
        ]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(WORD_LISTS["verbs"] + ["x", "men", "mentioning"]), max_size=6))
def test_a_trie_alternation_prefers_the_longest_word(parts: list[str]) -> None:
    text = " ".join(parts)
    words = WORD_LISTS["verbs"]
    trie = re.compile(_vocabulary.alt(words))
    plain = re.compile(_plain_alternation(words))
    assert [m.span() for m in trie.finditer(text)] == [m.span() for m in plain.finditer(text)]


#: The decline words as first written: one word after another.
PLAIN_TRIGGER = re.compile(
    r"n't|\b(?:not|no|never|none|nothing|nowhere|neither|nor|cannot|unable|without|lack\w*|"
    r"silent|insufficient|unclear|uncertain|impossible|difficult|hard|unknown|n/?a|unanswerable|"
    r"fail\w*|beyond|outside|irrelevant|unrelated|inadequate|only|sorry|apologi\w+|afraid|"
    r"unfortunately|need|require|omit\w*|leaves?|idea|absent|rather|instead|unavailable|"
    r"unspecified|unmentioned|unstated|undisclosed|unreported|undocumented|unaddressed|"
    r"undetermined|missing|needed|required|quiet)\b"
)


def test_the_grouped_decline_words_are_the_word_list() -> None:
    for sentence in SENTENCES:
        assert (PLAIN_TRIGGER.search(sentence) is None) == (
            _verdict._TRIGGER.search(sentence) is None
        ), sentence
    for word in re.findall(r"[a-z/']+", PLAIN_TRIGGER.pattern.replace(r"\w", "")):
        if word not in ("b", "n/", "a"):
            assert (PLAIN_TRIGGER.search(word) is None) == (_verdict._TRIGGER.search(word) is None)


def test_a_stream_is_held_on_every_prefix_of_every_decline_opening_and_lead_in() -> None:
    """``could_start_decline`` finds the openings by one prefix test and a sorted search, not
    a scan: every prefix of each opening (and of each lead-in) still holds, and so does each
    whole opening followed by more words."""
    texts = (*_rules.DECLINE_OPENINGS, *_verdict._STREAM_LEAD_INS)
    held = [t[:i] for t in texts for i in range(1, len(t) + 1)]
    held += [t.rstrip() + " xyz" for t in _rules.DECLINE_OPENINGS]
    missed = [t for t in held if t.strip() and not _verdict.could_start_decline(t)]
    assert len(held) > 1500
    assert missed == []
