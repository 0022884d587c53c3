"""Grounded mode: parsing the model's quotes and finding them in the passages it was given."""

from __future__ import annotations

import os
import random
import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import selfroute as sr
from selfroute._errors import ConfigurationError
from selfroute._grounding import (
    QUOTE_LABEL,
    Citation,
    Grounding,
    GroundingSource,
    check_grounding,
    locate_quote,
    split_quotes,
)

SCALE = int(os.environ.get("SELFROUTE_HYPOTHESIS_SCALE", "1"))

PASSAGES = [
    "Grey Point Light stands on the northern tip of Harrow Island. It was built in 1871 by the "
    "Northern Lighthouse Board and first lit on 1 October 1872.",
    "Mara Holt kept the Grey Point light for forty-one years. She was appointed keeper in 1902, "
    "after her father's death, and she never missed a night.",
    "During the storm of 1923 the lamp failed twice. Holt climbed the tower with a paraffin "
    "lantern and kept it burning until dawn \u2014 a feat the Board rewarded with a silver medal.",
]


def norm(text: str) -> str:
    """An independent reference normaliser: NFKC, casefold, words joined by single spaces."""
    return " ".join(re.findall(r"[^\W_]+", unicodedata.normalize("NFKC", text).casefold()))


# -- the instruction ----------------------------------------------------------------------------
def test_prompt_instruction_matches_the_parser() -> None:
    # The grounded prompts ask for lines starting with the label the parser reads.
    assert QUOTE_LABEL in sr.GROUNDING_PREFIX
    rendered = sr.Prompts().long_context_prompt("q", "c", grounded=True)
    assert rendered.startswith(sr.GROUNDING_PREFIX)
    assert split_quotes(f'Paris.\n{QUOTE_LABEL} "The capital is Paris."') == (
        "Paris.",
        ["The capital is Paris."],
    )


