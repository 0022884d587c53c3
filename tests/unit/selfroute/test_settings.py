"""Each route setting declared once on RouteConfig: a throwaway field reaches every derived place."""

from __future__ import annotations

import argparse
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic.json_schema import GenerateJsonSchema

from langchain_selfroute import SelfRoute
from langchain_selfroute._runnable import ROUTE_CONFIG_SETTINGS
from langchain_selfroute._settings import field_type, settings_model
from selfroute import ConfigurationError, RouteConfig
from selfroute._batch._settings import NOT_ANSWERS, job_settings
from selfroute._settings import (
    CliOption,
    EvalOption,
    adapter_kwargs,
    adapter_settings,
    cli_options,
    config_options,
    document_settings,
    eval_options,
    eval_positive_int,
    parse_positive_int,
    setting,
)
from selfroute.cli import _config
from selfroute.eval import cli as eval_cli


class _LenientSchema(GenerateJsonSchema):
    """JSON schema of a model with live objects (a ``Runnable`` field): those as a marker."""

    def handle_invalid_for_json_schema(self, schema: Any, error_info: str) -> dict[str, Any]:
        return {"invalid": error_info}

    def callable_schema(self, schema: Any) -> dict[str, Any]:
        return {"callable": True}


@dataclasses.dataclass(frozen=True)
class _Extended(RouteConfig):
    throwaway_knob: int = setting(
        7,
        help="a test setting",
        cli=CliOption("throwaway_knob", "--throwaway-knob", parse_positive_int, 7, "a test knob", ("ask", "chat"), metavar="N"),
        eval=EvalOption("throwaway_knob", "--throwaway-knob", "policy", eval_positive_int, 7, "a test knob for eval", metavar="N"),
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


def test_a_new_field_reaches_the_eval_options(monkeypatch: pytest.MonkeyPatch) -> None:
    assert [o.flag for o in eval_options(_Extended, "policy")][-1] == "--throwaway-knob"
    monkeypatch.setattr(eval_cli, "RouteConfig", _Extended)
    parser = eval_cli.build_parser()
    text = " ".join(parser.format_help().split())
    policies = text.split("Self-Route policies")[1]
    assert "--throwaway-knob N a test knob for eval" in policies  # last of its group
    assert eval_cli.config_from_args(parser.parse_args(["--sample"])).throwaway_knob == 7
    args = parser.parse_args(["--sample", "--throwaway-knob", "3"])
    assert eval_cli.config_from_args(args).throwaway_knob == 3
    with pytest.raises(SystemExit):
        parser.parse_args(["--sample", "--throwaway-knob", "0"])


@dataclasses.dataclass(frozen=True)
class _Costly(_Extended):
    throwaway_cost: int = setting(0, answers=False, help="a test setting that changes no answer")


def test_a_new_field_is_part_of_a_batch_jobs_settings_unless_it_changes_no_answer() -> None:
    recorded = job_settings(_Costly(throwaway_knob=3, throwaway_cost=9), backend=None)
    assert recorded["throwaway_knob"] == "3"
    assert "throwaway_cost" not in recorded
    assert "prices" not in recorded and "k" in recorded
    money = {"prices", "long_context_model", "counterfactual"}
    time = {"retrieval_timeout_s", "deadline_s", "speculate_below", "stream_hold_chars"}
    observing = {"tracing"}  # where the spans go
    assert money | time | observing == NOT_ANSWERS


def test_eval_takes_the_declared_route_settings() -> None:
    flags = {o.flag for o in eval_options(RouteConfig)}
    assert {"--window", "--k-ladder", "--pre-route", "--min-top-score", "--grounded"} <= flags
    parser = eval_cli.build_parser()
    argv = "--sample --window 9000 --k-ladder 10,20 --min-top-score 0.5 --decline-pattern ^keine"
    args = parser.parse_args([*argv.split(), "--strict", "--verdict", "auto"])
    config = eval_cli.config_from_args(args)
    assert (config.long_context_window, config.k_ladder, config.strict) == (9000, (10, 20), True)
    assert config.pre_route is not None and config.pre_route.min_top_score == 0.5
    assert not config.pre_route.global_questions
    assert config.verdict.value == "auto" and config.decline_detector is not None
    assert config.decline_detector("Keine Angaben.", None) is True
    plain = eval_cli.config_from_args(parser.parse_args(["--sample"]))
    assert plain == RouteConfig()


def undocumented(names: tuple[str, ...], doc: str | None) -> list[str]:
    """The ``names`` a docstring does not name (as an ``Args:`` entry or a ````name```` literal)."""
    return [n for n in names if not re.search(rf"(^\s+{n}:|``{n}``)", doc or "", re.M)]


def test_every_adapter_setting_is_documented_by_both_adapters() -> None:
    from llamaindex_selfroute import SelfRouteQueryEngine

    names = adapter_settings(RouteConfig)
    assert undocumented(names, SelfRoute.__doc__) == []
    assert undocumented(names, SelfRouteQueryEngine.__doc__) == []
    # a setting declared after the text was written gets its declared help line
    new = adapter_settings(_Extended)
    assert undocumented(new, SelfRoute.__doc__) == ["throwaway_knob"]
    for doc in (SelfRoute.__doc__, SelfRouteQueryEngine.__doc__):
        completed = document_settings(doc, _Extended)
        assert undocumented(new, completed) == []
        assert "        throwaway_knob: A test setting." in completed.splitlines()
        assert completed.replace("        throwaway_knob: A test setting.\n", "") == doc
    assert document_settings(SelfRoute.__doc__, RouteConfig) == SelfRoute.__doc__


def _fake_llm() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=["In 1901."])


