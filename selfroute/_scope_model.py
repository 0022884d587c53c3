"""A learned scope model: a logistic regression that corrects the decline rules where they are weakest.

The rules of :mod:`selfroute._verdict` find a candidate decline sentence ("The passages do not
mention the cause.") and decide by hand-written readings whether it declines the question or only
a narrower point of an answer. This module scores the same decision with a small logistic regression
over hashed binary features of the candidate sentence, its neighbours, its position, the amount of
text around it, its overlap with the question and the rules' own verdict. It is pure Python: the
weights ship as ``selfroute/data/verdict_scope_model.json`` (rebuilt byte for byte by
``benchmarks/train_verdict_model.py`` from the vendored labelled fixtures) and are read once, on
first use.

It is *not* the default of :func:`~selfroute.parse_verdict`: in leave-one-set-out cross-validation
over the RAGTruth sets it did not beat the rules (``docs/verdict.md``, "A learned scope model").
:func:`model_verdict` applies it, for measurement (``benchmarks/verdict_eval.py``). The model only
classifies; the flow decides what a decline means.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources

from selfroute._decline import content_stems
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict import (
    ScopeCandidate,
    Verdict,
    VerdictKind,
    parse_verdict,
    scope_candidate,
)

__all__ = [
    "MODEL_FILE",
    "ScopeModel",
    "bucket",
    "feature_names",
    "hashed",
    "load_model",
    "model_from_json",
    "model_verdict",
]

#: The weights file under ``selfroute/data``.
MODEL_FILE = "verdict_scope_model.json"

_WORDS = re.compile(r"[a-z0-9']+")


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
    """The shipped logistic regression.

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
        raise ValueError(f"{MODEL_FILE}: {len(weights)} weights for {bits} bits")
    return ScopeModel(
        bits=bits, weights=weights, threshold=float(data["threshold"]), meta=dict(data["meta"])
    )


@functools.lru_cache(maxsize=1)
def load_model() -> ScopeModel:
    """The shipped model (read once)."""
    text = (
        resources.files("selfroute")
        .joinpath("data")
        .joinpath(MODEL_FILE)
        .read_text(encoding="utf-8")
    )
    return model_from_json(text)


def model_verdict(
    text: str | None,
    *,
    sentinel: str = DEFAULT_SENTINEL,
    question: str | None = None,
    model: ScopeModel | None = None,
) -> Verdict:
    """:func:`~selfroute.parse_verdict` (not strict) with the scope model judging its candidate.

    Not the default of :func:`~selfroute.parse_verdict`: in leave-one-set-out cross-validation it
    did not beat the rules (``docs/verdict.md``, "A learned scope model").

    Args:
        text: What the model wrote.
        sentinel: The decline word the prompt asked for.
        question: The question, when known.
        model: The weights (default: the shipped model).

    Returns:
        The rules' verdict, with its decline/answer reading replaced by the model's when the
        output has a candidate decline sentence.
    """
    verdict = parse_verdict(text, sentinel=sentinel, question=question)
    candidate = scope_candidate(verdict, question)
    if candidate is None:
        return verdict
    declines = (model or load_model()).declines(feature_names(candidate))
    if declines == verdict.declined:
        return verdict
    if declines:
        focus = candidate.sentences[candidate.focus]
        return Verdict(kind=VerdictKind.REFUSAL, answer=verdict.answer, matched=focus)
    return Verdict(kind=VerdictKind.ANSWERED, answer=verdict.answer)
