"""Hand-written edge cases of ``parse_verdict`` (the measured accuracy is in test_verdict_fixture)."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute import VerdictKind as K

SENTINEL_DECLINES = [
    "unanswerable",
    "Unanswerable",
    "UNANSWERABLE",
    "UnAnswerable",
    "  unanswerable \n",
    "Unanswerable.",
    "unanswerable!",
    "Unanswerable...",
    '"Unanswerable"',
    "'unanswerable'",
    "“Unanswerable.”",
    "**Unanswerable**",
    '**"Unanswerable."**',
    "*unanswerable*",
    "`unanswerable`",
    "# Unanswerable",
    "> unanswerable",
    "Answer: unanswerable",
    "**Answer:** Unanswerable",
    "Final answer: unanswerable.",
    "A: Unanswerable",
    "Answer：unanswerable",
    "Unanswerable. The passages only cover her years at Grey Point.",
    "Unanswerable - the text only covers the storm.",
    "Unanswerable based on the provided passages.",
    "The answer is unanswerable.",
    'The answer is "unanswerable" because the passage does not give a date.',
    "The question is unanswerable based on the information provided.",
    "Based on the passages, the answer is:\n\nUnanswerable.\n\nThe passages do not give a date.",
    "Therefore, unanswerable.",
    "Her birthplace is mentioned, but not the year.\n\nUnanswerable.",
    "The keeper was Mara Holt.\n\nUnanswerable: the passages never say when she was born.",
    "Birth year : unanswerable",
    "<think>The passages are about the storm.</think>unanswerable",
    "<reasoning>Nothing on her birth.</reasoning>\n\n**Unanswerable**",
    "</think>Unanswerable",
]


@pytest.mark.parametrize("text", SENTINEL_DECLINES)
def test_sentinel_declines_in_any_dress(text: str) -> None:
    for strict in (False, True):
        v = sr.parse_verdict(text, strict=strict)
        assert v.kind is K.SENTINEL, (text, strict, v)
        assert v.declined and not v.answered
        assert v.matched == "unanswerable"


SENTINEL_MENTIONS = [
    # The word names a thing, or is negated, or labels an invented follow-up question.
    "Yes, the model handles unanswerable questions.",
    "SQuAD 2.0 adds unanswerable and adversarial questions to the dataset.",
    "Unanswerable questions are those written to look answerable.",
    "It is not unanswerable: she was born in 1901.",
    "The keeper was Mara Holt.\n\nUnanswerable: When was she born?",
    "<think>Is this unanswerable? No, the first passage says it.</think>Thirty-one years.",
]


@pytest.mark.parametrize("text", SENTINEL_MENTIONS)
def test_sentinel_mentioned_in_an_answer_is_not_a_decline(text: str) -> None:
    for strict in (False, True):
        v = sr.parse_verdict(text, strict=strict)
        assert v.kind is K.ANSWERED, (text, strict, v)


NATURAL_REFUSALS = [
    "The text does not mention when Mara Holt was born.",
    "The passages do not provide her date of birth.",
    "The provided context doesn't specify the year.",
    "The document does not contain this information.",
    "There is no information about her birth in the passages.",
    "There's no mention of her brother's name.",
    "No information is provided about her age.",
    "Not mentioned in the passage.",
    "Not enough information.",
    "I don't know.",
    "I cannot determine her age from the passages.",
    "I'm sorry, but I cannot answer that from the given text.",
    "I am sorry, I can't find that in the passages.",
    "Unfortunately, the passages do not say when she was born.",
    "Unfortunately, Felicity does not state his age at the start of the narration.",
    "I do not have enough context to determine where she was born.",
    "Based on the passages, it is not possible to determine her age.",
    "Based on the passage, her age is not explicitly mentioned.",
    "Her birth year is not specified in the provided passages.",
    "His occupation is not mentioned, so I do not know it.",
    "It's not specified how long the storm lasted.",
    "It is unclear from the text when she retired.",
    "It's unclear.",
    "The answer cannot be determined from the passages.",
    "This cannot be answered from the excerpts.",
    "The passages don't say. They focus on the storm of 1938.",
    "As an AI language model, I cannot read the book. Please provide the relevant passage.",
    "I'm sorry, but I cannot access the book you are referring to. Please share the text.",
    "Unfortunately I cannot provide long excerpts from copyrighted books. The passages do not "
    "mention her birth.",
    # A hedge that never commits, then declines again.
    "I do not have enough context to determine the year. However, it seems it was early in the "
    "century. I cannot conclusively state the year.",
    # Content first, but the conclusion declines.
    "There is no clear indication of her age in the passages. The story covers the storm. "
    "Therefore, I do not have enough information to determine her age.",
]


@pytest.mark.parametrize("text", NATURAL_REFUSALS)
def test_natural_refusals(text: str) -> None:
    v = sr.parse_verdict(text)
    assert v.kind is K.REFUSAL, (text, v)
    assert v.declined and v.matched
    # strict: only the sentinel counts, so a worded refusal is taken as the answer.
    assert sr.parse_verdict(text, strict=True).kind is K.ANSWERED


ANSWERS_WITH_REFUSAL_WORDS = [
    "Thirty-one years.",
    "Paris",
    "No.",
    "None of them.",
    "No, the paper does not use BERT.",
    "She did not mention her brother.",
    "D. The passage does not describe her as mousey, elven, or exotic.",
    "Thirty-one years. The passages do not mention what she did afterwards.",
    "He died in 1972; the cause of death is not mentioned.",
    "The model was not trained on English data.",
    "There is no evidence that she ever left the point.",
    "No one rescues him; he swims ashore.",
    "Her age is not mentioned, but she was born in 1901.",
    "The text does not specify who she married, but it says she lived with Tom Holt.",
    "It is not explicitly stated. However, it can be inferred that she was born in Dunmore.",
    "The passage does not explicitly state the title. It only says that she reads a large old Bible.",
    "I cannot provide long excerpts from copyrighted books. However, to answer your question, "
    "she kept the lamp for thirty-one years.",
    "As an AI, I cannot read physical books, but based on the passages, she was born in 1901.",
    "Unfortunately, he died in the great storm.",
    "I can confirm that she kept the lamp for thirty-one years.",
    "He died in 1972, although the cause of death is not mentioned.",
    "Dear Mara,\n\nI'm sorry I could not come to the point this year.",
    "Unanswerable questions make up half of SQuAD 2.0.",
    "B",
    "1901",
]


@pytest.mark.parametrize("text", ANSWERS_WITH_REFUSAL_WORDS)
def test_answers_that_merely_contain_refusal_words(text: str) -> None:
    v = sr.parse_verdict(text)
    assert v.kind is K.ANSWERED, (text, v)
    assert v.answered and not v.declined and v.matched is None


@pytest.mark.parametrize("text", [None, "", " ", "\n\t  \n", "<think></think>", "**", "``"])
def test_empty_output_is_declined(text: str | None) -> None:
    for strict in (False, True):
        v = sr.parse_verdict(text, strict=strict)
        assert v.kind is K.EMPTY, (text, v)
        assert v.declined and v.answer == ""


@pytest.mark.parametrize(
    "text",
    [
        "...",
        " .",
        ":",
        "?!",
        "— —",
        "<think>The user asks about the year. Looking at the passages, the first one",
        "<thinking>Let me check whether unanswerable applies",
    ],
)
def test_garbled_output_is_declined(text: str) -> None:
    for strict in (False, True):
        v = sr.parse_verdict(text, strict=strict)
        assert v.kind is K.GARBLED, (text, v)
        assert v.declined


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Answer: Paris", "Paris"),
        ("**Answer:** **31 years**", "31 years"),
        ('"Thirty-one years."', "Thirty-one years."),
        ("<think>first passage</think>\n\nThirty-one years.", "Thirty-one years."),
        ("Final Answer: `1947`", "1947"),
        ("  Dunmore  ", "Dunmore"),
    ],
)
def test_answer_is_cleaned(text: str, answer: str) -> None:
    v = sr.parse_verdict(text)
    assert v.answered
    assert v.answer == answer


def test_decline_keeps_the_cleaned_text() -> None:
    v = sr.parse_verdict("Answer: **Unanswerable.** The passages are about 1938.")
    assert v.answer == "Unanswerable. The passages are about 1938."
    r = sr.parse_verdict("The text does not mention her age.")
    assert r.answer == "The text does not mention her age."
    assert r.matched == "the text does not mention"


@pytest.mark.parametrize(
    ("sentinel", "text", "kind"),
    [
        ("NO_ANSWER", "NO_ANSWER", K.SENTINEL),
        ("NO_ANSWER", "no_answer.", K.SENTINEL),
        ("NO_ANSWER", "The answer is NO_ANSWER.", K.SENTINEL),
        ("NO_ANSWER", "unanswerable", K.REFUSAL),  # not the sentinel, but still a decline
        ("I don't know", "I don’t know.", K.SENTINEL),
        ("N/A", "n/a", K.SENTINEL),
        ("insufficient context", "**Insufficient context**", K.SENTINEL),
    ],
)
def test_custom_sentinel(sentinel: str, text: str, kind: K) -> None:
    assert sr.parse_verdict(text, sentinel=sentinel).kind is kind


def test_custom_sentinel_in_strict_mode_ignores_the_default_word() -> None:
    assert sr.parse_verdict("unanswerable", sentinel="NO_ANSWER", strict=True).answered
    assert sr.parse_verdict("NO_ANSWER", sentinel="NO_ANSWER", strict=True).declined


@pytest.mark.parametrize("sentinel", ["", "   ", None, 3])
def test_bad_sentinel_is_a_configuration_error(sentinel: object) -> None:
    with pytest.raises(sr.ConfigurationError, match="sentinel"):
        sr.parse_verdict("Paris", sentinel=sentinel)  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="sentinel"):
        sr.flow.could_start_decline("Paris", sentinel=sentinel)  # type: ignore[arg-type]


def test_non_string_output_is_stringified() -> None:
    v = sr.parse_verdict(1901)  # type: ignore[arg-type]
    assert v.answered and v.answer == "1901"


def test_very_long_output_is_classified() -> None:
    long_answer = "She kept the lamp for thirty-one years. " * 5000
    assert sr.parse_verdict(long_answer).answered
    long_refusal = "The passages do not mention her age. " + "They describe the storm. " * 5000
    assert sr.parse_verdict(long_refusal).kind is K.REFUSAL


def test_verdict_properties() -> None:
    answered = sr.Verdict(K.ANSWERED, "Paris")
    assert answered.answered and not answered.declined
    for kind in (K.SENTINEL, K.REFUSAL, K.EMPTY, K.GARBLED):
        v = sr.Verdict(kind, "")
        assert v.declined and not v.answered


@pytest.mark.parametrize(
    ("prefix", "held"),
    [
        ("", True),
        ("Un", True),
        ("unanswer", True),
        ("The text does", True),
        ("I do not have", True),
        ("Based on the passage", True),
        ("Based on the passage, there is", True),
        ("Based on the passage, Paris", False),
        ("Paris", False),
        ("Thirty-one", False),
        ("In 1901", False),
    ],
)
def test_could_start_decline(prefix: str, held: bool) -> None:
    assert sr.flow.could_start_decline(prefix) is held


def test_could_start_decline_strict_only_holds_the_sentinel() -> None:
    assert sr.flow.could_start_decline("Unans", strict=True)
    assert not sr.flow.could_start_decline("The text does", strict=True)
    assert sr.flow.could_start_decline("NO_A", sentinel="NO_ANSWER", strict=True)
    assert not sr.flow.could_start_decline("Unans", sentinel="NO_ANSWER", strict=True)