# -- parsing ------------------------------------------------------------------------------------
PARSE_CASES = [
    pytest.param(
        'Mara Holt.\nQuote: "Mara Holt kept the Grey Point light for forty-one years."',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="quote-double-quoted",
    ),
    pytest.param(
        "She was appointed in 1902.\n\nQuote: She was appointed keeper in 1902, after her "
        "father's death.",
        "She was appointed in 1902.",
        ["She was appointed keeper in 1902, after her father's death."],
        id="quote-bare",
    ),
    pytest.param(
        "Answer: Mara Holt\nQuote: Mara Holt kept the Grey Point light for forty-one years.",
        "Mara Holt",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="answer-label",
    ),
    pytest.param(
        "**Answer:** In 1871.\n\n**Quote:** \u201cIt was built in 1871 by the Northern "
        "Lighthouse Board\u201d",
        "In 1871.",
        ["It was built in 1871 by the Northern Lighthouse Board"],
        id="markdown-bold-curly",
    ),
    pytest.param(
        "**Answer**: In 1871.\n**Quote**: \u2018It was built in 1871.\u2019",
        "In 1871.",
        ["It was built in 1871."],
        id="bold-label-colon-outside-single-curly",
    ),
    pytest.param(
        "Harrow Island.\nQuote: \u00abGrey Point Light stands on the northern tip of Harrow "
        "Island.\u00bb",
        "Harrow Island.",
        ["Grey Point Light stands on the northern tip of Harrow Island."],
        id="guillemets",
    ),
    pytest.param(
        "<think>The second passage names the keeper. Quote: not this one.</think>\n"
        "Mara Holt kept the light.\n"
        'Quote: "Mara Holt kept the Grey Point light for forty-one years."',
        "Mara Holt kept the light.",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="reasoning-block",
    ),
    pytest.param(
        'Mara Holt.\r\n\r\nQuote: "Mara Holt kept the Grey Point light."\r\n'
        'Quote: "She was appointed keeper in 1902."\r\n',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light.", "She was appointed keeper in 1902."],
        id="windows-line-endings",
    ),
    pytest.param(
        "The lamp failed twice, and Holt kept a lantern burning until dawn.\n\n"
        "Quotes:\n"
        '- "During the storm of 1923 the lamp failed twice."\n'
        '- "Holt climbed the tower with a paraffin lantern and kept it burning until dawn"\n\n'
        "These sentences show that she kept the light going.",
        "The lamp failed twice, and Holt kept a lantern burning until dawn.",
        [
            "During the storm of 1923 the lamp failed twice.",
            "Holt climbed the tower with a paraffin lantern and kept it burning until dawn",
        ],
        id="header-dash-bullets-then-explanation",
    ),
    pytest.param(
        "In 1923.\n\nQuotes:\n\n* During the storm of 1923 the lamp failed twice.\n\n"
        "* a feat the Board rewarded with a silver medal",
        "In 1923.",
        [
            "During the storm of 1923 the lamp failed twice.",
            "a feat the Board rewarded with a silver medal",
        ],
        id="header-star-bullets-blank-lines",
    ),
    pytest.param(
        'In 1872.\nQuotes:\n1. "It was built in 1871 by the Northern Lighthouse Board"\n'
        '2. "first lit on 1 October 1872."',
        "In 1872.",
        ["It was built in 1871 by the Northern Lighthouse Board", "first lit on 1 October 1872."],
        id="header-numbered",
    ),
    pytest.param(
        "Forty-one years.\n\nQuotes:\n> Mara Holt kept the Grey Point light\n> for forty-one "
        'years.\n\n> "She never missed a night."',
        "Forty-one years.",
        ["Mara Holt kept the Grey Point light for forty-one years.", "She never missed a night."],
        id="header-blockquotes",
    ),
    pytest.param(
        "Forty-one years.\n\n> Quote: Mara Holt kept the Grey Point light for forty-one years.",
        "Forty-one years.",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="label-inside-blockquote",
    ),
    pytest.param(
        'Mara Holt.\nQuotes: "Mara Holt kept the Grey Point light." "She was appointed keeper '
        'in 1902."',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light.", "She was appointed keeper in 1902."],
        id="several-on-one-line",
    ),
    pytest.param(
        "Mara Holt.\nQuotes: \u201cMara Holt kept the Grey Point light.\u201d (Passage 2), "
        "\u201cShe never missed a night.\u201d (Passage 2)",
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light.", "She never missed a night."],
        id="several-curly-with-references",
    ),
    pytest.param(
        'Mara Holt.\nQuote 1: "Mara Holt kept the Grey Point light."\n'
        'Quote 2: "She never missed a night." [2]',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light.", "She never missed a night."],
        id="numbered-labels",
    ),
    pytest.param(
        "Mara Holt.\n\n### Supporting quotes\n\n- \u201cMara Holt kept the Grey Point light.\u201d",
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light."],
        id="heading-without-colon",
    ),
    pytest.param(
        "Quotes:\nMara Holt kept the Grey Point light for forty-one years.\n"
        "She never missed a night.\n\nThe keeper was Mara Holt.",
        "",
        ["Mara Holt kept the Grey Point light for forty-one years.", "She never missed a night."],
        id="header-plain-lines-no-answer",
    ),
    pytest.param(
        'Quote: "Mara Holt kept the Grey Point light."\nAnswer: Mara Holt.',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light."],
        id="quote-first-then-answer",
    ),
    pytest.param(
        'Mara Holt. Quote: "Mara Holt kept the Grey Point light."',
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light."],
        id="label-mid-line",
    ),
    pytest.param(
        'Mara Holt.\nQuote: "Mara Holt kept the Grey Point light\nfor forty-one years."\n'
        "That answers it.",
        "Mara Holt.",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="quote-wrapped-over-lines",
    ),
    pytest.param(
        'Holt.\nQuote: The Board wrote "for devotion" on the medal.',
        "Holt.",
        ['The Board wrote "for devotion" on the medal.'],
        id="inner-quotation-kept",
    ),
    pytest.param(
        "Answer: Mara Holt\n\nSupporting quote from the passage:\n"
        '"Mara Holt kept the Grey Point light for forty-one years."',
        "Mara Holt",
        ["Mara Holt kept the Grey Point light for forty-one years."],
        id="supporting-quote-from-the-passage",
    ),
    pytest.param(
        "Unanswerable\n\nQuote: None",
        "Unanswerable",
        [],
        id="decline-with-placeholder-quote",
    ),
    pytest.param(
        "Unanswerable.\nQuotes: N/A",
        "Unanswerable.",
        [],
        id="decline-with-na",
    ),
    pytest.param(
        "- Mara Holt\n- appointed in 1902\n\nQuote: She was appointed keeper in 1902",
        "- Mara Holt\n- appointed in 1902",
        ["She was appointed keeper in 1902"],
        id="bulleted-answer",
    ),
]


@pytest.mark.parametrize(("output", "answer", "quotes"), PARSE_CASES)
def test_split_quotes(output: str, answer: str, quotes: list[str]) -> None:
    assert split_quotes(output) == (answer, quotes)


