"""Answer metrics, including a reproduction of the official LongBench scorer.

The LongBench functions (:func:`normalize_answer`, :func:`qa_f1_score`, :func:`classification_score`,
:func:`count_score`, :func:`retrieval_score`, :func:`longbench_score`, :func:`longbench_aggregate`)
reproduce the scorer of THUDM/LongBench (``metrics.py`` and ``eval.py``, MIT) number for number:
the same normalisation (lower case, ASCII punctuation removed, English articles removed, white space
collapsed), the same token-multiset F1, the maximum over the gold answers, the first-line rule for
``trec``/``triviaqa``/``samsum``/``lsht`` and the ``round(100 * mean, 2)`` aggregate. A test checks
this against scores computed by the official code on real LongBench Qasper predictions.

Summaries are scored with ROUGE-L from Google's maintained ``rouge-score`` package (F-measure, with
stemming). LongBench itself used the unmaintained ``rouge`` package, whose numbers differ slightly.

Unanswerable questions are scored by :func:`declined`: correct when the prediction declines (the
sentinel, or a natural refusal such as "The text does not mention ..."), judged by
:func:`selfroute.parse_verdict`.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict import DeclineDetector, VerdictKind, parse_verdict

__all__ = [
    "LONGBENCH_METRICS",
    "METRICS",
    "classification_score",
    "count_score",
    "declined",
    "exact_match",
    "extract_choice",
    "longbench_aggregate",
    "longbench_score",
    "max_over_answers",
    "multiple_choice_accuracy",
    "normalize_answer",
    "qa_f1_score",
    "retrieval_score",
    "rouge_l",
    "score_answer",
    "token_f1",
]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """LongBench's (and SQuAD's) answer normalisation.

    Lower-cases, removes ASCII punctuation, removes the articles *a*, *an*, *the* and collapses
    white space, in that order.

    Example:
        >>> normalize_answer("The  Eiffel-Tower!")
        'eiffeltower'
    """
    lowered = text.lower()
    no_punct = "".join(ch for ch in lowered if ch not in _PUNCTUATION)
    no_articles = _ARTICLES.sub(" ", no_punct)
    return " ".join(no_articles.split())


def token_f1(prediction_tokens: Sequence[str], gold_tokens: Sequence[str]) -> float:
    """F1 of the token multisets (LongBench's ``f1_score``); 0 when nothing is shared."""
    shared = sum((Counter(prediction_tokens) & Counter(gold_tokens)).values())
    if shared == 0:
        return 0.0
    precision = 1.0 * shared / len(prediction_tokens)
    recall = 1.0 * shared / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def qa_f1_score(prediction: str, ground_truth: str, **_: Any) -> float:
    """Token F1 between one prediction and one gold answer after :func:`normalize_answer`."""
    return token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match(prediction: str, ground_truth: str, **_: Any) -> float:
    """1.0 when the normalised prediction equals the normalised gold answer, else 0.0."""
    return float(normalize_answer(prediction) == normalize_answer(ground_truth))


def count_score(prediction: str, ground_truth: str, **_: Any) -> float:
    """LongBench ``passage_count``: share of the numbers in the prediction equal to the gold."""
    numbers = re.findall(r"\d+", prediction)
    right = sum(1 for n in numbers if n == str(ground_truth))
    return 0.0 if not numbers else float(right / len(numbers))


def retrieval_score(prediction: str, ground_truth: str, **_: Any) -> float:
    """LongBench ``passage_retrieval_en``: the gold names ``Paragraph N``; share of numbers = N."""
    found = re.findall(r"Paragraph (\d+)", ground_truth)
    if not found:
        raise ConfigurationError(
            f"retrieval_score needs a gold answer of the form 'Paragraph N', got {ground_truth!r}"
        )
    numbers = re.findall(r"\d+", prediction)
    right = sum(1 for n in numbers if n == found[0])
    return 0.0 if not numbers else float(right / len(numbers))


def classification_score(
    prediction: str, ground_truth: str, *, all_classes: Sequence[str] | None = None, **_: Any
) -> float:
    """LongBench ``trec``/``lsht``: classes named in the prediction; 1/n when the gold is one of n.

    Reproduces the official behaviour exactly, including its quirks: classes contained in the gold
    label (but not equal to it) are dropped while iterating, which skips the class after each one
    dropped, and a prediction naming no class scores 0 (the official similarity fallback is
    unreachable because it tests ``em_match_list != 0``).
    """
    if not all_classes:
        raise ConfigurationError("classification_score needs all_classes (the label set)")
    matches = [c for c in all_classes if c in prediction]
    # The official code removes from the list while iterating over it, which skips the element
    # after each removal; this index walk reproduces that exactly.
    i = 0
    while i < len(matches):
        term = matches[i]
        if term in ground_truth and term != ground_truth:
            matches.remove(term)
        i += 1
    if ground_truth in matches:
        return 1.0 / len(matches)
    return 0.0


def rouge_l(prediction: str, reference: str, **_: Any) -> float:
    """ROUGE-L F-measure (``rouge-score``, Porter stemming); 0.0 for an empty prediction."""
    try:
        from rouge_score import rouge_scorer
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingDependencyError("rouge-score", "eval") from exc
    if not prediction.strip() or not reference.strip():
        return 0.0
    scorer = _ROUGE.get("l")
    if scorer is None:
        scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
        _ROUGE["l"] = scorer
    return float(scorer.score(reference, prediction)["rougeL"].fmeasure)


_ROUGE: dict[str, Any] = {}

_CHOICE_PATTERNS = (
    re.compile(r"correct (?:answer|option|choice) is:?\s*\(?\s*([A-Z])\b"),
    re.compile(r"(?:answer|option|choice)\s*(?:is)?\s*[:：]\s*\(?\s*([A-Z])\b", re.IGNORECASE),
    re.compile(r"^\s*\(?([A-Z])\)?\s*(?:[.:)\]]|$)"),
    re.compile(r"^\s*\(?([A-Z])\)?\s+[-–—]?\s*\S"),
)


def extract_choice(prediction: str, choices: Sequence[str] | None = None) -> str | None:
    """The option letter a multiple-choice prediction picks, or ``None``.

    Recognises "The correct answer is (B)", "Answer: B", "B.", "(B) text" and, when ``choices``
    (the option texts, A first) are given, a prediction that names exactly one option's text.
    """
    text = prediction.strip()
    n = len(choices) if choices else 26
    for pattern in _CHOICE_PATTERNS:
        m = pattern.search(text)
        if m:
            letter = m.group(1).upper()
            if ord(letter) - ord("A") < n:
                return letter
    if choices:
        norm = normalize_answer(text)
        named = [
            chr(ord("A") + i)
            for i, c in enumerate(choices)
            if normalize_answer(c) and f" {normalize_answer(c)} " in f" {norm} "
        ]
        if len(named) == 1:
            return named[0]
    return None


def multiple_choice_accuracy(
    prediction: str, ground_truth: str, *, choices: Sequence[str] | None = None, **_: Any
) -> float:
    """1.0 when the option the prediction picks is the gold option.

    ``ground_truth`` is an option letter (``"B"``) or, with ``choices``, the text of an option.
    """
    gold = ground_truth.strip()
    if len(gold) != 1 or not gold.isalpha():
        if not choices:
            raise ConfigurationError(
                f"multiple-choice gold {ground_truth!r} is not an option letter and no choices "
                "were given to map it"
            )
        texts = [normalize_answer(c) for c in choices]
        if normalize_answer(gold) not in texts:
            raise ConfigurationError(f"multiple-choice gold {ground_truth!r} is not an option")
        gold = chr(ord("A") + texts.index(normalize_answer(gold)))
    return float(extract_choice(prediction, choices) == gold.upper())


MetricFn = Callable[..., float]

#: Metric names accepted by :func:`score_answer` (and ``metric`` on an eval item).
METRICS: dict[str, MetricFn] = {
    "qa_f1": qa_f1_score,
    "exact_match": exact_match,
    "multiple_choice": multiple_choice_accuracy,
    "rouge_l": rouge_l,
    "classification": classification_score,
    "count": count_score,
    "retrieval": retrieval_score,
}

#: LongBench (v1, English) dataset -> metric, as in the official ``eval.py``.
LONGBENCH_METRICS: dict[str, str] = {
    "narrativeqa": "qa_f1",
    "qasper": "qa_f1",
    "multifieldqa_en": "qa_f1",
    "hotpotqa": "qa_f1",
    "2wikimqa": "qa_f1",
    "musique": "qa_f1",
    "triviaqa": "qa_f1",
    "gov_report": "rouge_l",
    "qmsum": "rouge_l",
    "multi_news": "rouge_l",
    "samsum": "rouge_l",
    "trec": "classification",
    "passage_retrieval_en": "retrieval",
    "passage_count": "count",
}
_FIRST_LINE_DATASETS = frozenset({"trec", "triviaqa", "samsum", "lsht"})
_UNSUPPORTED_LONGBENCH = {
    "multifieldqa_zh": "Chinese (jieba) token F1",
    "dureader": "Chinese ROUGE",
    "vcsum": "Chinese ROUGE",
    "lsht": "Chinese classification",
    "passage_retrieval_zh": "Chinese retrieval",
    "lcc": "fuzzywuzzy code similarity",
    "repobench-p": "fuzzywuzzy code similarity",
}


def _metric(name: str) -> MetricFn:
    try:
        return METRICS[name]
    except KeyError:
        raise ConfigurationError(f"unknown metric {name!r}; use one of {sorted(METRICS)}") from None


def metric_for_longbench(dataset: str) -> str:
    """The metric name LongBench uses for ``dataset`` (``qasper`` -> ``qa_f1``).

    Raises:
        ConfigurationError: The dataset is not a LongBench dataset selfroute scores.
    """
    key = dataset.strip().lower()
    if key.endswith("_e"):  # LongBench-E file names
        key = key[:-2]
    if key in LONGBENCH_METRICS:
        return LONGBENCH_METRICS[key]
    if key in _UNSUPPORTED_LONGBENCH:
        raise ConfigurationError(
            f"LongBench dataset {dataset!r} is scored with {_UNSUPPORTED_LONGBENCH[key]}, which "
            "selfroute does not reproduce; pass metric= explicitly to score it differently"
        )
    raise ConfigurationError(
        f"{dataset!r} is not a LongBench dataset; known: {sorted(LONGBENCH_METRICS)}"
    )


def max_over_answers(
    metric: str | MetricFn, prediction: str, answers: Iterable[str], **kwargs: Any
) -> float:
    """The best score of ``prediction`` against any gold answer (LongBench's rule); 0.0 if none."""
    fn = _metric(metric) if isinstance(metric, str) else metric
    best = 0.0
    for gold in answers:
        best = max(best, fn(prediction, gold, **kwargs))
    return best


def longbench_score(
    dataset: str,
    prediction: str,
    answers: Sequence[str],
    *,
    all_classes: Sequence[str] | None = None,
) -> float:
    """One prediction scored exactly as LongBench's ``scorer`` scores it (0..1).

    Args:
        dataset: LongBench dataset name (``qasper``, ``hotpotqa``, ``trec``, ...).
        prediction: The model output.
        answers: The gold answers (the maximum over them counts).
        all_classes: The label set, for ``trec``.
    """
    metric = metric_for_longbench(dataset)
    if dataset.strip().lower().removesuffix("_e") in _FIRST_LINE_DATASETS:
        prediction = prediction.lstrip("\n").split("\n")[0]
    return max_over_answers(metric, prediction, answers, all_classes=all_classes)


def longbench_aggregate(scores: Iterable[float]) -> float:
    """LongBench's reported number: ``round(100 * mean, 2)``.

    Raises:
        ConfigurationError: No scores were given.
    """
    values = list(scores)
    if not values:
        raise ConfigurationError("cannot aggregate an empty list of scores")
    total = 0.0
    for v in values:
        total += v
    return round(100 * total / len(values), 2)


def declined(
    prediction: str | None,
    *,
    sentinel: str = DEFAULT_SENTINEL,
    question: str | None = None,
    detector: DeclineDetector | None = None,
) -> bool:
    """Whether ``prediction`` declines to answer (sentinel or natural refusal).

    Empty output does not count as declining here: a system must *say* the text does not contain
    the answer to get an unanswerable question right. ``question``, when given, is passed to
    :func:`selfroute.parse_verdict` (a "No, ..." answers a yes/no question), and so is ``detector``
    (your own decline detector, ``RouteConfig.decline_detector``).
    """
    verdict = parse_verdict(
        prediction or "", sentinel=sentinel, question=question, detector=detector
    )
    return verdict.kind in (VerdictKind.SENTINEL, VerdictKind.REFUSAL)


def score_answer(
    prediction: str | None,
    answers: Sequence[str],
    *,
    metric: str = "qa_f1",
    unanswerable: bool = False,
    dataset: str | None = None,
    all_classes: Sequence[str] | None = None,
    choices: Sequence[str] | None = None,
    sentinel: str = DEFAULT_SENTINEL,
    question: str | None = None,
    detector: DeclineDetector | None = None,
) -> float:
    """Score one prediction of the eval harness (0..1).

    Unanswerable questions score 1.0 when the prediction declines and 0.0 otherwise. Otherwise the
    metric is applied, maximised over the gold answers; LongBench datasets use the official rules.
    A missing prediction (the call failed) scores 0.0.
    """
    if prediction is None:
        return 0.0
    if unanswerable:
        return float(declined(prediction, sentinel=sentinel, question=question, detector=detector))
    if dataset is not None and dataset.strip().lower().removesuffix("_e") in LONGBENCH_METRICS:
        return longbench_score(dataset, prediction, answers, all_classes=all_classes)
    return max_over_answers(metric, prediction, answers, all_classes=all_classes, choices=choices)
