"""A ``selfroute.toml`` in the working folder (a cloned repository's) that points ``base_url``
elsewhere does not get ``$OPENAI_API_KEY``: the command refuses naming the server and how to
allow it, and nothing reaches the server. A server named by the user (flag, ``SELFROUTE_*``,
``--config``/``SELFROUTE_CONFIG``) gets the key; with no key in the environment nothing leaks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

KEY = "sk-test-the-users-own-key-0000"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "SELFROUTE_CONFIG", "SELFROUTE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    (tmp_path / "doc.txt").write_text("The vault code is 4411. " * 20, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _config(folder: Path, key: str, url: str) -> None:
    (folder / "selfroute.toml").write_text(f'{key} = "{url}"\nmodel = "m"\n', encoding="utf-8")


def _ask(capsys: Any, *extra: str) -> tuple[int, str, str]:
    code = main(["ask", "--doc", "doc.txt", *extra, "What is the vault code?"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("key", ["base_url", "lc_base_url"])
def test_a_project_config_cannot_redirect_the_key(capsys: Any, folder: Path, key: str) -> None:
    with ScriptedOpenAIServer(lambda body: "4411") as srv:
        _config(folder, key, srv.base_url)
        code, out, err = _ask(capsys)
        assert code == 2, (out, err)
        assert srv.calls == 0 and not srv.headers  # nothing sent anywhere
        assert f"sets {key} to {srv.base_url}" in err, err
    assert "$OPENAI_API_KEY" in err and "--config selfroute.toml" in err, err
    assert KEY not in out + err


def test_an_embedding_server_from_a_project_config_is_refused_too(
    capsys: Any, folder: Path
) -> None:
    _config(folder, "embedding_base_url", "http://127.0.0.1:9/v1")
    code = main(["index", "doc.txt", "--embedding", "openai"])
    err = capsys.readouterr().err
    assert code == 2 and "sets embedding_base_url to http://127.0.0.1:9/v1" in err, err


@pytest.mark.parametrize(
    "allow",
    [["--config", "selfroute.toml"], ["--base-url", "{url}"], ["env:SELFROUTE_CONFIG"]],
    ids=["--config", "--base-url", "SELFROUTE_CONFIG"],
)
def test_a_server_the_user_names_gets_the_key(
    capsys: Any, folder: Path, monkeypatch: pytest.MonkeyPatch, allow: list[str]
) -> None:
    with ScriptedOpenAIServer(lambda body: "4411") as srv:
        _config(folder, "base_url", srv.base_url)
        extra = [a.format(url=srv.base_url) for a in allow]
        if extra[0].startswith("env:"):
            monkeypatch.setenv(extra[0][4:], "selfroute.toml")
            extra = []
        code, out, err = _ask(capsys, *extra)
        assert code == 0, err
        assert srv.headers and all(h["authorization"] == f"Bearer {KEY}" for h in srv.headers)
    assert "4411" in out


def test_without_a_key_in_the_environment_a_project_server_is_used(
    capsys: Any, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with ScriptedOpenAIServer(lambda body: "4411") as srv:
        _config(folder, "base_url", srv.base_url)
        code, out, err = _ask(capsys)
        assert "4411" in out
        assert code == 0, err
        assert srv.headers and all(KEY not in h["authorization"] for h in srv.headers)


def test_the_providers_own_host_from_a_project_config_is_allowed() -> None:
    from selfroute.cli._config import Settings
    from selfroute.cli._models import check_key_hosts

    settings = Settings({"base_url": "https://api.openai.com/v1"}, {"base_url": "file"})
    check_key_hosts(settings, trusted_file=False)  # no error
