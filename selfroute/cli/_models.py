"""Model specs (``openai:NAME``, ``google:NAME``, ``offline``, ``NAME`` + base URL), their keys, and
LangChain chat models from them (``eval``, ``ask --batch`` with a ``google:`` model; the
framework-free clients of ``ask`` and ``chat`` are in :mod:`selfroute.cli._clients`).

A missing API key is a :class:`~selfroute.stores.MissingCredentialsError` naming the variable to
set and the ``--base-url`` alternative -- raised before any network call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._redact import redact
from selfroute.stores._errors import MissingCredentialsError

__all__ = [
    "OFFLINE_READER",
    "ModelSpec",
    "build_chat_model",
    "check_key_hosts",
    "credential",
    "has_provider",
    "parse_model_spec",
]

_PROVIDERS = {
    "openai": "openai",
    "google": "google",
    "gemini": "google",
    "google_genai": "google",
    "offline": "offline",
}
_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "offline": (),
}
#: The hosts of the providers' own APIs: a key from the environment may always go there.
PROVIDER_HOSTS = frozenset({"api.openai.com", "generativelanguage.googleapis.com"})
#: Settings naming a server that receives an API key from the environment, with the keys.
_KEYED_URLS = {
    "base_url": ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "lc_base_url": ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "embedding_base_url": ("OPENAI_API_KEY",),
}
#: The one model of the ``offline`` provider: the built-in extractive reader.
OFFLINE_READER = "extractive"
#: Placeholder key for local OpenAI-compatible servers, which ignore it.
LOCAL_KEY = "not-needed"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec.

    Attributes:
        provider: ``openai``, ``google`` or ``offline`` (the built-in extractive reader).
        name: The model name.
        base_url: A server other than the provider's own (OpenAI-compatible for ``openai``).
    """

    provider: str
    name: str
    base_url: str | None = None

    def __str__(self) -> str:
        where = f" at {redact(self.base_url)}" if self.base_url else ""  # no URL password
        return f"{self.provider}:{self.name}{where}"


def has_provider(spec: str) -> bool:
    """Whether ``spec`` starts with a known provider (``openai:``, ``google:``, ``offline``)."""
    text = (spec or "").strip().lower()
    prefix, sep, _ = text.partition(":")
    return text == "offline" or (bool(sep) and prefix.strip() in _PROVIDERS)


def parse_model_spec(spec: str, base_url: str | None = None, *, flag: str = "--model") -> ModelSpec:
    """Parse ``openai:NAME``, ``google:NAME``, ``offline`` or a bare ``NAME``.

    A bare name is an OpenAI-protocol model (at ``base_url`` when given). With ``base_url``, a
    ``:`` inside a bare name is kept (``llama3.1:8b`` for Ollama); without one, an unknown prefix
    is an unknown provider (``anthropic:claude-...``) and is refused by name.

    Raises:
        ConfigurationError: Empty spec, empty name, unknown provider or unknown offline reader.
    """
    text = (spec or "").strip()
    if not text:
        raise ConfigurationError(
            f"{flag} is empty; write openai:NAME, google:NAME, offline or NAME"
        )
    if text.lower() == "offline":
        return ModelSpec("offline", OFFLINE_READER)
    prefix, sep, rest = text.partition(":")
    provider = _PROVIDERS.get(prefix.strip().lower()) if sep else None
    if sep and provider is None and not base_url:
        raise ConfigurationError(
            f"{flag} {text}: unknown provider {prefix.strip()!r}; use openai:NAME, google:NAME, "
            "offline (the built-in keyless reader), or NAME --base-url URL for an "
            "OpenAI-compatible server (a name with ':' such as llama3.1:8b needs --base-url)"
        )
    name = rest.strip() if provider else text
    if not name:
        raise ConfigurationError(f"model spec {spec!r} names no model (write {prefix}:NAME)")
    if provider == "offline":
        if name.lower() != OFFLINE_READER:
            raise ConfigurationError(
                f"{flag} {text}: the offline provider has one reader, '{OFFLINE_READER}' "
                "(write offline or offline:extractive)"
            )
        return ModelSpec("offline", OFFLINE_READER)
    return ModelSpec(provider or "openai", name, base_url or None)


