"""The built-in offline reader answers with a sentence of its prompt or declines."""

from __future__ import annotations

import selfroute as sr
from selfroute import ExtractiveReader, Prompts, check_grounding
from selfroute._grounding import split_quotes

TEXT = (
    "Mara Holt kept the lamp at Grey Point for thirty-one years. "
    "The keeper's cottage was rebuilt in 1921 after a storm. "
    "Her brother Tom sailed the supply boat from Dunmore every Friday. "
)
PROMPTS = Prompts()


def test_answers_with_the_sentence_that_covers_the_question() -> None:
    prompt = PROMPTS.rag_prompt("When was the keeper's cottage rebuilt?", [TEXT])
    assert ExtractiveReader()(prompt) == "The keeper's cottage was rebuilt in 1921 after a storm."


def test_declines_with_the_sentinel_when_no_sentence_covers_the_question() -> None:
    prompt = PROMPTS.rag_prompt("What colour is the rover's paint?", [TEXT])
    assert ExtractiveReader()(prompt) == "unanswerable"
    custom = Prompts(sentinel="NO_ANSWER")
    assert ExtractiveReader()(custom.rag_prompt("What colour is the rover?", [TEXT])) == "NO_ANSWER"
    assert sr.parse_verdict(ExtractiveReader()(prompt)).kind is sr.VerdictKind.SENTINEL


def test_the_threshold_decides_between_answering_and_declining() -> None:
    # "supply boat" and "Dunmore" are there, "engine" is not: about half the question's weight
    prompt = PROMPTS.rag_prompt("Which engine drove the supply boat from Dunmore?", [TEXT])
    question, context = ExtractiveReader.split_prompt(prompt)
    sentence, coverage = ExtractiveReader().best_sentence(question, context)
    assert sentence is not None and sentence.startswith("Her brother Tom")
    assert 0 < coverage < 1
    assert ExtractiveReader(min_coverage=coverage)(prompt).startswith("Her brother Tom")
    assert ExtractiveReader(min_coverage=coverage + 0.01)(prompt) == "unanswerable"


def test_reads_the_question_and_context_of_both_default_prompts() -> None:
    for prompt in (
        PROMPTS.rag_prompt("Who kept the lamp?", [TEXT, "Question: not this one."]),
        PROMPTS.long_context_prompt("Who kept the lamp?", TEXT, grounded=True),
    ):
        question, context = ExtractiveReader.split_prompt(prompt)
        assert question == "Who kept the lamp?"
        assert context.strip().startswith("Mara Holt") and "Answer:" not in context


def test_grounded_prompts_get_a_quote_that_verifies() -> None:
    prompt = PROMPTS.long_context_prompt("Who sailed the supply boat?", TEXT, grounded=True)
    answer, quotes = split_quotes(ExtractiveReader()(prompt))
    assert answer.startswith("Her brother Tom")
    assert check_grounding(answer, quotes, [TEXT]).grounded


def test_long_sentences_are_cut() -> None:
    long = "The lamp " + " ".join(f"w{i}" for i in range(100)) + " burned oil."
    answer = ExtractiveReader(max_words=10)(PROMPTS.rag_prompt("What did the lamp burn?", [long]))
    assert answer.endswith(" ...") and len(answer.split()) == 11


def test_self_route_end_to_end_answers_declines_and_falls_back() -> None:
    document = (TEXT + " ".join(f"filler{i}." for i in range(900))) * 2
    reader = ExtractiveReader()
    answered = sr.self_route("Who kept the lamp at Grey Point?", document, reader)
    assert (answered.route, answered.reason) == (sr.Route.RAG, sr.Reason.ANSWERED)
    assert answered.answer.startswith("Mara Holt kept the lamp")
    missing = sr.self_route("What colour is the lamp's glass?", document, reader)
    assert missing.route is sr.Route.LONG_CONTEXT and missing.abstained
