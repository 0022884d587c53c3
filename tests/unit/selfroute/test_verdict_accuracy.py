"""The verdict parser's precision and recall on every labelled set of real outputs.

Each set, where it came from, how it was drawn and labelled, and its floors per setting are in
``tests/fixtures/refusals/MANIFEST.json``; a rule change that loses accuracy on any set fails here
(``-s`` prints the misclassified outputs).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.verdict_scoring import RAGTRUTH_SENTINEL, REFUSALS, confusion, load_rows

MANIFEST = json.loads((REFUSALS / "MANIFEST.json").read_text(encoding="utf-8"))
SETS: dict[str, dict[str, Any]] = {s["name"]: s for s in MANIFEST["sets"]}
#: Setting name -> ``confusion`` keyword arguments.
SETTINGS: dict[str, dict[str, Any]] = {
    "default": {},
    "strict": {"strict": True},
    "question": {"with_question": True},
    "sentinel": {"sentinel": RAGTRUTH_SENTINEL},
    "sentinel+question": {"sentinel": RAGTRUTH_SENTINEL, "with_question": True},
    "strict+sentinel": {"sentinel": RAGTRUTH_SENTINEL, "strict": True},
}


def _rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    rows = load_rows(REFUSALS / spec["file"])
    where = spec.get("where", {})
    return [r for r in rows if all(r.get(k) == v for k, v in where.items())]


def test_the_manifest_names_every_labelled_set() -> None:
    listed = {s["file"] for s in SETS.values()} | {
        s["second"] for s in SETS.values() if "second" in s
    }
    on_disk = {p.relative_to(REFUSALS).as_posix() for p in REFUSALS.rglob("*.jsonl")}
    assert listed == on_disk
    assert len(SETS) == len(MANIFEST["sets"])
    for spec in SETS.values():
        for field in ("source", "drawn", "labelled", "role"):
            assert spec[field], (spec["name"], field)
        # A blind set may wait for floors until it is scored on the detector it was kept for.
        assert spec["floors"] or spec["role"].startswith("blind"), spec["name"]
        assert set(spec["floors"]) <= set(SETTINGS), spec["name"]
        assert _rows(spec), spec["name"]


CASES = [
    pytest.param(name, setting, id=f"{name}-{setting}")
    for name, spec in SETS.items()
    for setting in spec["floors"]
]


@pytest.mark.parametrize(("name", "setting"), CASES)
def test_precision_and_recall(name: str, setting: str) -> None:
    spec = SETS[name]
    min_precision, min_recall = spec["floors"][setting]
    c = confusion(_rows(spec), **SETTINGS[setting])
    print("\n" + c.summary(f"{name} ({spec['role']}) {setting}"))
    assert (c.precision if c.precision is not None else 1.0) >= min_precision
    assert (c.recall if c.recall is not None else 1.0) >= min_recall