@pytest.mark.parametrize(
    ("output", "answer"),
    [
        ("Mara Holt", "Mara Holt"),
        ("  Answer: Mara Holt kept the light.  \n", "Mara Holt kept the light."),
        ("unanswerable", "unanswerable"),
        ("<think>No quote here.</think>\n\nUnanswerable", "Unanswerable"),
        ("She quoted the Bible often.", "She quoted the Bible often."),
        ("Line one.\r\nLine two.", "Line one.\nLine two."),
        ("", ""),
    ],
)
def test_split_quotes_without_quotes(output: str, answer: str) -> None:
    assert split_quotes(output) == (answer, [])


# -- locating -----------------------------------------------------------------------------------
def test_locate_offsets_slice_the_original_text() -> None:
    text = PASSAGES[1]
    quote = "She was appointed keeper in 1902, after her father's death"
    span = locate_quote(quote, text)
    assert span is not None
    assert text[span[0] : span[1]] == quote


@pytest.mark.parametrize(
    "quote",
    [
        "mara holt kept the grey point light",
        "MARA HOLT KEPT THE GREY POINT LIGHT",
        "Mara  Holt\nkept the\tGrey-Point light",
        "Mara Holt, kept the Grey Point light!",
        '"Mara Holt kept the Grey Point light."',
        "\u201cMara Holt kept the Grey Point light\u201d",
    ],
)
def test_locate_tolerates_case_punctuation_and_space(quote: str) -> None:
    text = "Records show:\n\n  Mara   Holt kept the GREY POINT light\r\nfor forty-one years."
    span = locate_quote(quote, text)
    assert span is not None
    assert norm(text[span[0] : span[1]]) == norm(quote)
    assert text[span[0] : span[1]].startswith("Mara")
    assert text[span[0] : span[1]].endswith("light")


def test_curly_apostrophes_and_dashes_are_unified() -> None:
    text = "\u201cDon\u2019t let it go out,\u201d her father said \u2014 and she didn\u2019t."
    span = locate_quote("Don't let it go out, her father said - and she didn't", text)
    assert span is not None
    assert text[span[0] : span[1]] == text[1:-1]


def test_unicode_forms_are_unified() -> None:
    composed = "The caf\u00e9 at the pier served the keepers."
    decomposed = unicodedata.normalize("NFD", composed)
    span = locate_quote("caf\u00e9 at the pier", decomposed)
    assert span is not None
    assert norm(decomposed[span[0] : span[1]]) == norm("caf\u00e9 at the pier")
    span = locate_quote(decomposed[4:21], composed)
    assert span is not None and composed[span[0] : span[1]] == "caf\u00e9 at the pier"
    # Full-width characters and ligatures (NFKC), case folding of sharp s.
    text = "\uff2d\uff41\uff52\uff41 Holt \ufb01xed the lamp in the Stra\u00dfe"
    span = locate_quote("mara holt fixed the lamp in the STRASSE", text)
    assert span == (0, len(text))


def test_scripts_without_spaces_match_per_character() -> None:
    text = "\u5979\u662f\u706f\u5854\u5b88\u62a4\u8005\u739b\u62c9\u3002\u5979\u4ece\u672a\u7f3a\u5e2d\u3002"
    span = locate_quote("\u706f\u5854\u5b88\u62a4\u8005", text)
    assert span == (2, 7)


def test_partial_words_do_not_match() -> None:
    text = "The bathe keepers walked by."
    assert locate_quote("the keeper walked", text) is None
    assert locate_quote("bathe keepers walked", text) is not None


@pytest.mark.parametrize("ellipsis", ["...", "\u2026", "[...]", "[\u2026]", "(...)", ". . ."])
def test_ellipsis_fragments_in_order(ellipsis: str) -> None:
    text = PASSAGES[2]
    quote = f"Holt climbed the tower {ellipsis} kept it burning until dawn"
    span = locate_quote(quote, text)
    assert span is not None
    found = text[span[0] : span[1]]
    assert found.startswith("Holt climbed the tower")
    assert found.endswith("until dawn")


def test_ellipsis_fragments_out_of_order_not_found() -> None:
    text = PASSAGES[2]
    assert locate_quote("kept it burning until dawn ... Holt climbed the tower", text) is None


def test_ellipsis_span_is_tight() -> None:
    text = "the lamp was lit. The lamp failed at midnight, then the lamp failed again at dawn."
    span = locate_quote("the lamp ... at dawn", text)
    assert span is not None
    assert text[span[0] : span[1]] == "the lamp failed again at dawn"


def test_leading_and_trailing_ellipsis() -> None:
    text = PASSAGES[1]
    span = locate_quote("... she never missed a night...", text)
    assert span is not None
    assert text[span[0] : span[1]] == "she never missed a night"


