"""The long-context budget."""

from __future__ import annotations

import threading

import pytest

import selfroute as sr


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_per_call_cap() -> None:
    budget = sr.LongContextBudget(max_tokens_per_call=1000)
    assert budget.acquire(1000).allowed
    refused = budget.acquire(1001)
    assert not refused.allowed and "1001 tokens" in refused.reason and "1000" in refused.reason
    assert budget.snapshot()["calls"] == 1  # a refused call reserves nothing


def test_calls_per_window_with_a_fake_clock() -> None:
    clock = Clock()
    budget = sr.LongContextBudget(max_calls=2, window_seconds=60, clock=clock)
    assert budget.acquire(10).allowed and budget.acquire(10).allowed
    third = budget.acquire(10)
    assert not third.allowed and "2 long-context calls already made in the last 60s" in third.reason
    clock.now += 59.9
    assert not budget.acquire(10).allowed
    clock.now += 0.1  # the first two calls leave the window
    assert budget.acquire(10).allowed
    assert budget.snapshot()["calls"] == 1


def test_tokens_per_window_with_a_fake_clock() -> None:
    clock = Clock()
    budget = sr.LongContextBudget(max_tokens=1000, window_seconds=10, clock=clock)
    assert budget.acquire(600).allowed
    refused = budget.acquire(500)
    assert not refused.allowed and "600 long-context tokens already spent" in refused.reason
    assert budget.acquire(400).allowed
    clock.now += 5
    assert not budget.acquire(1).allowed
    clock.now += 5
    assert budget.acquire(1000).allowed
    snap = budget.snapshot()
    assert snap == {
        "calls": 1,
        "tokens": 1000,
        "max_calls": None,
        "max_tokens": 1000,
        "window_seconds": 10,
    }


def test_lifetime_window() -> None:
    clock = Clock()
    budget = sr.LongContextBudget(max_calls=1, clock=clock)
    assert budget.acquire(1).allowed
    clock.now += 1e9
    assert not budget.acquire(1).allowed


def test_no_limits_allows_everything() -> None:
    budget = sr.LongContextBudget()
    assert all(budget.acquire(10**9).allowed for _ in range(100))


def test_thread_safety_never_overspends() -> None:
    budget = sr.LongContextBudget(max_calls=50, max_tokens=10_000)
    allowed: list[bool] = []
    lock = threading.Lock()
    barrier = threading.Barrier(16)

    def worker() -> None:
        barrier.wait()
        for _ in range(20):
            ok = budget.acquire(100).allowed
            with lock:
                allowed.append(ok)

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 50  # exactly the cap, never more
    assert budget.snapshot()["tokens"] == 5000


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_calls": -1}, "max_calls"),
        ({"max_tokens": 1.5}, "max_tokens"),
        ({"max_tokens_per_call": "10"}, "max_tokens_per_call"),
        ({"window_seconds": 0}, "window_seconds"),
    ],
)
def test_bad_settings(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(sr.ConfigurationError, match=message):
        sr.LongContextBudget(**kwargs)  # type: ignore[arg-type]
