"""Blocking calls from async code without the event loop's default executor.

``asyncio.to_thread`` runs the call on the loop's default executor, a small shared pool (six
threads on a two-core machine). A store that hangs keeps its thread even after the awaiting
coroutine is cancelled by a timeout, so a few hung store calls exhaust the pool and every
unrelated ``run_in_executor`` in the process waits behind them. :func:`in_thread` runs each call on
its own daemon thread instead: a timed-out call leaves nothing in the shared pool (its thread ends
when the store call returns or fails).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["in_thread"]

T = TypeVar("T")


async def in_thread(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` on a new daemon thread, awaited; the caller's context variables are seen.

    Cancelling the awaiting task (a timeout) stops waiting at once; the thread's result or error
    is then dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def run() -> None:
        try:
            value = context.run(func, *args)
        except BaseException as exc:  # handed over to the awaiting task
            outcome: tuple[Any, BaseException | None] = (None, exc)
        else:
            outcome = (value, None)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name="selfroute-io", daemon=True).start()
    return await future
