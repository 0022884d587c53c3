"""The learned scope model (selfroute._scope_model): weights, features, inference, reproducibility.

The model is not the default of ``parse_verdict`` (it did not beat the rules in leave-one-set-out
cross-validation, docs/verdict.md); these tests pin what it is, so a later round can measure it.
"""

from __future__ import annotations

import hashlib
import json
import math
import zlib
from pathlib import Path

import pytest

import selfroute as sr
from selfroute import _scope_model as scope
from selfroute._verdict import VerdictKind, scope_candidate

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "refusals"
WEIGHTS = ROOT / "selfroute" / "data" / scope.MODEL_FILE
TRAIN_FILES = (
    "ragtruth_labelled.jsonl",
    "ragtruth_holdout2.jsonl",
    "ragtruth_holdout3.jsonl",
    "ragtruth_holdout4.jsonl",
    "ragtruth_holdout5.jsonl",
    "labelled.jsonl",
)


def _candidate(text: str, question: str | None = None) -> scope.ScopeCandidate | None:
    return scope_candidate(sr.parse_verdict(text, question=question), question)


def test_the_shipped_model_loads_once_and_is_small() -> None:
    model = scope.load_model()
    assert model is scope.load_model()
    assert len(model.weights) == 1 << model.bits == 4096
    assert 0.0 < model.threshold < 1.0
    assert WEIGHTS.stat().st_size < 300_000
    assert any(w != 0.0 for w in model.weights)


def test_the_shipped_model_names_its_training_files_and_their_hashes() -> None:
    trained_on = scope.load_model().meta["trained_on"]
    assert isinstance(trained_on, dict)
    assert sorted(trained_on) == sorted(TRAIN_FILES)
    for name, digest in trained_on.items():
        assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == digest, name


def test_a_weights_file_of_the_wrong_size_is_rejected() -> None:
    text = json.dumps({"bits": 3, "threshold": 0.5, "meta": {}, "weights": [0.0] * 7})
    with pytest.raises(ValueError, match="7 weights for 3 bits"):
        scope.model_from_json(text)


def test_features_of_an_opening_decline() -> None:
    c = _candidate("The passages do not mention the cause of his death.", "How did he die?")
    assert c is not None and c.kind == "R" and c.focus == 0
    assert c.shape == "source-negation" and c.object_words == 5
    names = scope.feature_names(c)
    assert {"bias", "k=R", "q=1", "pos=only", "nb=0", "na=0", "kpos=R00"} <= set(names)
    assert {"f:passages", "f:not_mention", "f0:the", "qw=how", "yn=0"} <= set(names)
    assert len(names) == len(set(names))


def test_features_of_an_answer_with_a_trailing_decline() -> None:
    c = _candidate("He died in 1972. The passages do not mention the cause.")
    assert c is not None and c.kind == "A" and c.focus == 1 and c.question is None
    names = set(scope.feature_names(c))
    assert {"k=A", "q=0", "pos=last", "nb=1", "na=0", "kpos=A10", "p:1972"} <= names
    assert not any(n.startswith(("qw=", "ov=", "ask=")) for n in names)


def test_a_yes_no_question_is_a_feature() -> None:
    c = _candidate("No, the paper does not mention BERT.", "Does the paper use BERT?")
    assert c is not None and c.yes_no and c.asks is True
    assert {"yn=1", "ask=1", "qw=does"} <= set(scope.feature_names(c))


@pytest.mark.parametrize("text", ["Paris is the capital of France.", "unanswerable", "", "..."])
def test_no_candidate_without_a_decline_cue(text: str) -> None:
    assert _candidate(text) is None


def test_features_and_hashes_are_deterministic() -> None:
    c = _candidate("Based on the passages, there is no information about the budget.")
    assert c is not None
    assert scope.feature_names(c) == scope.feature_names(c)
    # CRC-32, not the salted built-in hash: the same index in every process
    assert scope.hashed(["bias"], 12) == [zlib.crc32(b"bias") & 4095] == [2651]
    assert scope.hashed(["b", "a", "b"], 4) == sorted({zlib.crc32(x) & 15 for x in (b"a", b"b")})


def test_probability_is_the_logistic_of_the_summed_weights() -> None:
    model = scope.ScopeModel(bits=2, weights=(0.5, -2.0, 1.0, 3.0), threshold=0.5, meta={})
    names = ["x", "y", "x"]
    z = sum(model.weights[i] for i in scope.hashed(names, 2))
    assert model.score(names) == pytest.approx(z)
    assert model.probability(names) == pytest.approx(1 / (1 + math.exp(-z)))
    assert model.declines(names) == (z >= 0)


def _constant_model(weight: float) -> scope.ScopeModel:
    return scope.ScopeModel(bits=4, weights=(weight,) * 16, threshold=0.5, meta={})


def test_model_verdict_lets_the_model_overrule_the_rules_both_ways() -> None:
    decline = "The passages do not mention his age."
    assert sr.parse_verdict(decline).declined
    flipped = scope.model_verdict(decline, model=_constant_model(-5.0))
    assert flipped.kind is VerdictKind.ANSWERED and flipped.answer == decline
    hedge = "He was born in 1950. The text does not mention where."
    assert not sr.parse_verdict(hedge).declined
    raised = scope.model_verdict(hedge, model=_constant_model(5.0))
    assert raised.kind is VerdictKind.REFUSAL
    assert raised.matched == "the text does not mention where."


def test_model_verdict_leaves_the_sentinel_and_plain_answers_alone() -> None:
    for text in ("Unanswerable.", "Paris.", ""):
        assert scope.model_verdict(text, model=_constant_model(-5.0)) == sr.parse_verdict(text)
        assert scope.model_verdict(text, model=_constant_model(5.0)) == sr.parse_verdict(text)


def test_parse_verdict_does_not_use_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> scope.ScopeModel:
        raise AssertionError("parse_verdict loaded the scope model")

    monkeypatch.setattr(scope, "load_model", boom)
    assert sr.parse_verdict("The text does not mention his age.").declined


def _training() -> object:
    pytest.importorskip("numpy")
    from benchmarks import train_verdict_model

    return train_verdict_model


def test_pure_python_inference_equals_the_training_side_numpy_scores() -> None:
    train = _training()
    model = scope.load_model()
    rows = [e for e in train.examples(TRAIN_FILES) if e.indices is not None]  # type: ignore[attr-defined]
    numpy_scores = train.scores(model.weights, rows)  # type: ignore[attr-defined]
    assert len(rows) == model.meta["examples"]
    checked = 0
    for name in TRAIN_FILES:
        for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            # the order of train.examples: each row without, then with, its question
            questions = [None, str(row["question"])] if row.get("question") else [None]
            for q in questions:
                c = _candidate(row["prediction"], q)
                if c is not None:
                    assert model.score(scope.feature_names(c)) == pytest.approx(
                        float(numpy_scores[checked]), abs=1e-9
                    )
                    checked += 1
    assert checked == len(rows)


def test_the_training_script_rebuilds_the_shipped_weights_byte_for_byte() -> None:
    train = _training()
    assert train.model_json() == WEIGHTS.read_text(encoding="utf-8")  # type: ignore[attr-defined]
