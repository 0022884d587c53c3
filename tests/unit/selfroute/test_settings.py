"""Each route setting declared once on RouteConfig: a throwaway field reaches every derived place."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from langchain_selfroute import SelfRoute
from langchain_selfroute._runnable import ROUTE_CONFIG_SETTINGS
from selfroute import RouteConfig
from selfroute._settings import (
    CliOption,
    adapter_settings,
    cli_options,
    config_options,
    parse_positive_int,
    setting,
)
from selfroute.cli import _config


@dataclasses.dataclass(frozen=True)
class _Extended(RouteConfig):
    throwaway_knob: int = setting(
        7,
        help="a test setting",
        cli=CliOption("throwaway_knob", "--throwaway-knob", parse_positive_int, 7, "a test knob", ("ask", "chat"), metavar="N"),
    )  # fmt: skip


def test_a_new_field_reaches_the_cli_env_toml_docs_and_adapters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert "throwaway_knob" in adapter_settings(_Extended)
    option = next(o for o in cli_options(_Extended) if o.name == "throwaway_knob")
    settings = (*_config.SETTINGS, option)
    monkeypatch.setattr(_config, "SETTINGS", settings)
    monkeypatch.setattr(_config, "_BY_KEY", {s.key: s for s in settings})
    parser = argparse.ArgumentParser()
    _config.add_settings(parser, "ask")
    assert (
        "--throwaway-knob" in parser.format_help()
        and "SELFROUTE_THROWAWAY_KNOB" in parser.format_help()
    )
    args = parser.parse_args(["--throwaway-knob", "3"])
    assert _config.resolve(args, "ask", environ={}).throwaway_knob == 3
    empty = parser.parse_args([])
    env = {"SELFROUTE_THROWAWAY_KNOB": "4"}
    assert _config.resolve(empty, "ask", environ=env).throwaway_knob == 4
    (tmp_path / "selfroute.toml").write_text("throwaway_knob = 5\n")
    toml = _config.load_toml(tmp_path / "selfroute.toml", explicit=True)
    resolved = _config.resolve(empty, "ask", environ={}, config=toml)
    assert resolved.throwaway_knob == 5
    assert "`--throwaway-knob`" in _config.settings_table(settings)
    assert config_options(_Extended, resolved.to_dict())["throwaway_knob"] == 5


def test_the_derived_lists_match_the_declarations() -> None:
    assert adapter_settings(RouteConfig) == ROUTE_CONFIG_SETTINGS
    assert set(ROUTE_CONFIG_SETTINGS) <= set(SelfRoute.model_fields), "add the pydantic field"
    route = {o.name for o in cli_options(RouteConfig)}
    assert route <= {s.name for s in _config.SETTINGS}
    assert {"max_lc_calls", "max_lc_tokens"} <= route
