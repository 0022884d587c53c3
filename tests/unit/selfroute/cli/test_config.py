"""Settings precedence (flag > SELFROUTE_* > selfroute.toml > default) and the documented table."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from selfroute import ConfigurationError
from selfroute.cli import build_parser
from selfroute.cli._config import SETTINGS, load_toml, resolve, settings_table

DOCS = Path(__file__).parents[4] / "docs" / "cli.md"


def _args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(
    ("flag", "env", "file", "expected", "source"),
    [
        ("7", "6", 4, 7, "flag"),
        (None, "6", 4, 6, "env"),
        (None, None, 4, 4, "file"),
        (None, None, None, 5, "default"),
    ],
)
def test_precedence(
    flag: str | None, env: str | None, file: int | None, expected: int, source: str
) -> None:
    argv = ["ask", "q"] + (["--k", flag] if flag else [])
    environ = {"SELFROUTE_K": env} if env else {}
    config = {"k": file} if file is not None else {}
    settings = resolve(_args(*argv), "ask", environ=environ, config=config)
    assert settings.k == expected
    assert settings.source("k") == source
    assert settings.is_set("k") is (source != "default")


def test_every_setting_resolves_from_the_environment() -> None:
    samples = {
        "store": "/tmp/s",
        "collection": "docs",
        "chroma_url": "http://127.0.0.1:8000",
        "embedding": "offline",
        "embedding_base_url": "http://127.0.0.1:1/v1",
        "embedding_concurrency": "4",
        "chunk_words": "200",
        "follow_symlinks": "yes",
        "max_file_mb": "2.5",
        "progress": "never",
        "retrieval": "bm25",
        "k": "3",
        "model": "google:gemini-2.5-flash",
        "lc_model": "openai:gpt-4.1",
        "base_url": "http://127.0.0.1:2/v1",
        "lc_base_url": "http://127.0.0.1:3/v1",
        "temperature": "0.5",
        "timeout": "30",
        "max_retries": "0",
        "retrieval_timeout": "5",
        "deadline": "60",
        "max_question_tokens": "64",
        "max_lc_calls": "3",
        "max_lc_tokens": "50000",
        "lc_window": "128000",
        "overflow": "truncate_middle",
        "strict": "true",
        "decline_pattern": "^keine angaben",
        "k_ladder": "10,20",
        "pre_route": "on",
        "min_top_score": "2.5",
        "score_scale": "rrf",
        "verdict": "auto",
        "grounded": "1",
        "speculate_below": "0.4",
        "prices": "gpt-4o-mini=0.15/0.6",
        "trace": "true",
        "max_question_chars": "900",
        "host": "0.0.0.0",
        "port": "9000",
        "keys": "/tmp/keys.json",
        "max_concurrency": "4",
        "queue_timeout": "2.5",
        "max_body_kb": "64",
        "shutdown_timeout": "5",
    }
    assert set(samples) == {s.name for s in SETTINGS}
    environ = {f"SELFROUTE_{k.upper()}": v for k, v in samples.items()}
    for command in ("index", "ask", "stats", "mcp", "serve"):
        words = {"index": ["x"], "ask": ["q"]}.get(command, [])
        settings = resolve(_args(command, *words), command, environ=environ)
        for s in SETTINGS:
            if command in s.commands:
                assert settings.source(s.name) == "env", s.name
    ask = resolve(_args("ask", "q"), "ask", environ=environ)
    assert ask.strict is True and ask.k == 3 and ask.temperature == 0.5 and ask.max_retries == 0
    assert (ask.k_ladder, ask.pre_route, ask.min_top_score) == ((10, 20), True, 2.5)
    assert (ask.verdict, ask.grounded) == ("auto", True)
    assert (ask.retrieval_timeout, ask.deadline) == (5.0, 60.0)
    assert ask.trace is True
    serve = resolve(_args("serve"), "serve", environ=environ)
    assert (serve.host, serve.port, serve.keys, serve.max_concurrency) == (
        "0.0.0.0",
        9000,
        "/tmp/keys.json",
        4,
    )
    assert (serve.queue_timeout, serve.deadline, serve.max_body_kb) == (2.5, 60.0, 64)
    assert (serve.shutdown_timeout, serve.max_question_chars, serve.k) == (5.0, 900, 3)
    mcp = resolve(_args("mcp"), "mcp", environ=environ)
    assert (mcp.max_question_chars, mcp.collection, mcp.embedding) == (900, "docs", "offline")
    assert not hasattr(mcp, "port")  # serve-only settings stay off mcp
    index = resolve(_args("index", "x"), "index", environ=environ)
    assert index.follow_symlinks is True and index.chunk_words == 200 and index.max_file_mb == 2.5


def test_boolean_flags_beat_the_environment() -> None:
    settings = resolve(_args("ask", "q", "--no-strict"), "ask", environ={"SELFROUTE_STRICT": "1"})
    assert settings.strict is False and settings.source("strict") == "flag"


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"SELFROUTE_K": "zero"}, "SELFROUTE_K: invalid k"),
        ({"SELFROUTE_K": "0"}, "SELFROUTE_K: invalid k"),
        ({"SELFROUTE_STRICT": "maybe"}, "SELFROUTE_STRICT: invalid strict"),
        ({"SELFROUTE_RETRIEVAL": "sparse"}, "retrieval must be one of hybrid, dense, bm25"),
        ({"SELFROUTE_TIMEOUT": "-1"}, "SELFROUTE_TIMEOUT"),
    ],
)
def test_bad_environment_values_name_the_variable(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        resolve(_args("ask", "q"), "ask", environ=environ)


def test_toml_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_toml(None, explicit=False) == {}
    (tmp_path / "selfroute.toml").write_text(
        'store = "kb"\nlc-model = "openai:gpt-4.1"\n[selfroute]\nk = 8\n', encoding="utf-8"
    )
    config = load_toml(None, explicit=False)
    settings = resolve(_args("ask", "q"), "ask", environ={}, config=config)
    assert (settings.store, settings.lc_model, settings.k) == ("kb", "openai:gpt-4.1", 8)
    assert settings.source("store") == "file"


def test_toml_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="does not exist"):
        load_toml(tmp_path / "missing.toml", explicit=True)
    bad = tmp_path / "bad.toml"
    bad.write_text("k = [", encoding="utf-8")
    with pytest.raises(ConfigurationError, match="not valid TOML"):
        load_toml(bad, explicit=True)
    typo = tmp_path / "typo.toml"
    typo.write_text('modle = "x"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="unknown setting 'modle'"):
        load_toml(typo, explicit=True)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("k = 'many'\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"wrong\.toml: invalid k"):
        resolve(_args("ask", "q"), "ask", environ={}, config=load_toml(wrong, explicit=True))


def test_docs_table_lists_every_setting() -> None:
    table = settings_table()
    text = DOCS.read_text(encoding="utf-8")
    assert table in text, "docs/cli.md is out of date: paste settings_table() into it"
    for s in SETTINGS:
        assert f"`{s.flag}`" in table and f"`{s.env}`" in table


def test_policy_settings_from_the_pre_route_table(tmp_path: Path) -> None:
    file = tmp_path / "selfroute.toml"
    file.write_text(
        'k = 5\nk-ladder = [20]\nverdict = "structured"\ngrounded = true\n'
        "[pre_route]\nglobal_questions = true\nmin-top-score = 3.25\n",
        encoding="utf-8",
    )
    config = load_toml(file, explicit=True)
    settings = resolve(_args("ask", "q"), "ask", environ={}, config=config)
    assert settings.k_ladder == (20,) and settings.verdict == "structured" and settings.grounded
    assert settings.pre_route is True and settings.min_top_score == 3.25
    assert settings.source("min_top_score") == "file"
    # environment beats the file, a flag beats both
    env = {"SELFROUTE_MIN_TOP_SCORE": "1.5", "SELFROUTE_PRE_ROUTE": "false"}
    settings = resolve(_args("ask", "q"), "ask", environ=env, config=config)
    assert (settings.min_top_score, settings.pre_route) == (1.5, False)
    flags = _args("ask", "q", "--min-top-score", "0.5", "--pre-route", "--k-ladder", "10,30")
    settings = resolve(flags, "ask", environ=env, config=config)
    assert (settings.min_top_score, settings.pre_route, settings.k_ladder) == (0.5, True, (10, 30))
    assert settings.source("pre_route") == "flag"
    # the [pre_route] table also works inside [selfroute]
    nested = tmp_path / "nested.toml"
    nested.write_text("[selfroute.pre_route]\nmin_top_score = 2\n", encoding="utf-8")
    assert (
        resolve(
            _args("ask", "q"), "ask", environ={}, config=load_toml(nested, explicit=True)
        ).min_top_score
        == 2.0
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[pre_route]\nthreshold = 1\n", "unknown setting 'pre_route.threshold'"),
        ("min_top_score = 1\n", "unknown setting 'min_top_score'"),
        ("[pre_route]\nmin_top_score = 'high'\n", "invalid min_top_score"),
        ("[pre_route]\nglobal_questions = 'sometimes'\n", "invalid pre_route"),
        ("k_ladder = [20.5]\n", "invalid k_ladder"),
        ("verdict = 'json'\n", "verdict must be one of sentinel, structured, auto"),
    ],
)
def test_bad_policy_settings_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    file = tmp_path / "selfroute.toml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=message):
        resolve(_args("ask", "q"), "ask", environ={}, config=load_toml(file, explicit=True))
