"""How a function's CPU time grows with its input, for the linearity tests of parsers and patterns.

Only for what cannot be counted (a regular expression's backtracking): anything else is checked by
counting its work. The clock is the calling thread's CPU time (``time.thread_time``), never the
wall clock, so time spent waiting for a core on a loaded machine is not measured; each timing is
the best of several, which drops the cache misses and interrupts another process adds. A growth
is a ratio of two sizes in the same run, never an absolute time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["cpu_seconds", "growth"]

#: Each timing repeats the call until it takes this much CPU time (the clock's noise is far less).
MIN_SECONDS = 0.002


def cpu_seconds(fn: Callable[[str], object], text: str, best_of: int = 5) -> float:
    """The best of ``best_of`` CPU timings of ``fn(text)``, each repeated to ``MIN_SECONDS``.

    Args:
        fn: The function timed.
        text: Its argument.
        best_of: How many timings to take the least of.

    Returns:
        CPU seconds per call.
    """
    clock = time.thread_time
    reps = 1
    while True:
        start = clock()
        for _ in range(reps):
            fn(text)
        if clock() - start >= MIN_SECONDS or reps >= 256:
            break
        reps *= 4
    best = float("inf")
    for _ in range(best_of):
        start = clock()
        for _ in range(reps):
            fn(text)
        best = min(best, (clock() - start) / reps)
    return best


def growth(
    fn: Callable[[str], object], make: Callable[[int], str], small: int, large: int
) -> float:
    """How many times longer ``fn`` takes on ``make(large)`` than on ``make(small)``.

    Args:
        fn: The function timed.
        make: Builds an input of about ``n`` characters.
        small: The small size.
        large: The large size.

    Returns:
        The ratio of the two CPU timings (linear: about ``large / small``; quadratic: its square).
    """
    return cpu_seconds(fn, make(large)) / max(cpu_seconds(fn, make(small)), 1e-7)
