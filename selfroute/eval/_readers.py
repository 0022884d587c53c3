"""Readers: what answers the eval prompts. A calibrated oracle, or any LangChain chat model."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._flow import Generation
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._result import Stage
from selfroute._tokens import TokenCounter, default_token_counter
from selfroute._usage import Usage
from selfroute.eval._data import EvalItem

__all__ = [
    "ChatModelReader",
    "ModelRequest",
    "OracleReader",
    "Reader",
    "chat_model_from_spec",
]


@dataclass(frozen=True)
class ModelRequest:
    """One prompt the harness needs answered.

    Attributes:
        prompt: The full prompt (sent as one user message).
        context: The passage(s) or document inside the prompt.
        question: The question.
        item: The eval item (gives the oracle its gold answers).
        method: ``lc``, ``rag`` or ``self_route``.
        stage: ``rag`` or ``long_context``.
        sentinel: The decline word the prompt asks for (Self-Route's RAG step), else ``None``.
    """

    prompt: str
    context: str
    question: str
    item: EvalItem
    method: str
    stage: Stage
    sentinel: str | None = None


@runtime_checkable
class Reader(Protocol):
    """Answers prompts for the harness.

    Attributes:
        name: Shown in reports.
        model_name: Used to price calls with a :class:`~selfroute.PriceTable`.
        cacheable: Whether answers may be stored in the response cache.
        is_oracle: True for readers that look at the gold answers (flagged in every output).
    """

    name: str
    model_name: str
    cacheable: bool
    is_oracle: bool

    def cache_identity(self) -> str:
        """Everything that changes the answer besides the prompt (model, endpoint, params)."""
        ...

    async def agenerate(self, request: ModelRequest) -> Generation:
        """Answer ``request``."""
        ...


_ARTICLES = re.compile(r"\b(a|an|the)\b")


def match_key(text: str) -> str:
    """Text normalised for "does the answer appear here": lower case, every Unicode punctuation
    or symbol character turned into a space, articles dropped, white space collapsed."""
    chars = [
        " " if unicodedata.category(ch)[0] in "PS" else ch
        for ch in unicodedata.normalize("NFKC", text.lower())
    ]
    return " ".join(_ARTICLES.sub(" ", "".join(chars)).split())


class OracleReader:
    """A perfectly calibrated reader that never calls a model.

    It answers with a gold answer exactly when that answer appears (case-, punctuation- and
    article-insensitively, on word boundaries) in the context it is shown, and declines with the sentinel otherwise. With Self-Route it measures the retrieval side
    alone: the answerable ratio and token ratio a model that never guesses and never misses would
    reach. Usage is counted by the local tokenizer and labelled as such (``source="tokenizer"``).
    Only for span-answer data (``qa_f1`` / ``exact_match`` metrics).

    Args:
        counter: Token counter for the usage it reports.
        decline: What it writes when the gold answer is not in its context.
    """

    name = "oracle"
    model_name = "oracle"
    cacheable = False
    is_oracle = True

    def __init__(
        self, *, counter: TokenCounter | None = None, decline: str = DEFAULT_SENTINEL
    ) -> None:
        self.counter = counter or default_token_counter()
        self.decline = decline
        self._norm_cache: dict[str, str] = {}

    def cache_identity(self) -> str:
        return "oracle"

    def _normalized(self, text: str) -> str:
        hit = self._norm_cache.get(text)
        if hit is None:
            if len(self._norm_cache) > 256:
                self._norm_cache.clear()
            hit = f" {match_key(text)} "
            self._norm_cache[text] = hit
        return hit

    def answer_for(self, item: EvalItem, context: str) -> str:
        """The oracle's answer to ``item`` given ``context``."""
        if item.metric not in ("qa_f1", "exact_match"):
            raise ConfigurationError(
                f"the oracle reader needs span answers (qa_f1/exact_match), but item {item.id!r} "
                f"uses {item.metric!r}"
            )
        haystack = self._normalized(context)
        for gold in item.answers:
            norm = match_key(gold)
            if norm and f" {norm} " in haystack:
                return gold
        return self.decline

    async def agenerate(self, request: ModelRequest) -> Generation:
        text = self.answer_for(request.item, request.context)
        usage = Usage.of(
            self.counter.count(request.prompt),
            self.counter.count(text),
            source=self.counter.source,
        )
        return Generation(text=text, usage=usage, model="oracle")


# Constructor arguments that change how a call is made, never what it answers.
_NON_SEMANTIC = frozenset(
    {
        "max_retries",
        "timeout",
        "request_timeout",
        "streaming",
        "stream_usage",
        "default_metadata",
        "openai_api_key",
        "google_api_key",
        "api_key",
        "http_client",
        "http_async_client",
        "callbacks",
        "verbose",
        "tags",
        "metadata",
    }
)


def _model_identity(model: Any) -> str:
    """A stable description of a LangChain chat model's answer-relevant settings."""
    try:
        raw = model._get_llm_string()
    except Exception:
        raw = None
    if isinstance(raw, str):
        head, sep, tail = raw.partition("---")
        try:
            data = json.loads(head)
        except ValueError:
            return raw
        kwargs = data.get("kwargs") if isinstance(data, dict) else None
        if isinstance(kwargs, dict):
            data["kwargs"] = {k: v for k, v in kwargs.items() if k not in _NON_SEMANTIC}
        return json.dumps(data, sort_keys=True, default=str) + sep + tail
    params = getattr(model, "_identifying_params", None) or {}
    return json.dumps(
        {"class": type(model).__qualname__, **dict(params)}, sort_keys=True, default=str
    )


class ChatModelReader:
    """Any LangChain chat model as a reader; usage is what the provider reports.

    Args:
        model: A LangChain ``BaseChatModel`` (``ChatOpenAI``, ``ChatGoogleGenerativeAI``, ...).
        name: Name for reports; defaults to the model name.
        identity: Cache identity; defaults to the model's class and answer-relevant settings
            (model name, endpoint, temperature, max tokens; not keys, timeouts or retries).
    """

    cacheable = True
    is_oracle = False

    def __init__(self, model: Any, *, name: str | None = None, identity: str | None = None) -> None:
        if not hasattr(model, "ainvoke"):
            raise ConfigurationError(
                f"ChatModelReader needs a LangChain chat model, got {type(model).__name__}"
            )
        self.model = model
        self.model_name = str(
            getattr(model, "model_name", None) or getattr(model, "model", None) or "model"
        )
        self.name = name or self.model_name
        self._identity = identity or _model_identity(model)

    @classmethod
    def from_spec(cls, spec: str, **options: Any) -> ChatModelReader:
        """Build from ``openai:NAME``, ``google:NAME`` or ``NAME`` with ``base_url=``.

        ``options`` are those of :func:`chat_model_from_spec` (``base_url``, ``api_key``,
        ``temperature``, ``max_tokens``, ``timeout``, ``max_retries``).
        """
        return cls(chat_model_from_spec(spec, **options))

    def cache_identity(self) -> str:
        return self._identity

    async def agenerate(self, request: ModelRequest) -> Generation:
        # Frameworks are reached only through the adapter, which owns LangChain's usage parsing.
        try:
            from langchain_core.messages import HumanMessage
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingDependencyError("langchain-core", "langchain") from exc

        from langchain_selfroute._handlers import message_model, message_text, message_usage

        message = await self.model.ainvoke([HumanMessage(content=request.prompt)])
        model = message_model(message) or self.model_name
        return Generation(text=message_text(message), usage=message_usage(message), model=model)


def chat_model_from_spec(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout: float | None = 120.0,
    max_retries: int = 2,
) -> Any:
    """A LangChain chat model from a short spec.

    * ``openai:gpt-4o-mini`` -- ``ChatOpenAI`` (key from ``OPENAI_API_KEY`` unless ``api_key``).
    * ``google:gemini-2.5-flash`` -- ``ChatGoogleGenerativeAI`` (``GOOGLE_API_KEY``).
    * ``NAME`` with ``base_url`` -- ``ChatOpenAI`` against any OpenAI-compatible server (vLLM,
      llama.cpp, Ollama, a gateway); a key is optional there.

    Raises:
        ConfigurationError: Malformed spec or unknown provider.
        MissingDependencyError: The provider's LangChain package is not installed.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigurationError("model spec must be a non-empty string like 'openai:gpt-4o-mini'")
    provider, sep, name = spec.strip().partition(":")
    if not sep:
        if base_url is None:
            raise ConfigurationError(
                f"model spec {spec!r} has no provider; write openai:NAME or google:NAME, or give "
                "a base URL for an OpenAI-compatible server"
            )
        provider, name = "openai", spec.strip()
    provider = provider.lower()
    if not name:
        raise ConfigurationError(f"model spec {spec!r} names no model")
    common: dict[str, Any] = {"temperature": temperature, "max_retries": max_retries}
    if timeout is not None:
        common["timeout"] = timeout
    if max_tokens is not None:
        common["max_tokens"] = max_tokens
    if provider == "openai":
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise MissingDependencyError("langchain-openai", "openai") from exc
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and base_url is not None:
            key = "not-needed"  # local OpenAI-compatible servers usually ignore the key
        if key is None:
            raise ConfigurationError(
                f"{spec!r} needs an OpenAI API key: set OPENAI_API_KEY (or use --reader oracle "
                "for a keyless run)"
            )
        params: dict[str, Any] = {"model": name, **common}
        if key is not None:
            params["api_key"] = key
        if base_url is not None:
            params["base_url"] = base_url
        return ChatOpenAI(**params)
    if provider in ("google", "gemini", "google_genai"):
        try:
            from langchain_google_genai import ChatGoogleGenerativeAI
        except ImportError as exc:
            raise MissingDependencyError("langchain-google-genai", "google") from exc
        gparams: dict[str, Any] = {"model": name, **common}
        key = api_key or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if key is None and base_url is None:
            raise ConfigurationError(
                f"{spec!r} needs a Google API key: set GOOGLE_API_KEY (or use --reader oracle "
                "for a keyless run)"
            )
        gparams["google_api_key"] = key or "not-needed"
        if base_url is not None:
            gparams["base_url"] = base_url
        return ChatGoogleGenerativeAI(**gparams)
    raise ConfigurationError(
        f"unknown provider {provider!r} in {spec!r}; use openai:NAME, google:NAME, or NAME with "
        "a base URL"
    )