def test_fabricated_quote_not_found() -> None:
    assert locate_quote("Mara Holt was born on Harrow Island in 1880.", PASSAGES[1]) is None
    # Every word is in the passage, but not in this order.
    assert locate_quote("Holt Mara kept the light", PASSAGES[1]) is None


def test_too_short_quotes_are_not_verifiable() -> None:
    assert locate_quote("Mara Holt", PASSAGES[1]) is None
    assert locate_quote("Mara Holt", PASSAGES[1], min_words=2) is not None
    assert locate_quote("", PASSAGES[1]) is None
    with pytest.raises(ConfigurationError):
        locate_quote("Mara Holt kept", PASSAGES[1], min_words=0)


# -- checking -----------------------------------------------------------------------------------
def test_check_grounding_end_to_end() -> None:
    output = (
        "<think>Passage 2 says who kept the light.</think>"
        "Answer: Mara Holt, from 1902.\n\n"
        "Quotes:\n"
        '- "Mara Holt kept the Grey Point light for forty-one years."\n'
        '- "She was appointed keeper in 1902, after her father\u2019s death"\n'
    )
    answer, quotes = split_quotes(output)
    sources = [GroundingSource(text, doc_id=f"doc-{i}") for i, text in enumerate(PASSAGES)]
    grounding = check_grounding(answer, quotes, sources)
    assert grounding.answer == "Mara Holt, from 1902."
    assert grounding.grounded
    assert grounding.quotes == tuple(quotes)
    first, second = grounding.citations
    assert (first.source_index, first.doc_id, first.reason) == (1, "doc-1", None)
    assert PASSAGES[1][first.start : first.end] == (
        "Mara Holt kept the Grey Point light for forty-one years"
    )
    assert second.found and second.source_index == 1
    assert PASSAGES[1][second.start : second.end] == (
        "She was appointed keeper in 1902, after her father's death"
    )


def test_check_grounding_reasons() -> None:
    grounding = check_grounding(
        "Mara Holt.",
        [
            '"Mara Holt kept the Grey Point light"',
            "Mara Holt was born in 1880 on the mainland.",
            "Mara Holt",
            '""',
            "...",
        ],
        PASSAGES,
    )
    found, fabricated, short, empty, dots = grounding.citations
    assert found.found and found.quote == "Mara Holt kept the Grey Point light"
    assert found.doc_id is None and found.source_index == 1
    assert fabricated == Citation(
        "Mara Holt was born in 1880 on the mainland.",
        False,
        None,
        None,
        None,
        None,
        "not_found",
    )
    assert (short.found, short.reason) == (False, "too_short")
    assert (empty.found, empty.reason, empty.quote) == (False, "empty", "")
    assert (dots.found, dots.reason) == (False, "empty")
    assert not grounding.grounded


def test_first_matching_source_wins() -> None:
    sources = [
        GroundingSource("Nothing relevant here at all.", doc_id="a"),
        GroundingSource("Intro. The lamp failed twice during the storm.", doc_id="b"),
        GroundingSource("The lamp failed twice during the storm.", doc_id="c"),
    ]
    citation = check_grounding("x", ["the lamp failed twice"], sources).citations[0]
    assert (citation.source_index, citation.doc_id) == (1, "b")
    assert sources[1].text[citation.start : citation.end] == "The lamp failed twice"


def test_quote_across_two_sources_not_found() -> None:
    sources = ["Holt climbed the tower", "with a paraffin lantern and kept it burning."]
    grounding = check_grounding("x", ["climbed the tower with a paraffin lantern"], sources)
    assert grounding.citations[0].reason == "not_found"
    # ... even with an ellipsis: every fragment must be in the same source.
    grounding = check_grounding("x", ["climbed the tower ... with a paraffin lantern"], sources)
    assert grounding.citations[0].reason == "not_found"
    # Each half on its own is found in its source.
    grounding = check_grounding("x", ["climbed the tower", "with a paraffin lantern"], sources)
    assert [c.source_index for c in grounding.citations] == [0, 1]


def test_grounded_needs_at_least_one_citation() -> None:
    assert not Grounding("Mara Holt.", ()).grounded
    assert not check_grounding("Mara Holt.", [], PASSAGES).grounded
    with pytest.raises(ConfigurationError):
        check_grounding("x", ["a b c"], PASSAGES, min_words=-1)


def test_to_dict() -> None:
    grounding = check_grounding("  Mara Holt.  ", ["she never missed a night"], PASSAGES)
    data = grounding.to_dict()
    start = PASSAGES[1].index("she never")
    assert data == {
        "answer": "Mara Holt.",
        "grounded": True,
        "citations": [
            {
                "quote": "she never missed a night",
                "found": True,
                "source_index": 1,
                "doc_id": None,
                "start": start,
                "end": start + len("she never missed a night"),
                "reason": None,
            }
        ],
    }


