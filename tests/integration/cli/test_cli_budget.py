"""``--max-lc-calls`` / ``--max-lc-tokens``: the long-context budget of ``ask``, through the real
command against the loopback model server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.cli.scripted import CLERK
from tests.integration.cli.test_cli_e2e import _env, cli
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


def _ask(
    indexed: tuple[Path, Path], server: ScriptedOpenAIServer, *args: str, **env: str
) -> tuple[int, str, str]:
    _, store = indexed
    done = cli(
        "ask", CLERK.question, *args, "--store", str(store), "--base-url", server.base_url,
        "--model", "reader-small", cwd=store.parent, env=_env(**env),
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_max_lc_calls_refuses_the_long_context_call_and_says_how_to_raise_it(
    indexed: tuple[Path, Path], reader_server: ScriptedOpenAIServer
) -> None:
    code, out, err = _ask(indexed, reader_server, "--max-lc-calls", "0")
    assert code == 0, err
    assert reader_server.calls == 1  # the RAG call only
    assert "[over_budget]" in out
    assert "the long-context call was not made" in out and "The limit is --max-lc-calls" in out
    assert "SELFROUTE_MAX_LC_CALLS" in out and "max_lc_calls in selfroute.toml" in out


def test_max_lc_tokens_from_the_environment_names_the_token_limit(
    indexed: tuple[Path, Path], reader_server: ScriptedOpenAIServer
) -> None:
    code, out, err = _ask(indexed, reader_server, "--json", SELFROUTE_MAX_LC_TOKENS="100")
    assert code == 0, err
    data = json.loads(out)
    assert data["reason"] == "over_budget" and reader_server.calls == 1
    assert "--max-lc-tokens" in data["budget_hint"]


def test_a_budget_large_enough_lets_the_call_run(
    indexed: tuple[Path, Path], reader_server: ScriptedOpenAIServer
) -> None:
    code, out, err = _ask(
        indexed, reader_server, "--json", "--max-lc-calls", "1", "--max-lc-tokens", "100000"
    )
    assert code == 0, err
    data = json.loads(out)
    assert data["route"] == "long_context" and data["answer"] == CLERK.answer
    assert "budget_hint" not in data and reader_server.calls == 2
