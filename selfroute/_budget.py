"""A long-context budget: caps how often and how much the expensive call may run."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from selfroute._errors import ConfigurationError

__all__ = ["BudgetDecision", "LongContextBudget"]


@dataclass(frozen=True)
class BudgetDecision:
    """The budget's answer for one long-context call.

    Attributes:
        allowed: Whether the call may run.
        reason: Why not, when refused (which limit was hit, with numbers).
    """

    allowed: bool
    reason: str = ""


class LongContextBudget:
    """Limits long-context calls, so a hostile document or a flood of questions cannot run up an
    unbounded bill.

    Thread-safe and shareable between instances and adapters. Limits that are ``None`` do not apply.

    Args:
        max_tokens_per_call: Refuse a single LC call whose prompt exceeds this many tokens.
        max_calls: At most this many LC calls per ``window_seconds``.
        max_tokens: At most this many LC input tokens per ``window_seconds``.
        window_seconds: Length of the sliding window; ``None`` means the lifetime of the budget.
        clock: Time source (for tests).
    """

    def __init__(
        self,
        *,
        max_tokens_per_call: int | None = None,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        window_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        for name, value in (
            ("max_tokens_per_call", max_tokens_per_call),
            ("max_calls", max_calls),
            ("max_tokens", max_tokens),
        ):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigurationError(
                    f"{name} must be a non-negative integer or None, got {value!r}"
                )
        if window_seconds is not None and window_seconds <= 0:
            raise ConfigurationError(
                f"window_seconds must be positive or None, got {window_seconds!r}"
            )
        self.max_tokens_per_call = max_tokens_per_call
        self.max_calls = max_calls
        self.max_tokens = max_tokens
        self.window_seconds = window_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._events: deque[tuple[float, int]] = deque()

    def _expire(self, now: float) -> None:
        if self.window_seconds is None:
            return
        while self._events and now - self._events[0][0] >= self.window_seconds:
            self._events.popleft()

    def acquire(self, tokens: int) -> BudgetDecision:
        """Reserve one LC call of ``tokens`` input tokens, or refuse it."""
        if self.max_tokens_per_call is not None and tokens > self.max_tokens_per_call:
            return BudgetDecision(
                False,
                f"the long-context prompt needs {tokens} tokens, over the per-call cap of "
                f"{self.max_tokens_per_call}",
            )
        with self._lock:
            now = self._clock()
            self._expire(now)
            window = (
                f" in the last {self.window_seconds:g}s" if self.window_seconds is not None else ""
            )
            if self.max_calls is not None and len(self._events) >= self.max_calls:
                return BudgetDecision(
                    False,
                    f"{len(self._events)} long-context calls already made{window} (cap {self.max_calls})",
                )
            used = sum(t for _, t in self._events)
            if self.max_tokens is not None and used + tokens > self.max_tokens:
                return BudgetDecision(
                    False,
                    f"{used} long-context tokens already spent{window}; {tokens} more would pass "
                    f"the cap of {self.max_tokens}",
                )
            self._events.append((now, tokens))
            return BudgetDecision(True)

    def snapshot(self) -> dict[str, float | int | None]:
        """Current use: calls and tokens in the window."""
        with self._lock:
            self._expire(self._clock())
            return {
                "calls": len(self._events),
                "tokens": sum(t for _, t in self._events),
                "max_calls": self.max_calls,
                "max_tokens": self.max_tokens,
                "window_seconds": self.window_seconds,
            }
