"""Finding 11 of issue #16: no call hangs.

* ``deadline_s`` bounds the whole call, enforced by the drivers across every step: a server that
  drips one byte every 0.3 s defeats the client's per-read ``timeout=1`` (the request would take
  minutes), but the call raises the stage's error once the deadline passes, invoke and stream,
  sync and async, both adapters; it never escalates.
* The store timeout (``retrieval_timeout_s``) bounds loading the parent documents, and the
  counterfactual's load is best effort (at most 2 s): a store frozen after retrieval neither
  hangs the long-context step nor holds a finished answer.
* A timed-out async store call leaves no thread in the event loop's default executor: an
  unrelated ``run_in_executor`` after eight hung, timed-out calls runs at once.

Real ``ChatOpenAI`` / LlamaIndex ``OpenAI`` against the loopback server.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import selfroute as sr
from tests.integration.reliability._adapters import ADAPTERS, MODES, ask, llamaindex_engine
from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text
from tests.support.clients import chat_openai
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.unit.reliability._fakes import DOCUMENT

QUESTION = "How long did Mara Holt keep the lamp?"
DEADLINE_S = 2.0
DRIP = Reply("Thirty-one years.", kind="drip", drip_s=0.3)
CLIENT = {"timeout": 1.0}  # per read: the drip never trips it


def script(rag: Reply | str, lc: Reply | str = "In 1901.") -> Any:
    def responder(body: dict[str, Any]) -> Reply | str:
        return rag if is_rag(last_user_text(body)) else lc

    return responder


def dripping_stream(server: ScriptedOpenAIServer) -> None:
    """Streamed replies drip too: one word every 0.3 s, for 200 words."""
    server.token_delay_s = 0.3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_deadline_bounds_a_dripping_rag_call(
    openai_server: ScriptedOpenAIServer, adapter: str, mode: str
) -> None:
    openai_server.responder = script(Reply(" ".join(["w"] * 200)) if "stream" in mode else DRIP)
    dripping_stream(openai_server)
    started = time.monotonic()
    with pytest.raises(sr.ModelOutputError, match="deadline") as info:
        ask(adapter, openai_server, QUESTION, mode, client=CLIENT, deadline_s=DEADLINE_S)
    assert info.value.context["deadline_s"] == DEADLINE_S
    assert not isinstance(info.value, sr.ModelConfigurationError)
    # the deadline, plus building the engine (LlamaIndex embeds the document first)
    assert time.monotonic() - started < DEADLINE_S + 8
    lc = [b for b in openai_server.requests if not is_rag(last_user_text(b))]
    assert lc == []  # out of time: never escalated


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_deadline_bounds_a_dripping_long_context_call_and_keeps_the_partial(
    openai_server: ScriptedOpenAIServer, adapter: str, mode: str
) -> None:
    openai_server.responder = script("unanswerable", DRIP)
    with pytest.raises(sr.LongContextError, match="deadline") as info:
        ask(adapter, openai_server, QUESTION, mode, client=CLIENT, deadline_s=DEADLINE_S)
    partial = info.value.partial
    assert partial.rag_answer == "unanswerable" and partial.steps[0].usage.input_tokens > 0
    assert partial.latency_s < DEADLINE_S + 1


def test_without_a_deadline_the_drip_is_not_cut(openai_server: ScriptedOpenAIServer) -> None:
    """Control: the same drip and client timeout with no deadline is still running after 4 s."""
    openai_server.responder = script(DRIP)
    lcs = pytest.importorskip("langchain_selfroute")
    route = lcs.SelfRoute(llm=chat_openai(openai_server, timeout=1.0), document=DOCUMENT)
    done = threading.Event()

    def run() -> None:
        try:
            route.invoke(QUESTION)
        except Exception:  # the server is stopped at teardown
            pass
        finally:
            done.set()

    threading.Thread(target=run, daemon=True).start()
    assert not done.wait(4.0)  # the client's timeout alone does not bound it
    openai_server.stop()  # ends the drip
    assert done.wait(10)


class FrozenLoader:
    """A parent-document loader whose store froze after retrieval (released at teardown)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, question: str, nodes: Any) -> list[str]:
        self.calls += 1
        self.release.wait(30)
        return [DOCUMENT]


@pytest.fixture
def frozen() -> Any:
    loader = FrozenLoader()
    yield loader
    loader.release.set()


def over_frozen_store(server: ScriptedOpenAIServer, frozen: FrozenLoader, timeout_s: float) -> Any:
    """A LlamaIndex engine whose long context comes from the frozen store."""
    return llamaindex_engine(server, {}, False, long_context=frozen, retrieval_timeout_s=timeout_s)


def test_store_timeout_bounds_parent_loading_and_leaves_the_executor_free(
    openai_server: ScriptedOpenAIServer, frozen: FrozenLoader
) -> None:
    openai_server.responder = script("unanswerable")
    engine = over_frozen_store(openai_server, frozen, 0.3)

    async def main() -> tuple[list[Any], float]:
        outcomes = await asyncio.gather(
            *(engine.aquery(f"{QUESTION} ({i})") for i in range(8)), return_exceptions=True
        )
        t0 = time.monotonic()
        value = await asyncio.wait_for(
            asyncio.get_running_loop().run_in_executor(None, lambda: 42), 10
        )
        assert value == 42
        return outcomes, time.monotonic() - t0

    started = time.monotonic()
    outcomes, executor_wait = asyncio.run(main())
    assert time.monotonic() - started < 8
    assert frozen.calls == 8
    for outcome in outcomes:
        assert isinstance(outcome, sr.LongContextError)
        assert "did not answer within 0.3s" in str(outcome)
        assert outcome.partial.rag_answer == "unanswerable"
    assert executor_wait < 1.0  # the hung calls hold no thread of the default executor


def test_counterfactual_on_a_frozen_store_never_holds_the_answer(
    openai_server: ScriptedOpenAIServer, frozen: FrozenLoader
) -> None:
    openai_server.responder = script("Thirty-one years.")
    engine = over_frozen_store(openai_server, frozen, 10.0)
    started = time.monotonic()
    response = engine.query(QUESTION)
    held = time.monotonic() - started
    pytest.importorskip("llamaindex_selfroute")
    import llamaindex_selfroute as lis

    result = lis.get_route_result(response)
    assert (result.route, result.answer) == (sr.Route.RAG, "Thirty-one years.")
    assert result.long_context_tokens is None  # pricing gave up, the answer did not wait
    assert result.latency_s < 3.0 and held < 10


def test_cli_deadline_bounds_the_question(
    openai_server: ScriptedOpenAIServer,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli = pytest.importorskip("selfroute.cli")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lamp.txt").write_text(DOCUMENT)
    assert cli.main(["index", "docs", "--embedding", "offline", "--progress", "never"]) == 0
    openai_server.responder = script(DRIP)
    base = ["ask", QUESTION, "--base-url", openai_server.base_url, "--model", "m"]
    started = time.monotonic()
    status = cli.main([*base, "--timeout", "1", "--max-retries", "0", "--deadline", "2"])
    assert status == 1 and time.monotonic() - started < 10
    assert "deadline" in capsys.readouterr().err
    assert cli.main([*base, "--retrieval-timeout", "0", "--deadline", "2"]) == 2  # must be > 0
