"""Metrics on hand-checked cases."""

from __future__ import annotations

import pytest

from selfroute import ConfigurationError
from selfroute.eval import metrics as m


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  an   apple, a pear  ", "apple pear"),
        ("Theatre", "theatre"),  # 'the' only as a whole word
        ("Eiffel-Tower", "eiffeltower"),  # ASCII punctuation is deleted, not spaced
        ("Adriatic—fell", "adriatic—fell"),  # non-ASCII punctuation is kept (as LongBench)
        ("A", ""),
    ],
)
def test_normalize_answer(text: str, expected: str) -> None:
    assert m.normalize_answer(text) == expected


def test_qa_f1_hand_computed() -> None:
    # prediction tokens: [paris, france]; gold: [paris] -> P=1/2, R=1, F1=2/3
    assert m.qa_f1_score("Paris, France", "Paris") == pytest.approx(2 / 3)
    # shared multiset {in:1, 1901:1}: P=2/3, R=2/2 -> F1 = 0.8
    assert m.qa_f1_score("born in 1901", "in 1901") == pytest.approx(0.8)
    # repeated tokens count once per occurrence: pred [a? no] -> [yes, yes], gold [yes]
    assert m.qa_f1_score("yes yes", "yes") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert m.qa_f1_score("London", "Paris") == 0.0
    assert m.qa_f1_score("", "Paris") == 0.0
    assert m.qa_f1_score("The", "the") == 0.0  # both normalise to nothing


def test_max_over_answers_takes_best_gold() -> None:
    assert m.max_over_answers("qa_f1", "the Adriatic Sea", ["Adriatic", "Adriatic Sea"]) == 1.0
    assert m.max_over_answers("qa_f1", "x", []) == 0.0


def test_exact_match() -> None:
    assert m.exact_match("The Normans.", "normans") == 1.0
    assert m.exact_match("Normans of Sicily", "Normans") == 0.0


@pytest.mark.parametrize(
    ("prediction", "letter"),
    [
        ("The correct answer is (B)", "B"),
        ("Answer: C", "C"),
        ("D. Because the text says so", "D"),
        ("(A) the first one", "A"),
        ("A", "A"),
        ("I think it is about trains", None),
    ],
)
def test_extract_choice(prediction: str, letter: str | None) -> None:
    assert m.extract_choice(prediction, ["one", "two", "three", "four"]) == letter


def test_multiple_choice_accuracy() -> None:
    choices = ["Paris", "London", "Rome", "Berlin"]
    assert m.multiple_choice_accuracy("The correct answer is (C)", "C", choices=choices) == 1.0
    assert m.multiple_choice_accuracy("It is Rome.", "Rome", choices=choices) == 1.0
    assert m.multiple_choice_accuracy("Answer: A", "B") == 0.0
    # an out-of-range letter is not a pick
    assert m.extract_choice("E.", choices) is None
    with pytest.raises(ConfigurationError, match="not an option"):
        m.multiple_choice_accuracy("A", "Madrid", choices=choices)
    with pytest.raises(ConfigurationError, match="no choices"):
        m.multiple_choice_accuracy("A", "Madrid")


def test_rouge_l_hand_computed() -> None:
    # LCS("the cat sat on the mat", "the cat lay on the mat") = 5 of 6 tokens each: F = 5/6
    assert m.rouge_l("the cat sat on the mat", "the cat lay on the mat") == pytest.approx(5 / 6)
    # stemming: "running" ~ "run"
    assert m.rouge_l("dogs running", "dog run") == pytest.approx(1.0)
    assert m.rouge_l("", "anything") == 0.0