def test_large_source() -> None:
    rng = random.Random(7)
    vocab = [
        "the",
        "keeper",
        "light",
        "island",
        "storm",
        "harbour",
        "lamp",
        "night",
        "tide",
        "rock",
        "ship",
        "sailor",
        "wind",
        "rain",
        "north",
        "cliff",
        "bell",
        "fog",
        "tower",
        "oil",
        "wick",
        "glass",
    ]
    planted = [
        "Mara Holt lit the lamp at dusk on the ninth of March.",
        "A schooner named Petrel ran aground below the eastern cliff.",
        "The Board's inspector arrived by steamer every second August.",
        "Paraffin replaced whale oil at Grey Point in 1889.",
        "\u201cKeep it burning,\u201d her father wrote in his last entry.",
    ]
    sentences: list[str] = []
    size = 0
    while size < 510_000:
        sentence = " ".join(rng.choice(vocab) for _ in range(rng.randint(6, 20)))
        sentences.append(sentence.capitalize() + ". ")
        size += len(sentences[-1])
    slots = sorted(rng.sample(range(len(sentences)), len(planted)))
    for slot, sentence in zip(slots, planted, strict=True):
        sentences[slot] = sentence + " "
    text = "".join(sentences)
    assert len(text) >= 500_000
    quotes = [
        "MARA HOLT LIT THE LAMP AT DUSK",
        "a schooner named  Petrel ran aground below the eastern cliff",
        "The Board\u2019s inspector arrived by steamer ... every second August",
        '"Paraffin replaced whale-oil at Grey Point in 1889"',
        "Keep it burning, her father wrote in his last entry",
    ]
    grounding = check_grounding("x", quotes, [GroundingSource(text, doc_id="log")])
    assert grounding.grounded
    for citation, sentence in zip(grounding.citations, planted, strict=True):
        assert citation.doc_id == "log"
        assert citation.start is not None and citation.end is not None
        at = text.index(sentence)
        assert at <= citation.start < citation.end <= at + len(sentence)
        assert norm(sentence).startswith(norm(text[citation.start : citation.end]))
    assert check_grounding("x", ["the lamp at dusk on the tenth"], [text]).citations[0].reason == (
        "not_found"
    )


# -- property -----------------------------------------------------------------------------------
WORD_ALPHABET = (
    "abcdefghijklmnopqrstuvwxyz\u00e9\u00f8\u00df\u00e7\u00f1\u03c3\u0436\u03a3\u04160123456789"
)
SEPARATORS = [
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "\u00a0",
    ", ",
    ". ",
    "; ",
    ": ",
    "! ",
    "? ",
    " - ",
    " \u2014 ",
    "'",
    "\u2019",
    '"',
    " \u201c",
    "\u201d ",
    " (",
    ") ",
    "/",
    "_",
]
words = st.text(alphabet=WORD_ALPHABET, min_size=1, max_size=8)
separators = st.sampled_from(SEPARATORS)


@st.composite
def text_and_quote(draw: st.DrawFn) -> tuple[str, str, list[str]]:
    text_words = draw(st.lists(words, min_size=3, max_size=60))
    gaps = draw(st.lists(separators, min_size=len(text_words) + 1, max_size=len(text_words) + 1))
    text = gaps[0] + "".join(w + g for w, g in zip(text_words, gaps[1:], strict=True))
    i = draw(st.integers(0, len(text_words) - 3))
    j = draw(st.integers(i + 3, len(text_words)))
    window = text_words[i:j]
    recase = [draw(st.sampled_from([str.lower, str.upper, str.title, str])) for _ in window]
    quote_gaps = draw(st.lists(separators, min_size=len(window) + 1, max_size=len(window) + 1))
    quote = quote_gaps[0] + "".join(
        f(w) + g for f, w, g in zip(recase, window, quote_gaps[1:], strict=True)
    )
    if draw(st.booleans()):
        quote = unicodedata.normalize("NFD", quote)
    return text, quote, window


@settings(max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text_and_quote())
def test_any_window_of_words_is_located(case: tuple[str, str, list[str]]) -> None:
    text, quote, window = case
    span = locate_quote(quote, text)
    assert span is not None
    start, end = span
    assert 0 <= start < end <= len(text)
    assert norm(text[start:end]) == norm(" ".join(window))
    # The same through check_grounding, with the text after an unrelated source.
    citation = check_grounding("x", [quote], ["zzz qqq", text]).citations[0]
    assert (citation.found, citation.source_index, citation.start, citation.end) == (
        True,
        1,
        start,
        end,
    )