def check_key_hosts(settings: Any, *, trusted_file: bool) -> None:
    """Refuse to send an API key from the environment to a server that only a project-local
    ``selfroute.toml`` names.

    A ``selfroute.toml`` found in the working folder comes with the folder (a cloned repository):
    its ``base_url``/``lc_base_url``/``embedding_base_url`` may point anywhere, and the server
    would get ``Authorization: Bearer $OPENAI_API_KEY``. A key from the environment is sent only
    to its provider's own API host (:data:`PROVIDER_HOSTS`) or to a server the user named: a flag,
    a ``SELFROUTE_*`` variable, or a config file named with ``--config`` / ``SELFROUTE_CONFIG``.

    Args:
        settings: The resolved settings (:class:`~selfroute.cli._config.Settings`).
        trusted_file: The config file was named by the user (``--config``, ``SELFROUTE_CONFIG``).

    Raises:
        ConfigurationError: Naming the setting, the server and how to allow it.
    """
    from urllib.parse import urlsplit

    if trusted_file:
        return
    for name, variables in _KEYED_URLS.items():
        if settings.source(name) != "file":
            continue
        url = str(getattr(settings, name))
        host = (urlsplit(url if "//" in url else f"http://{url}").hostname or "").lower()
        keys = [v for v in variables if os.environ.get(v, "").strip()]
        if host in PROVIDER_HOSTS or not keys:
            continue
        flag = "--" + name.replace("_", "-")
        config = getattr(settings, "config_file", "selfroute.toml")
        raise ConfigurationError(
            f"{config} (found in the working folder) sets {name} to {redact(url)}: selfroute "
            f"will not send ${keys[0]} from your environment to a server that only a "
            f"project-local config names. If you trust it, name it yourself: {flag} {redact(url)} "
            f"(or SELFROUTE_{name.upper()}), or name the file: --config {config} "
            "(or SELFROUTE_CONFIG); or unset the key for a server that needs none"
        )


def credential(spec: ModelSpec, flag: str = "--model") -> str:
    """The API key for ``spec``: from its provider's variables, else the placeholder of a local
    server (``base_url`` set), else an error; ``""`` for the offline reader.

    Raises:
        MissingCredentialsError: No key and no ``base_url``, naming the variable to set.
    """
    if spec.provider == "offline":
        return ""
    for variable in _KEYS[spec.provider]:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    if spec.base_url:
        return LOCAL_KEY
    variable = _KEYS[spec.provider][0]
    raise MissingCredentialsError(
        f"{flag} {spec.provider}:{spec.name} needs an API key: set {variable} "
        f"(export {variable}=...), or use a local OpenAI-compatible server with "
        "--base-url URL --model NAME",
        variable=variable,
    )


def build_chat_model(
    spec: ModelSpec,
    *,
    flag: str = "--model",
    temperature: float = 0.0,
    timeout: float | None = 120.0,
    max_retries: int = 2,
) -> Any:
    """A LangChain chat model for ``spec``.

    Args:
        spec: The parsed spec.
        flag: The flag that named it (for error messages).
        temperature: Sampling temperature.
        timeout: Seconds per call.
        max_retries: Retries of a failed call.

    Raises:
        MissingCredentialsError: No API key and no ``base_url``.
        MissingDependencyError: ``langchain-openai`` / ``langchain-google-genai`` missing.
    """
    key = credential(spec, flag)
    if spec.provider == "offline":
        try:
            from langchain_selfroute._extractive import ExtractiveChatModel
        except ImportError as exc:
            raise MissingDependencyError("langchain-core", "cli") from exc
        return ExtractiveChatModel()
    if spec.provider == "openai":
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise MissingDependencyError("langchain-openai", "openai") from exc
        params: dict[str, Any] = {
            "model": spec.name,
            "api_key": key,
            "temperature": temperature,
            "timeout": timeout,
            "max_retries": max_retries,
            "stream_usage": True,
        }
        if spec.base_url:
            params["base_url"] = spec.base_url
        return ChatOpenAI(**params)
    try:
        from langchain_google_genai import ChatGoogleGenerativeAI
    except ImportError as exc:
        raise MissingDependencyError("langchain-google-genai", "google") from exc
    gparams: dict[str, Any] = {
        "model": spec.name,
        "google_api_key": key,
        "temperature": temperature,
        "timeout": timeout,
        # the Google SDK counts attempts (0 means "its default"): retries + the first attempt
        "max_retries": max_retries + 1,
    }
    if spec.base_url:
        gparams["base_url"] = spec.base_url
    return ChatGoogleGenerativeAI(**gparams)
