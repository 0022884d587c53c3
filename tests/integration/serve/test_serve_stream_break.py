"""A streamed ``/v1/chat/completions`` reply whose upstream model stream breaks after some of the
answer was sent: the ``openai`` SDK raises the server's error event (no hang), ``/metrics`` counts
the failed stream, and the server answers the next request."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.cli.scripted import CLERK, is_rag, reader
from tests.integration.serve.conftest import Served
from tests.support._loopback import Reply, last_user_text
from tests.support.openai_server import ScriptedOpenAIServer

openai = pytest.importorskip("openai")

#: The long-context stream pauses before this event (0: the role, 1, 2: the first two words).
PAUSE_AT = 3


class BreakingServer(ScriptedOpenAIServer):
    """The scripted reader whose long-context streams drop the connection mid-answer while
    ``breaking`` is set: the events up to :data:`PAUSE_AT` are sent, the stream waits for
    ``resume``, sends one more event, then the socket closes without ending the chunked body."""

    def __init__(self) -> None:
        super().__init__(self._respond)
        self.breaking = threading.Event()

    def _respond(self, body: dict[str, Any]) -> Reply | str:
        reply = reader(body)
        if self.breaking.is_set() and not is_rag(last_user_text(body)):
            return dataclasses.replace(reply, pause_at=PAUSE_AT, pause_max_s=60.0)
        return reply

    def stream_events(self, done: Any) -> Iterable[bytes]:
        events = super().stream_events(done)
        if done.reply.pause_at is None:
            yield from events
            return
        for i, event in enumerate(events):
            if i > PAUSE_AT:
                raise ConnectionResetError("the model server went away mid-answer")
            yield event


@pytest.fixture(scope="module")
def breaking() -> Iterator[BreakingServer]:
    with BreakingServer() as server:
        yield server


@pytest.fixture(scope="module")
def served(store: Path, breaking: BreakingServer) -> Iterator[Served]:
    server = Served(store, breaking, "--lc-model", "reader-large")
    yield server
    assert server.stop() == 0, server.output()


def client(served: Served) -> Any:
    return openai.OpenAI(base_url=f"{served.url}/v1", api_key="unused", max_retries=0, timeout=60)


def stream_errors(served: Served) -> float:
    """``selfroute_stream_errors_total`` of collection ``main``, summed over its codes."""
    text = httpx.get(f"{served.url}/metrics", timeout=10).text
    pattern = r'^selfroute_stream_errors_total\{[^}]*collection="main"[^}]*\} (\S+)$'
    return sum(float(v) for v in re.findall(pattern, text, flags=re.M))


def test_a_stream_broken_after_answer_text_ends_with_an_error_the_sdk_raises(
    served: Served, breaking: BreakingServer
) -> None:
    before = stream_errors(served)
    breaking.reset()
    breaking.breaking.set()
    try:
        stream = client(served).chat.completions.create(
            model="selfroute", messages=[{"role": "user", "content": CLERK.question}], stream=True
        )
        shown = ""
        with pytest.raises(openai.APIError) as caught:
            for chunk in stream:
                for choice in chunk.choices:
                    shown += choice.delta.content or ""
                if shown and not breaking.resume.is_set():
                    breaking.resume.set()  # the client has text: now break the upstream stream
    finally:
        breaking.breaking.clear()
        breaking.resume.set()  # never leave the model server parked
    assert shown and CLERK.answer.startswith(shown), shown
    assert shown != CLERK.answer  # the stream broke before the whole answer
    assert isinstance(caught.value, openai.APIError)
    assert not isinstance(caught.value, openai.APIConnectionError), caught.value  # an error event
    body = caught.value.body
    assert isinstance(body, dict) and body.get("code") == "upstream_error", body
    assert "broke off" in str(body.get("message")), body
    assert stream_errors(served) == before + 1
    # the server is healthy: the same question, streamed and not, is answered in full
    assert httpx.get(f"{served.url}/healthz", timeout=10).json()["status"] == "ok"
    breaking.resume.clear()
    reply = client(served).chat.completions.create(
        model="selfroute", messages=[{"role": "user", "content": CLERK.question}]
    )
    assert reply.choices[0].message.content == CLERK.answer
    again = client(served).chat.completions.create(
        model="selfroute", messages=[{"role": "user", "content": CLERK.question}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in again if c.choices) == CLERK.answer
    assert stream_errors(served) == before + 1
    # the model calls are not logged one line each (stderr stays quiet, no per-question cost)
    assert "HTTP Request" not in served.output(), served.output()
