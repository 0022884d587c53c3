"""Each Self-Route run's flow driver is closed as soon as it gives the result.

An async generator left suspended at its result is finalised by the event loop only later; until
then it holds the flow, whose long-context prompt copies the whole document.
"""

from __future__ import annotations

from typing import Any

import pytest

import selfroute._flow._drivers as drivers
import selfroute.eval._runner as runner
from selfroute import RouteConfig
from selfroute.eval import OracleReader, evaluate
from tests.unit.selfroute.eval._fakes import ITEMS


def test_the_driver_is_closed_before_the_run_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[Any] = []
    closed_when_recorded: list[bool] = []
    original_drive, original_record = drivers.adrive, runner._from_result

    def adrive(*args: Any, **kwargs: Any) -> Any:
        events = original_drive(*args, **kwargs)
        started.append(events)
        return events

    def from_result(*args: Any, **kwargs: Any) -> None:
        closed_when_recorded.append(started[-1].ag_frame is None)
        original_record(*args, **kwargs)

    monkeypatch.setattr(drivers, "adrive", adrive)  # the driver arun_flow uses
    monkeypatch.setattr(runner, "adrive", adrive, raising=False)
    monkeypatch.setattr(runner, "_from_result", from_result)
    summary = evaluate(
        ITEMS,
        reader=OracleReader(),
        ks=[1, 3],
        methods=["self_route"],
        config=RouteConfig(chunk_words=20),
        cache=False,
    )
    assert len(started) == len(closed_when_recorded) == len(summary.records) == 2 * len(ITEMS)
    assert all(closed_when_recorded)
