"""RAGTruth sets 3-10, each labelled blind by two labellers: form, agreement, and the clear rows.

Each row's ``ambiguous`` flag is the first labeller's own "I hesitated"; the clear rows (flag
false) are scored separately below. Where each set came from, its history and its floors:
``tests/fixtures/refusals/MANIFEST.json`` (scored by ``test_verdict_accuracy.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.verdict_scoring import RAGTRUTH_SENTINEL, DoubleLabelled, confusion

#: The settings each set is scored under: id -> ``parse_verdict`` keyword arguments.
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "question": {"with_question": True},
    "sentinel": {"sentinel": RAGTRUTH_SENTINEL},
    "sentinel+question": {"sentinel": RAGTRUTH_SENTINEL, "with_question": True},
    "strict+sentinel": {"sentinel": RAGTRUTH_SENTINEL, "strict": True},
}
#: Every RAGTruth fixture in the order it was drawn: a set shares no row with those before it.
DRAWN = (
    "ragtruth_labelled",
    "ragtruth_holdout2",
    "ragtruth_holdout3",
    "ragtruth_holdout4",
    "ragtruth_holdout5",
    "ragtruth_holdout6",
    "ragtruth_holdout7",
    "ragtruth_holdout8",
    "ragtruth_holdout9",
)
#: Set 10 is every row left: not balanced by model.
SET_10_MODELS = {
    "llama-2-13b-chat": 68, "llama-2-70b-chat": 63, "llama-2-7b-chat": 69, "mistral-7B-instruct": 25,
}  # fmt: skip


@dataclass(frozen=True)
class Set:
    """One twice-labelled set: its fixture, size facts and (precision, recall) floors per setting."""

    number: int
    declined: int
    agreed: int
    floors: dict[str, tuple[float, float]]
    per_model: dict[str, int] | None = None  # rows per model; None: 100 each

    @property
    def labelled(self) -> DoubleLabelled:
        name = f"ragtruth_holdout{self.number}"
        return DoubleLabelled(name, earlier=DRAWN[: self.number - 1])


def _floors(*pairs: tuple[float, float]) -> dict[str, tuple[float, float]]:
    return dict(zip(SETTINGS, pairs, strict=True))


SETS = {
    3: Set(3, 64, 398, _floors((0.95, 0.90), (0.95, 0.92), (0.95, 0.90), (0.95, 0.92), (0.95, 0.70))),
    4: Set(4, 66, 396, _floors((0.92, 0.92), (0.96, 0.93), (0.92, 0.92), (0.96, 0.93), (0.91, 0.65))),
    5: Set(5, 58, 395, _floors((0.84, 0.82), (0.85, 0.87), (0.84, 0.82), (0.85, 0.87), (0.90, 0.68))),
    6: Set(6, 57, 399, _floors((0.85, 0.85), (0.85, 0.85), (0.85, 0.85), (0.85, 0.85), (0.89, 0.61))),
    7: Set(7, 69, 397, _floors((0.86, 0.92), (0.86, 0.91), (0.84, 0.94), (0.84, 0.92), (0.90, 0.65))),
    8: Set(8, 63, 396, _floors((0.85, 0.90), (0.85, 0.92), (0.85, 0.90), (0.85, 0.92), (0.87, 0.77))),
    9: Set(9, 66, 400, _floors((0.95, 0.92), (0.95, 0.90), (0.95, 0.92), (0.95, 0.90), (0.98, 0.78))),
    10: Set(10, 39, 223, _floors((0.76, 0.92), (0.76, 0.89), (0.74, 0.92), (0.74, 0.89), (0.75, 0.79)),
            SET_10_MODELS),
}  # fmt: skip
#: Pooled over sets 3-10, the rows no first labeller flagged ambiguous: (precision, recall) floors.
CLEAR_FLOORS = {"default": (0.955, 0.965), "question": (0.96, 0.965)}


@pytest.mark.parametrize("number", SETS)
def test_fixture_is_well_formed_and_disjoint_from_the_earlier_sets(number: int) -> None:
    spec = SETS[number]
    spec.labelled.check_well_formed(
        split=f"holdout{number}",
        stratum=f"random{number}",
        declined=spec.declined,
        per_model=spec.per_model,
    )


@pytest.mark.parametrize("number", SETS)
def test_the_two_blind_labellers_agree(number: int) -> None:
    assert len(SETS[number].labelled.agreed()) == SETS[number].agreed


@pytest.mark.parametrize("setting", CLEAR_FLOORS)
def test_precision_and_recall_on_the_clear_rows(setting: str) -> None:
    """The rows the first labeller did not hesitate over, pooled: where the rules are expected to
    be right (the flagged rows are the labellers' borderline calls, scored apart)."""
    rows = [row for spec in SETS.values() for row in spec.labelled.clear()]
    flagged = [row for spec in SETS.values() for row in spec.labelled.flagged()]
    assert len(rows) + len(flagged) == sum(len(spec.labelled.rows) for spec in SETS.values())
    settings = SETTINGS[setting]
    c = confusion(rows, **settings)
    print("\n" + c.summary(f"RAGTruth sets 3-10, clear rows (tuning) {settings}"))
    print(confusion(flagged, **settings).summary(f"... flagged rows {settings}", limit=0))
    min_precision, min_recall = CLEAR_FLOORS[setting]
    assert (c.precision or 0.0) >= min_precision
    assert (c.recall or 0.0) >= min_recall
