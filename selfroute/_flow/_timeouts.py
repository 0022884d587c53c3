"""Time limits on one step's call: the bounded calls both drivers and the batch job's executors use.

A sync call that overruns is abandoned (it keeps running in a daemon thread: a hung socket cannot
be interrupted from outside); an async one is cancelled; a stream is closed at its next chunk.
The error is a :class:`TimeoutError` naming what did not answer (:func:`step_subject`).
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from typing import Any, TypeVar

from selfroute._flow._steps import GenerationChunk, LoadLongContext, Retrieve, Step

T = TypeVar("T")

__all__ = [
    "abounded",
    "abounded_stream",
    "bounded",
    "bounded_stream",
    "step_subject",
    "timeout_error",
]


def timeout_error(what: str, timeout_s: float) -> TimeoutError:
    """The error of ``what`` (see :func:`step_subject`) not answering within ``timeout_s``."""
    return TimeoutError(f"{what} did not answer within {timeout_s:g}s")


def step_subject(step: Step) -> str:
    """What answers ``step``, as a time-out message names it ("the retriever", ...)."""
    if isinstance(step, Retrieve):
        return "the retriever"
    if isinstance(step, LoadLongContext):
        return "the long-context loader"
    return "the model"


def bounded(call: Callable[[], T], timeout_s: float | None, what: str) -> T:
    """``call()``, abandoned after ``timeout_s`` (it keeps running in a daemon thread: a hung
    socket cannot be interrupted from outside)."""
    if timeout_s is None:
        return call()
    box: dict[str, Any] = {}
    done = threading.Event()
    context = contextvars.copy_context()  # callbacks and tracing see the caller's context

    def run() -> None:
        try:
            box["value"] = context.run(call)
        except BaseException as exc:  # handed over to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="selfroute-step", daemon=True).start()
    if not done.wait(timeout_s):
        raise timeout_error(what, timeout_s)
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result


def bounded_stream(
    chunks: Iterable[GenerationChunk], timeout_s: float | None
) -> Iterable[GenerationChunk]:
    """``chunks``, all of them within ``timeout_s`` (read by a daemon thread; on time-out the
    thread closes the stream at its next chunk, which closes the HTTP response).

    With no time limit ``chunks`` itself, not a generator around it (a layer would cost every
    chunk of every stream a generator resumption)."""
    if timeout_s is None:
        return chunks
    return _bounded_stream(chunks, timeout_s)


def _bounded_stream(
    chunks: Iterable[GenerationChunk], timeout_s: float
) -> Iterator[GenerationChunk]:
    """:func:`bounded_stream` with a time limit."""
    deadline = time.perf_counter() + timeout_s
    pipe: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    context = contextvars.copy_context()

    def run() -> None:
        iterator = iter(chunks)
        try:
            for chunk in iterator:
                if stop.is_set():
                    break
                pipe.put(("chunk", chunk))
            pipe.put(("end", None))
        except BaseException as exc:  # handed over to the caller's thread
            pipe.put(("error", exc))
        finally:
            close = getattr(iterator, "close", None)
            if callable(close):
                close()

    threading.Thread(target=context.run, args=(run,), name="selfroute-stream", daemon=True).start()
    try:
        while True:
            try:
                kind, item = pipe.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                raise timeout_error("the model", timeout_s) from None
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item
    finally:
        stop.set()


async def abounded(call: Awaitable[T], timeout_s: float | None, what: str) -> T:
    """``await call``, cancelled after ``timeout_s``."""
    if timeout_s is None:
        return await call
    try:
        return await asyncio.wait_for(call, timeout_s)
    except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
        raise timeout_error(what, timeout_s) from None


def abounded_stream(
    chunks: AsyncIterator[GenerationChunk], timeout_s: float | None
) -> AsyncIterator[GenerationChunk]:
    """``chunks``, all of them within ``timeout_s`` (the stream is closed on time-out).

    With no time limit ``chunks`` itself (see :func:`bounded_stream`)."""
    if timeout_s is None:
        return chunks
    return _abounded_stream(chunks, timeout_s)


async def _abounded_stream(
    chunks: AsyncIterator[GenerationChunk], timeout_s: float
) -> AsyncIterator[GenerationChunk]:
    """:func:`abounded_stream` with a time limit."""
    deadline = time.perf_counter() + timeout_s
    iterator = chunks.__aiter__()
    try:
        while True:
            left = max(0.0, deadline - time.perf_counter())
            try:
                chunk = await asyncio.wait_for(iterator.__anext__(), left)
            except StopAsyncIteration:
                return
            except asyncio.TimeoutError:
                raise timeout_error("the model", timeout_s) from None
            yield chunk
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()
