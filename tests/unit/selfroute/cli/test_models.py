"""Model specs and the one-line missing-key error."""

from __future__ import annotations

import pytest

from selfroute import ConfigurationError
from selfroute.cli._models import ModelSpec, build_chat_model, parse_model_spec
from selfroute.stores import MissingCredentialsError

KEYS = ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY")


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize(
    ("spec", "base_url", "expected"),
    [
        ("openai:gpt-4o-mini", None, ModelSpec("openai", "gpt-4o-mini")),
        ("google:gemini-2.5-flash", None, ModelSpec("google", "gemini-2.5-flash")),
        ("gemini:gemini-2.5-pro", None, ModelSpec("google", "gemini-2.5-pro")),
        ("gpt-4o", None, ModelSpec("openai", "gpt-4o")),
        (
            "llama3.1:8b",
            "http://127.0.0.1:11434/v1",
            ModelSpec("openai", "llama3.1:8b", "http://127.0.0.1:11434/v1"),
        ),
        (" OpenAI: qwen2.5 ", "http://h/v1", ModelSpec("openai", "qwen2.5", "http://h/v1")),
    ],
)
def test_parse(spec: str, base_url: str | None, expected: ModelSpec) -> None:
    assert parse_model_spec(spec, base_url) == expected


@pytest.mark.parametrize("spec", ["", "   ", "openai:", "google: "])
def test_parse_rejects_empty_specs(spec: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_model_spec(spec)


@pytest.mark.parametrize(
    ("spec", "variable"),
    [("openai:gpt-4o-mini", "OPENAI_API_KEY"), ("google:gemini-2.5-flash", "GOOGLE_API_KEY")],
)
def test_a_missing_key_names_the_variable_and_the_local_alternative(
    spec: str, variable: str
) -> None:
    with pytest.raises(MissingCredentialsError) as info:
        build_chat_model(parse_model_spec(spec), flag="--lc-model")
    message = str(info.value)
    assert info.value.variable == variable
    assert variable in message and "--base-url" in message and "--lc-model" in message
    assert "\n" not in message


def test_openai_model_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    local = build_chat_model(
        parse_model_spec("qwen", "http://127.0.0.1:8000/v1"), timeout=9, max_retries=0
    )
    assert local.model_name == "qwen"
    assert local.openai_api_base == "http://127.0.0.1:8000/v1"
    assert local.stream_usage is True and local.max_retries == 0 and local.request_timeout == 9
    assert local.openai_api_key.get_secret_value() == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    hosted = build_chat_model(parse_model_spec("openai:gpt-4o-mini"), temperature=0.3)
    assert hosted.openai_api_key.get_secret_value() == "sk-test" and hosted.temperature == 0.3


def test_google_model_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "g-test")
    model = build_chat_model(parse_model_spec("google:gemini-2.5-flash"), max_retries=2)
    assert model.model.endswith("gemini-2.5-flash")
    assert model.google_api_key.get_secret_value() == "g-test"
    assert model.max_retries == 3  # the Google SDK counts attempts


@pytest.mark.parametrize("spec", ["offline", "OFFLINE", "offline:extractive"])
def test_offline_is_the_keyless_extractive_reader(spec: str) -> None:
    parsed = parse_model_spec(spec)
    assert parsed == ModelSpec("offline", "extractive") and str(parsed) == "offline:extractive"
    model = build_chat_model(parsed)  # no key needed
    assert type(model).__name__ == "ExtractiveChatModel"
    assert model.invoke("Passage:\nTom sailed the boat.\n\nQuestion: Who sailed?").text == (
        "Tom sailed the boat."
    )


@pytest.mark.parametrize(
    ("spec", "named"),
    [("anthropic:claude-3-5-haiku", "'anthropic'"), ("mistral:large", "'mistral'")],
)
def test_unknown_providers_are_refused_by_name(spec: str, named: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        parse_model_spec(spec)
    assert named in str(info.value) and "openai:anthropic" not in str(info.value)
    assert "--base-url" in str(info.value)


def test_offline_has_one_reader() -> None:
    with pytest.raises(ConfigurationError, match="extractive"):
        parse_model_spec("offline:gpt-4o")
