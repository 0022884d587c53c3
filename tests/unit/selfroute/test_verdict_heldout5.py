"""Verdict parsing on RAGTruth set 5: 400 answers scored once blind, then promoted to tuning.

Another engineer drew 100 rows per model (``random.Random(20261217)``, none of the 1,731 rows of
the earlier RAGTruth sets) and labelled them by reading, without seeing the project's code, tests
or docs; a second engineer reproduced the sample and labelled the same rows independently, also
blind (``second/ragtruth_holdout5.jsonl``): they agree on 395 of 400 (Cohen's kappa 0.95). The
primary labels are the first engineer's.

The detector was frozen at the end of the set-4 round (``3bf0ddd``; its last change to
``selfroute/`` is ``468a2ff``) before either file was opened by anyone working on it, and the lead
scored the set once (docs/verdict.md): default 0.836 / 0.793, with the question 0.842 / 0.828,
RAGTruth sentinel 0.839 / 0.810, both 0.845 / 0.845, strict with the sentinel 0.909 / 0.690. The
detector from before that round (``45b9455``) scores 0.868 / 0.793 and 0.857 / 0.828 on it: the
round did not carry over. The set was then promoted to tuning data for the next round, so ``-s``
prints the misclassified outputs. The floors sit just under the held-out scores, so that a change
which loses accuracy here fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.verdict_scoring import RAGTRUTH_SENTINEL, DoubleLabelled

SET = DoubleLabelled(
    "ragtruth_holdout5",
    earlier=("ragtruth_labelled", "ragtruth_holdout2", "ragtruth_holdout3", "ragtruth_holdout4"),
)


def test_fixture_is_well_formed_and_disjoint_from_the_earlier_sets() -> None:
    SET.check_well_formed(split="holdout5", stratum="random5", declined=58)


def test_the_two_blind_labellers_agree() -> None:
    assert len(SET.agreed()) == 395


@pytest.mark.parametrize(
    ("settings", "min_precision", "min_recall"),
    [
        ({}, 0.83, 0.79),
        ({"with_question": True}, 0.84, 0.82),
        ({"sentinel": RAGTRUTH_SENTINEL}, 0.83, 0.81),
        ({"sentinel": RAGTRUTH_SENTINEL, "with_question": True}, 0.84, 0.84),
        ({"sentinel": RAGTRUTH_SENTINEL, "strict": True}, 0.90, 0.68),
    ],
    ids=["default", "question", "sentinel", "sentinel+question", "strict+sentinel"],
)
def test_precision_and_recall_on_ragtruth_set_5(
    settings: dict[str, Any], min_precision: float, min_recall: float
) -> None:
    c = SET.print_counts("RAGTruth set 5", **settings)
    print("\n" + c.summary(f"RAGTruth set 5 (tuning) {settings}"))
    assert (c.precision or 0.0) >= min_precision
    assert (c.recall or 0.0) >= min_recall