def test_a_new_field_is_a_langchain_field_passed_to_the_config() -> None:
    route_class = settings_model(SelfRoute, _Extended)
    assert issubclass(route_class, SelfRoute) and route_class.__name__ == "SelfRoute"
    field = route_class.model_fields["throwaway_knob"]
    assert (field.annotation, field.default) == (int, 7)
    assert "throwaway_knob" not in SelfRoute.model_fields
    schema = route_class.model_json_schema(schema_generator=_LenientSchema)["properties"]
    assert schema["throwaway_knob"] == {"default": 7, "title": "Throwaway Knob", "type": "integer"}
    assert undocumented(("throwaway_knob",), route_class.__doc__) == []
    route = route_class(llm=_fake_llm(), document="Mara Holt was born in 1901.", throwaway_knob="3")
    assert isinstance(route.config, _Extended) and route.config.throwaway_knob == 3  # coerced
    assert route_class(llm=_fake_llm(), document="text").config.throwaway_knob == 7
    with pytest.raises(ConfigurationError, match="throwaway_knob"):
        route_class(llm=_fake_llm(), document="text", throwaway_knob="many")
    with pytest.raises(ConfigurationError, match="throwaway_knob"):
        SelfRoute(llm=_fake_llm(), document="text", throwaway_knob=3)


def test_a_new_field_is_a_llamaindex_setting_passed_to_the_config() -> None:
    from llamaindex_selfroute import SelfRouteQueryEngine
    from tests.unit.llamaindex_selfroute._scripted import ScriptedLLM, ScriptedRetriever

    class _Engine(SelfRouteQueryEngine):
        _config_class = _Extended

    assert undocumented(("throwaway_knob",), _Engine.__doc__) == []
    retriever, llm = ScriptedRetriever([]), ScriptedLLM(reply="unanswerable")
    engine = _Engine(retriever, llm, long_context="Mara Holt was born in 1901.", throwaway_knob=3)
    assert isinstance(engine.config, _Extended) and engine.config.throwaway_knob == 3
    assert _Engine(retriever, llm, long_context="text").config.throwaway_knob == 7
    with_config = _Engine(retriever, llm, config=_Extended(throwaway_knob=2), k=3)
    assert (with_config.config.throwaway_knob, with_config.config.k) == (2, 3)
    with pytest.raises(ConfigurationError, match="throwaway_knob"):
        SelfRouteQueryEngine(retriever, llm, throwaway_knob=3)


def test_the_adapters_fields_are_the_declared_keyword_arguments() -> None:
    kwargs = adapter_kwargs(RouteConfig)
    assert tuple(kw.name for kw in kwargs) == ROUTE_CONFIG_SETTINGS
    for kw in kwargs:
        field = SelfRoute.model_fields[kw.name]
        assert field.default == kw.default, kw.name
        assert repr(field.rebuild_annotation()) == repr(field_type(kw)), kw.name
    by_name = {kw.name: kw for kw in kwargs}
    assert by_name["overflow"].default == "fill" and by_name["overflow"].type is str
    assert not by_name["k_ladder"].checked and by_name["answer_tokens"].checked


def test_the_derived_lists_match_the_declarations() -> None:
    assert adapter_settings(RouteConfig) == ROUTE_CONFIG_SETTINGS
    assert set(ROUTE_CONFIG_SETTINGS) <= set(SelfRoute.model_fields), "add the pydantic field"
    route = {o.name for o in cli_options(RouteConfig)}
    assert route <= {s.name for s in _config.SETTINGS}
    assert {"max_lc_calls", "max_lc_tokens"} <= route
