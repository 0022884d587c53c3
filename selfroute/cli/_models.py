"""LangChain chat models from short specs: ``openai:NAME``, ``google:NAME``, ``NAME`` + base URL.

A missing API key is a :class:`~selfroute.stores.MissingCredentialsError` naming the variable to
set and the ``--base-url`` alternative -- raised before any network call.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute.stores._errors import MissingCredentialsError

__all__ = ["ModelSpec", "build_chat_model", "parse_model_spec"]

_PROVIDERS = {"openai": "openai", "google": "google", "gemini": "google", "google_genai": "google"}
_KEYS = {"openai": ("OPENAI_API_KEY",), "google": ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
#: Placeholder key for local OpenAI-compatible servers, which ignore it.
LOCAL_KEY = "not-needed"


@dataclass(frozen=True)
class ModelSpec:
    """A parsed model spec.

    Attributes:
        provider: ``openai`` or ``google``.
        name: The model name.
        base_url: A server other than the provider's own (OpenAI-compatible for ``openai``).
    """

    provider: str
    name: str
    base_url: str | None = None

    def __str__(self) -> str:
        where = f" at {self.base_url}" if self.base_url else ""
        return f"{self.provider}:{self.name}{where}"


def parse_model_spec(spec: str, base_url: str | None = None) -> ModelSpec:
    """Parse ``openai:NAME``, ``google:NAME`` or a bare ``NAME``.

    A bare name is an OpenAI-protocol model (at ``base_url`` when given). A ``:`` inside a bare
    name is kept when the prefix is not a provider (``llama3.1:8b`` for Ollama).

    Raises:
        ConfigurationError: Empty spec or empty name.
    """
    text = (spec or "").strip()
    if not text:
        raise ConfigurationError("--model is empty; write openai:NAME, google:NAME or NAME")
    prefix, sep, rest = text.partition(":")
    provider = _PROVIDERS.get(prefix.strip().lower()) if sep else None
    name = rest.strip() if provider else text
    if not name:
        raise ConfigurationError(f"model spec {spec!r} names no model (write {prefix}:NAME)")
    return ModelSpec(provider or "openai", name, base_url or None)


def _key(spec: ModelSpec, flag: str) -> str:
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
    key = _key(spec, flag)
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
