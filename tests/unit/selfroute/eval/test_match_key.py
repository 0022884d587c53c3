"""The oracle's answer-matching key: the fast byte-level path gives the reference's text."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from selfroute.eval._readers import match_key

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def reference(text: str) -> str:
    """The definition: NFKC of the lower case, punctuation and symbols blanked character by
    character, articles dropped at word boundaries, white space collapsed."""
    folded = unicodedata.normalize("NFKC", text.lower())
    table = {ord(ch): " " for ch in set(folded) if unicodedata.category(ch)[0] in "PS"}
    return " ".join(_ARTICLES.sub(" ", folded.translate(table)).split())


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "The Norman conquest of England",
        "a a a the an the, a",
        "the_end a-b the—dash (the) «an» “A” the.",
        "Æthelred the\u00adUnready",  # a soft hyphen (Cf): not a word character, not space
        "the\x01start a\x7fb",  # ASCII controls: neither words nor white space
        "a\u0335 stroke the\u0301",  # combining marks that do not compose
        "ΣΟΦΟΣ the İstanbul ﬁle",  # final sigma, a lower case that grows, a ligature
        "\ud800 the lone surrogate a",
        "€5 £3 the ¥ 100% a#b",
        "tab\tthe\nline\x1cthe\x1fend a\u2028the\u3000an",
        "".join(chr(c) for c in range(0x2000, 0x2070)) + " the a",
    ],
)
def test_tricky_texts_match_the_reference(text: str) -> None:
    assert match_key(text) == reference(text)


def test_random_texts_match_the_reference() -> None:
    rng = random.Random(7)
    words = list("abcdefghijklmnopqrstuvwxyz") + [" ", " the ", " an ", " a ", "A", "THE"] * 4
    alphabet = words + [chr(c) for c in (*range(0x250), *range(0x2000, 0x2070), 0x301, 0xD800)]
    many_marks = "".join(chr(c) for c in range(0x2010, 0x2040))  # more than the replace limit
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        assert match_key(text) == reference(text), repr(text)
        mixed = text + many_marks + " the é a"
        assert match_key(mixed) == reference(mixed), repr(mixed)


def test_a_text_s_key_is_its_paragraphs_keys_joined() -> None:
    # the oracle normalises a RAG context passage by passage (split at blank lines)
    from selfroute.eval import OracleReader

    oracle = OracleReader()
    rng = random.Random(11)
    pieces = ["The", "a", "ΣΟΦΟΣ", "\u0301x", "İ", "—", "the.", " ", "\t", "", "\n", "ﬁn", "é"]
    for _ in range(2000):
        parts = [
            "".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
            for _ in range(rng.randint(1, 5))
        ]
        text = rng.choice(["\n\n", "\n\n\n", " \n\n"]).join(parts)
        assert oracle._paragraph_keys(text) == reference(text), repr(text)
        assert oracle._paragraph_keys(text) == reference(text)  # from what is remembered
