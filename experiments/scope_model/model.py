"""An experimental learned scope model: a logistic regression re-judging the decline rules' candidate.

The rules of :mod:`selfroute._verdict` find a candidate decline sentence ("The passages do not
mention the cause.") and decide by hand-written readings whether it declines the question or only
a narrower point of an answer. This module scores the same decision with a small logistic regression
over hashed binary features of the candidate sentence, its neighbours, its position, the amount of
text around it, its overlap with the question and the rules' own verdict.

It is an experiment, not part of ``selfroute`` nor of the benchmarks: it did not beat the rules
in leave-one-set-out cross-validation nor on the blind held-out set 6 (``docs/verdict.md``, "A
learned scope model"). No weights are vendored: :mod:`experiments.scope_model.train` trains them
from the labelled fixtures in seconds (``--write PATH`` saves them; :func:`load_model` reads such a
file). Inference here is pure Python; numpy is needed only to train. :func:`model_verdict` applies a
model, for measurement (:mod:`experiments.scope_model.measure`).

It judges the rules' own candidate sentence, so it splits and normalises text with the rules'
private helpers (``_sentences``, ``_norm``, ``_TRIGGER`` of ``selfroute._verdict``): the
structure test allows exactly these, for this module. A change to the rules may change its
features; ``experiments/README.md`` says how to measure it again.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from selfroute import DEFAULT_SENTINEL, Verdict, VerdictKind, parse_verdict
from selfroute._verdict._grammar import QuestionShape, content_stems, decline_shape
from selfroute._verdict._parse import _TRIGGER, _norm, _sentences

__all__ = [
    "MODEL_FILE",
    "ScopeCandidate",
    "ScopeModel",
    "bucket",
    "feature_names",
    "hashed",
    "load_model",
    "model_from_json",
    "model_verdict",
    "scope_candidate",
]

#: The file name the training script writes by default (in the temporary directory).
MODEL_FILE = "verdict_scope_model.json"

_WORDS = re.compile(r"[a-z0-9']+")

#: A decline cue: an answer the rules accept is a candidate for the scope model only with one.
_CUE = re.compile(
    r"\b(?:not (?:\w+ly )?(?:mention|provide|specif|state|contain|discuss|include|give|say|"
    r"address|cover|detail|describe|indicate|explain|list|clear)\w*|unable to|cannot|can't|"
    r"no (?:\w+ )?(?:information|mention|details?|data|evidence|indication)|unanswerable|sorry|"
    r"apologi[sz]e|insufficient|not enough)"
)


@dataclass(frozen=True)
class ScopeCandidate:
    """A candidate decline sentence of one output, as the rules see it.

    Attributes:
        sentences: The output's sentences, normalised.
        focus: The index of the candidate sentence (the rules' decline, or an answer's first cue).
        kind: ``"R"`` when the rules read the output as a decline, ``"A"`` when as an answer.
        question: The question (stripped), or ``None``.
        yes_no: Whether the question is a polar question.
        shape: The decline shape the candidate shows (``decline_shape``), if any.
        asks: Whether what the candidate declares absent is what the question asks for (``None``:
            no question, or nothing declared absent).
        object_words: Words after the decline shape in the candidate sentence.
    """

    sentences: tuple[str, ...]
    focus: int
    kind: str
    question: str | None
    yes_no: bool
    shape: str | None
    asks: bool | None
    object_words: int


def scope_candidate(verdict: Verdict, question: str | None) -> ScopeCandidate | None:
    """The candidate decline of a (non-strict) :func:`~selfroute.parse_verdict` result.

    Args:
        verdict: What ``parse_verdict(text, question=question)`` returned.
        question: The question the verdict was read with, or ``None``.

    Returns:
        ``None`` when there is nothing to judge: a sentinel, empty or garbled output, or an answer
        with no decline cue.
    """
    if verdict.kind is VerdictKind.REFUSAL:
        kind = "R"
    elif verdict.kind is VerdictKind.ANSWERED and _CUE.search(_norm(verdict.answer)):
        kind = "A"
    else:
        return None
    sentences = [_norm(s) for s in _sentences(verdict.answer)] or [_norm(verdict.answer)]
    focus = -1
    if kind == "R" and verdict.matched:
        matched = _norm(verdict.matched)
        focus = next((i for i, s in enumerate(sentences) if matched in s), -1)
    if focus < 0:
        focus = next((i for i, s in enumerate(sentences) if _CUE.search(s)), -1)
    if focus < 0:
        focus = next((i for i, s in enumerate(sentences) if _TRIGGER.search(s)), 0)
    asked = question.strip() if question and question.strip() else None
    shape = QuestionShape(asked) if asked else None
    found = decline_shape(sentences[focus])
    obj = ""
    if found is not None:
        obj = sentences[focus].split(found[1], 1)[-1].strip(" .,:;!?")
    return ScopeCandidate(
        sentences=tuple(sentences),
        focus=focus,
        kind=kind,
        question=asked,
        yes_no=shape.yes_no if shape else False,
        shape=None if found is None else found[0],
        asks=shape.asks_for(obj) if shape and obj else None,
        object_words=len(obj.split()),
    )


def bucket(value: int, edges: Sequence[int]) -> str:
    """The index of the first edge ``value`` is below (``len(edges)`` past the last), as text."""
    for i, edge in enumerate(edges):
        if value < edge:
            return str(i)
    return str(len(edges))


def _words(sentence: str, limit: int) -> list[str]:
    return _WORDS.findall(sentence)[:limit]


def feature_names(candidate: ScopeCandidate) -> list[str]:
    """The binary features of one candidate decline (each name once)."""
    c = candidate
    sentences, focus, kind, question = c.sentences, c.focus, c.kind, c.question
    n = len(sentences)
    before = sentences[:focus]
    after = sentences[focus + 1 :]
    target = sentences[focus]
    has_q = question is not None
    out = [
        "bias",
        f"k={kind}",
        f"q={int(has_q)}",
        f"kq={kind}{int(has_q)}",
        "pos=" + ("only" if n == 1 else "first" if focus == 0 else "last" if not after else "mid"),
        "nb=" + bucket(len(before), (1, 2, 3, 6)),
        "na=" + bucket(len(after), (1, 2, 3, 6)),
        "cb=" + bucket(sum(len(s) for s in before), (1, 60, 200, 600)),
        "ca=" + bucket(sum(len(s) for s in after), (1, 60, 200, 600)),
        f"kpos={kind}" + ("0" if not before else "1") + ("0" if not after else "1"),
        f"sh={c.shape}",
        f"ksh={kind}{c.shape}",
        "ow=" + bucket(c.object_words, (1, 3, 6, 12)),
    ]
    if c.asks is not None:
        out.append(f"ask={int(c.asks)}")
        out.append(f"kask={kind}{int(c.asks)}")
    words = _words(target, 40)
    out.extend(f"f:{w}" for w in words)
    out.extend(f"f:{a}_{b}" for a, b in itertools.pairwise(words))
    out.extend(f"f0:{w}" for w in words[:3])
    if before:
        out.extend(f"p:{w}" for w in _words(before[-1], 12))
    if after:
        out.extend(f"n:{w}" for w in _words(after[0], 12))
    if question is not None:
        q = " ".join(question.replace("\u2019", "'").lower().split())
        qwords = _WORDS.findall(q)
        out.append(f"qw={qwords[0] if qwords else ''}")
        out.append(f"yn={int(c.yes_no)}")
        own = content_stems(q)
        said = content_stems(target)
        shared = len(own & said)
        out.append("ov=" + bucket(shared, (1, 2, 4)))
        out.append("ovr=" + bucket(int(10 * shared / len(own)) if own else 0, (1, 3, 6, 9)))
        out.append(f"kov={kind}" + bucket(shared, (1, 3)))
        rest = " ".join(before + after)
        out.append("ovc=" + bucket(len(own & content_stems(rest)) if rest else 0, (1, 2, 4)))
    return list(dict.fromkeys(out))


def hashed(names: Iterable[str], bits: int) -> list[int]:
    """The distinct feature indices of ``names`` in a ``2**bits`` table (CRC-32, stable)."""
    mask = (1 << bits) - 1
    return sorted({zlib.crc32(name.encode("utf-8")) & mask for name in names})


@dataclass(frozen=True)
class ScopeModel:
    """A trained logistic regression.

    Attributes:
        bits: Hash table size is ``2**bits``.
        weights: One weight per hashed feature.
        threshold: A candidate declines when its probability is at least this.
        meta: What the model was trained on (files, their hashes, settings).
    """

    bits: int
    weights: tuple[float, ...]
    threshold: float
    meta: dict[str, object]

    def score(self, names: Iterable[str]) -> float:
        """The log-odds that the candidate declines."""
        w = self.weights
        return math.fsum(w[i] for i in hashed(names, self.bits))

    def probability(self, names: Iterable[str]) -> float:
        """The probability that the candidate declines."""
        z = self.score(names)
        if z >= 0:
            return 1.0 / (1.0 + math.exp(-z))
        e = math.exp(z)
        return e / (1.0 + e)

    def declines(self, names: Iterable[str]) -> bool:
        """Whether the candidate declines."""
        return self.probability(names) >= self.threshold


def model_from_json(text: str) -> ScopeModel:
    """A :class:`ScopeModel` from the JSON of a weights file."""
    data = json.loads(text)
    bits = int(data["bits"])
    weights = tuple(float(x) for x in data["weights"])
    if len(weights) != 1 << bits:
        raise ValueError(f"scope model: {len(weights)} weights for {bits} bits")
    return ScopeModel(
        bits=bits, weights=weights, threshold=float(data["threshold"]), meta=dict(data["meta"])
    )


def load_model(path: Path) -> ScopeModel:
    """The model of a weights file (``python -m experiments.scope_model.train --write PATH``)."""
    return model_from_json(Path(path).read_text(encoding="utf-8"))


def model_verdict(
    text: str | None,
    model: ScopeModel,
    *,
    sentinel: str = DEFAULT_SENTINEL,
    question: str | None = None,
) -> Verdict:
    """:func:`~selfroute.parse_verdict` (not strict) with the scope model judging its candidate.

    Args:
        text: What the model wrote.
        model: The weights (``train.train_model()`` or :func:`load_model`).
        sentinel: The decline word the prompt asked for.
        question: The question, when known.

    Returns:
        The rules' verdict, with its decline/answer reading replaced by the model's when the
        output has a candidate decline sentence.
    """
    verdict = parse_verdict(text, sentinel=sentinel, question=question)
    candidate = scope_candidate(verdict, question)
    if candidate is None:
        return verdict
    declines = model.declines(feature_names(candidate))
    if declines == verdict.declined:
        return verdict
    if declines:
        focus = candidate.sentences[candidate.focus]
        return Verdict(kind=VerdictKind.REFUSAL, answer=verdict.answer, matched=focus)
    return Verdict(kind=VerdictKind.ANSWERED, answer=verdict.answer)