def test_classification_score_reproduces_official_quirks() -> None:
    classes = ["Entity", "Entity Abbreviation", "Human", "Location"]
    # two classes named, gold among them -> 1/2
    assert m.classification_score("Human or Location", "Human", all_classes=classes) == 0.5
    # "Entity" is contained in the gold "Entity Abbreviation" and is dropped -> 1/1
    assert (
        m.classification_score("Entity Abbreviation", "Entity Abbreviation", all_classes=classes)
        == 1.0
    )
    # no class named: the official similarity fallback is unreachable -> 0
    assert m.classification_score("no idea", "Human", all_classes=classes) == 0.0
    # removal while iterating skips the element after a removed one (official behaviour):
    quirky = ["a", "b", "ab"]
    # matches = [a, b, ab]; 'a' removed, then index 1 is 'ab' (b skipped) -> [b, ab] -> 1/2
    assert m.classification_score("a b ab", "ab", all_classes=quirky) == 0.5
    with pytest.raises(ConfigurationError):
        m.classification_score("x", "y")


def test_count_and_retrieval_scores() -> None:
    assert m.count_score("There are 3 or 4 paragraphs, I think 3", "3") == pytest.approx(2 / 3)
    assert m.count_score("none", "3") == 0.0
    assert m.retrieval_score("Paragraph 12", "Paragraph 12") == 1.0
    assert m.retrieval_score("Paragraphs 12 and 13", "Paragraph 12") == 0.5
    with pytest.raises(ConfigurationError, match="Paragraph N"):
        m.retrieval_score("1", "the first")


def test_longbench_first_line_rule() -> None:
    # triviaqa scores only the first line; qasper scores everything
    pred = "\nParis\nand some other words about London"
    assert m.longbench_score("triviaqa", pred, ["Paris"]) == 1.0
    assert m.longbench_score("qasper", pred, ["Paris"]) < 1.0


def test_longbench_dataset_names() -> None:
    assert m.metric_for_longbench("qasper_e") == "qa_f1"
    assert m.metric_for_longbench("gov_report") == "rouge_l"
    with pytest.raises(ConfigurationError, match="jieba"):
        m.metric_for_longbench("multifieldqa_zh")
    with pytest.raises(ConfigurationError, match="not a LongBench dataset"):
        m.metric_for_longbench("my_set")


def test_longbench_aggregate() -> None:
    assert m.longbench_aggregate([1.0, 0.0, 0.5]) == 50.0
    assert m.longbench_aggregate([1 / 3]) == 33.33
    with pytest.raises(ConfigurationError):
        m.longbench_aggregate([])


@pytest.mark.parametrize(
    ("prediction", "is_decline"),
    [
        ("unanswerable", True),
        ("The text does not mention the horse's name.", True),
        ("There is no information about the tavern.", True),
        ("Paris.", False),
        ("", False),  # saying nothing is not declining
    ],
)
def test_declined(prediction: str, is_decline: bool) -> None:
    assert m.declined(prediction) is is_decline


def test_score_answer_unanswerable_and_missing() -> None:
    assert m.score_answer("Unanswerable.", [], unanswerable=True) == 1.0
    assert m.score_answer("In 1901.", [], unanswerable=True) == 0.0
    assert m.score_answer(None, ["Paris"]) == 0.0
    assert m.score_answer("Paris", ["Paris"], metric="exact_match") == 1.0
    assert m.score_answer("\nParis\nLondon", ["Paris"], dataset="triviaqa") == 1.0
    with pytest.raises(ConfigurationError, match="unknown metric"):
        m.score_answer("x", ["y"], metric="bleu")


def test_correct_decline_scoring_reads_the_question() -> None:
    """Eval's correct-decline score uses the flow's detector, question included (issue #15)."""
    declined, score_answer = m.declined, m.score_answer
    text = "No, the passages do not mention a lighthouse."
    assert declined(text)  # without the question: escalate
    assert not declined(text, question="Was there a lighthouse?")  # "No" answers a yes/no question
    assert declined(text, question="Where was the lighthouse?")
    assert score_answer(text, [], unanswerable=True, question="Where was the lighthouse?") == 1.0
    assert score_answer(text, [], unanswerable=True, question="Was there a lighthouse?") == 0.0
    assert declined("The provided financial statement does not list the CEO's salary.")
