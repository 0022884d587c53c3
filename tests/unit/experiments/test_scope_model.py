"""The experimental learned scope model (experiments/scope_model/): features, inference, training.

The model is not part of ``selfroute`` and not the default of ``parse_verdict`` (it did not beat
the rules, in cross-validation nor on held-out set 6: docs/verdict.md, "A learned scope model");
these tests pin what it is, so a later round can measure it again. No weights are vendored: the
tests train them from the vendored fixtures (seconds). Weights are compared between trainings in
one process, never with bytes a particular numpy build produced.
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest

import selfroute as sr
from benchmarks import verdict_eval, verdict_speed
from experiments.scope_model import measure
from experiments.scope_model import model as scope
from selfroute import VerdictKind

pytestmark = pytest.mark.slow  # trains the experimental scope model

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "refusals"
TRAIN_FILES = (
    "ragtruth_labelled.jsonl",
    "ragtruth_holdout2.jsonl",
    "ragtruth_holdout3.jsonl",
    "ragtruth_holdout4.jsonl",
    "ragtruth_holdout5.jsonl",
    "labelled.jsonl",
)
#: A quick training for the tests that need some trained weights, not the full model's.
SMALL = ("ragtruth_holdout2.jsonl", "ragtruth_holdout3.jsonl")


def _candidate(text: str, question: str | None = None) -> scope.ScopeCandidate | None:
    return scope.scope_candidate(sr.parse_verdict(text, question=question), question)


def _training():  # type: ignore[no-untyped-def]
    pytest.importorskip("numpy")
    from experiments.scope_model import train

    return train


@pytest.fixture(scope="module")
def full_rows() -> list[Any]:
    """The judged training examples of the full model (each fixture row without/with question)."""
    train = _training()
    return [e for e in train.examples(TRAIN_FILES) if e.indices is not None]


# -- features of hand-written outputs ---------------------------------------------------------


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


def test_bucket_edges() -> None:
    assert [scope.bucket(v, (1, 3)) for v in (0, 1, 2, 3, 9)] == ["0", "1", "1", "2", "2"]


def test_hashes_are_crc32_not_the_salted_builtin_hash() -> None:
    # the same index in every process (the built-in str hash is salted per process)
    assert scope.hashed(["bias"], 12) == [zlib.crc32(b"bias") & 4095] == [2651]
    assert scope.hashed(["b", "a", "b"], 4) == sorted({zlib.crc32(x) & 15 for x in (b"a", b"b")})


# -- inference ----------------------------------------------------------------------------------


def test_probability_is_the_logistic_of_the_summed_weights() -> None:
    model = scope.ScopeModel(bits=2, weights=(0.5, -2.0, 1.0, 3.0), threshold=0.5, meta={})
    names = ["x", "y", "x"]
    z = sum(model.weights[i] for i in scope.hashed(names, 2))
    assert model.score(names) == pytest.approx(z)
    assert model.probability(names) == pytest.approx(1 / (1 + math.exp(-z)))
    assert model.declines(names) == (z >= 0)


def test_a_weights_file_of_the_wrong_size_is_rejected() -> None:
    text = json.dumps({"bits": 3, "threshold": 0.5, "meta": {}, "weights": [0.0] * 7})
    with pytest.raises(ValueError, match="7 weights for 3 bits"):
        scope.model_from_json(text)


def _constant_model(weight: float) -> scope.ScopeModel:
    return scope.ScopeModel(bits=4, weights=(weight,) * 16, threshold=0.5, meta={})


def test_model_verdict_lets_the_model_overrule_the_rules_both_ways() -> None:
    decline = "The passages do not mention his age."
    assert sr.parse_verdict(decline).declined
    flipped = scope.model_verdict(decline, _constant_model(-5.0))
    assert flipped.kind is VerdictKind.ANSWERED and flipped.answer == decline
    hedge = "He was born in 1950. The text does not mention where."
    assert not sr.parse_verdict(hedge).declined
    raised = scope.model_verdict(hedge, _constant_model(5.0))
    assert raised.kind is VerdictKind.REFUSAL
    assert raised.matched == "the text does not mention where."


def test_model_verdict_leaves_the_sentinel_and_plain_answers_alone() -> None:
    for text in ("Unanswerable.", "Paris.", ""):
        assert scope.model_verdict(text, _constant_model(-5.0)) == sr.parse_verdict(text)
        assert scope.model_verdict(text, _constant_model(5.0)) == sr.parse_verdict(text)


# -- parse_verdict is unaffected -----------------------------------------------------------------


def test_parse_verdict_is_unchanged_by_the_model() -> None:
    texts = ["The passages do not mention his age.", "He was born in 1950. The text does not say."]
    before = [sr.parse_verdict(t) for t in texts]
    flipped = [
        scope.model_verdict(t, _constant_model(-5.0 if v.declined else 5.0))
        for t, v in zip(texts, before, strict=True)
    ]
    assert [v.declined for v in flipped] == [not v.declined for v in before]
    assert [sr.parse_verdict(t) for t in texts] == before


def test_selfroute_does_not_import_the_experiment_or_numpy() -> None:
    code = (
        "import sys, selfroute as sr; sr.parse_verdict('The text does not mention it.');"
        "print(sorted(m for m in sys.modules if m.startswith(('benchmarks', 'experiments', 'numpy'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"
    assert not (ROOT / "selfroute" / "data" / scope.MODEL_FILE).exists()


# -- training (numpy) --------------------------------------------------------------------------


def test_two_trainings_in_one_process_give_identical_weights() -> None:
    train = _training()
    first = train.model_json(SMALL)
    second = train.model_json(SMALL)
    assert first == second
    model = scope.model_from_json(first)
    assert len(model.weights) == 1 << model.bits == 4096
    assert sum(w != 0.0 for w in model.weights) > 100  # it learned something
    trained_on = model.meta["trained_on"]
    assert isinstance(trained_on, dict) and sorted(trained_on) == sorted(SMALL)
    for name, digest in trained_on.items():
        assert hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest() == digest, name


def test_the_full_model_fits_its_training_rows(full_rows: list[Any]) -> None:
    train = _training()
    model = train.train_model()
    assert model is train.train_model()  # trained once per process
    assert sorted(model.meta["trained_on"]) == sorted(TRAIN_FILES)  # type: ignore[arg-type]
    rows: list[Any] = full_rows
    assert len(rows) == model.meta["examples"]
    z = train.scores(model.weights, rows)
    agree = sum(
        (1 / (1 + math.exp(-float(zi))) >= model.threshold) == e.label
        for zi, e in zip(z, rows, strict=True)
    )
    # in-sample, on the rows it judges, it is at least as right as the rules' own verdict
    rules = sum(e.rules == e.label for e in rows)
    assert agree >= rules


def test_pure_python_inference_equals_the_training_side_numpy_scores(
    full_rows: list[Any],
) -> None:
    train = _training()
    model = train.train_model()
    rows: list[Any] = full_rows
    numpy_scores = train.scores(model.weights, rows)
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
    assert checked == len(rows) > 1000


def test_write_then_check_and_load(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train = _training()
    path = tmp_path / "sub" / "weights.json"
    assert train.main(["--write", str(path)]) == 0
    assert scope.load_model(path) == train.train_model()
    assert train.main(["--check", str(path)]) == 0
    path.write_text(path.read_text(encoding="utf-8").replace('"threshold":0.5', '"threshold":0.6'))
    assert train.main(["--check", str(path)]) == 1
    assert "differs" in capsys.readouterr().err


# -- the benchmarks' tables with the experimental rows -----------------------------------------


def test_the_benchmarks_measure_the_scope_model_only_through_the_experiment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    train = _training()
    files = [str(FIXTURES / "ragtruth_holdout5.jsonl"), "--json"]
    assert verdict_eval.main(files) == 0
    assert not any("scope model" in name for name in json.loads(capsys.readouterr().out))
    assert measure.main(["eval", *files]) == 0
    report = json.loads(capsys.readouterr().out)
    model = train.train_model()
    rows = verdict_eval.load([FIXTURES / "ragtruth_holdout5.jsonl"])
    for name, question in (("", False), (", with question", True)):
        got = report[f"scope model (experimental){name}"]["all"]["all"]
        tp = sum(
            r["declined"]
            and scope.model_verdict(
                r["prediction"], model, question=r.get("question") if question else None
            ).declined
            for r in rows
        )
        assert got["n"] == 400 and got["tp"] == tp


def test_the_experiment_reads_saved_weights(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.json"
    # a model that reads every candidate as a decline: the column must differ from the rules
    path.write_text(
        json.dumps({"bits": 4, "threshold": 0.5, "meta": {}, "weights": [5.0] * 16}),
        encoding="utf-8",
    )
    fixture = str(FIXTURES / "ragtruth_labelled.jsonl")
    assert measure.main(["eval", fixture, "--json", "--scope-weights", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    rules = report["default, default sentinel"]["all"]["all"]
    eager = report["scope model (experimental)"]["all"]["all"]
    assert eager["tp"] + eager["fp"] > rules["tp"] + rules["fp"]
    assert measure.main(["speed", fixture, "--repeat", "1", "--scope-weights", str(path)]) == 0
    out = capsys.readouterr().out
    assert "| scope model default |" in out and "| scope model with question |" in out
    assert verdict_speed.main([fixture, "--repeat", "1"]) == 0
    assert "scope model" not in capsys.readouterr().out


def test_the_experiment_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert measure.main([]) == 2
    assert measure.main(["train"]) == 2
    assert "{eval,speed}" in capsys.readouterr().err
