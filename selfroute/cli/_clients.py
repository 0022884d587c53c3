"""The model clients of ``ask`` and ``chat``: one per stage, built from a model spec.

* ``openai:NAME`` / ``NAME --base-url URL``: :class:`~selfroute.cli._openai.OpenAIChat`, the
  standard-library client of an OpenAI-compatible server (no framework is imported);
* ``offline``: :class:`OfflineChat`, the built-in extractive reader;
* ``google:NAME``: :class:`LangChainChat` over ``ChatGoogleGenerativeAI`` (imported only then).

Each client has a ``name`` (the configured model, for error messages and pricing), a ``window``
(the model's input window when known, for ``--lc-window auto``), ``generate``, ``stream`` and
``generate_structured``, and ``structured_unsupported`` (why it cannot give structured output, or
``None``).
"""

from __future__ import annotations

import functools
import importlib.util
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from selfroute._extractive import ExtractiveReader
from selfroute._flow import Generation, GenerationChunk, StructuredRequest
from selfroute._structured import structured_unsupported
from selfroute.cli._models import ModelSpec, build_chat_model, credential
from selfroute.cli._openai import OpenAIChat

__all__ = ["ChatClient", "LangChainChat", "OfflineChat", "build_client", "openai_window"]


class ChatClient(Protocol):
    """What the CLI's step handler calls."""

    name: str
    window: int | None

    def generate(self, prompt: str) -> Generation:
        """One call."""
        ...

    def stream(self, prompt: str) -> Iterator[GenerationChunk]:
        """One streamed call; usage, model and finish reason on the last piece."""
        ...

    def generate_structured(self, request: StructuredRequest) -> Generation | None:
        """One call asking for an object matching ``request.schema``; ``None`` when the model
        cannot give structured output (send the plain prompt), unless ``request.required``.

        Raises:
            ConfigurationError: The model cannot, and ``request.required``.
        """
        ...


class OfflineChat:
    """The keyless extractive reader (:class:`selfroute.ExtractiveReader`) as a model client.

    It reports no usage (the flow counts the tokens locally and says so) and has no structured
    output.
    """

    window: int | None = None

    def __init__(self) -> None:
        self.reader = ExtractiveReader()
        self.name = ExtractiveReader.name

    def generate(self, prompt: str) -> Generation:
        """Answer from the prompt's passages, or decline."""
        return Generation(text=self.reader(prompt), model=self.name)

    def stream(self, prompt: str) -> Iterator[GenerationChunk]:
        """The answer as one piece."""
        yield GenerationChunk(text=self.reader(prompt))
        yield GenerationChunk(text="", model=self.name)

    def generate_structured(self, request: StructuredRequest) -> Generation | None:
        """``None``: the reader answers with a sentence or the decline word.

        Raises:
            ConfigurationError: ``request.required`` (``--verdict structured``).
        """
        structured_unsupported(
            request.required, "the offline reader has no structured output or tool calling"
        )
        return None


class LangChainChat:
    """Any LangChain chat model as a client (``google:`` specs): the LangChain adapter's readers
    of usage, model name and finish reason, and its structured-output path.

    Args:
        llm: The chat model.
    """

    def __init__(self, llm: Any) -> None:
        from langchain_selfroute._handlers import model_name, model_window

        self.llm = llm
        self.name = model_name(llm) or type(llm).__name__
        self.window = model_window(llm)

    def message(self, prompt: str) -> list[Any]:
        from langchain_core.messages import HumanMessage

        return [HumanMessage(content=prompt)]

    def generation(self, output: Any, *, streamed: bool = False) -> Generation:
        from langchain_selfroute._handlers import (
            message_finish_reason,
            message_model,
            message_text,
            message_usage,
        )

        return Generation(
            text=message_text(output),
            usage=message_usage(output),
            model=message_model(output) or self.name,
            finish_reason=message_finish_reason(output, streamed=streamed),
        )

    def generate(self, prompt: str) -> Generation:
        """``llm.invoke``."""
        return self.generation(self.llm.invoke(self.message(prompt)))

    def stream(self, prompt: str) -> Iterator[GenerationChunk]:
        """``llm.stream``: the text pieces, then the merged usage, model and finish reason."""
        from langchain_selfroute._handlers import message_text

        pieces = []
        for piece in self.llm.stream(self.message(prompt)):
            pieces.append(piece)
            text = message_text(piece)
            if text:
                yield GenerationChunk(text=text)
        merged = functools.reduce(operator.add, pieces) if pieces else ""
        final = self.generation(merged, streamed=True)
        yield GenerationChunk(
            text="", usage=final.usage, model=final.model, finish_reason=final.finish_reason
        )

    def generate_structured(self, request: StructuredRequest) -> Generation | None:
        """``llm.with_structured_output(schema, include_raw=True)``, as the LangChain adapter
        calls it (``None`` when the model has none)."""
        from langchain_selfroute._handlers import structured_generation, structured_model

        runnable = structured_model(self.llm, request)
        if runnable is None:
            return None
        output = runnable.invoke(self.message(request.prompt))
        return structured_generation(output, self.name)


def openai_window(name: str) -> int | None:
    """The input window of an OpenAI model from ``langchain-openai``'s model profiles (the
    ``max_input_tokens`` ``ChatOpenAI.profile`` reports), read from its data file without
    importing ``langchain_openai``; ``None`` when it is not installed or the model is unknown."""
    return _openai_profiles().get(name)


@functools.lru_cache(maxsize=1)
def _openai_profiles() -> dict[str, int]:
    try:
        spec = importlib.util.find_spec("langchain_openai")
    except (ImportError, ValueError):
        return {}
    if spec is None or not spec.submodule_search_locations:
        return {}
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "_profiles.py"
    loader_spec = importlib.util.spec_from_file_location("_selfroute_openai_profiles", path)
    if loader_spec is None or loader_spec.loader is None or not path.is_file():
        return {}
    module = importlib.util.module_from_spec(loader_spec)
    try:
        loader_spec.loader.exec_module(module)
    except Exception:  # a changed private file: no windows, as for an unknown model
        return {}
    profiles = getattr(module, "_PROFILES", None)
    if not isinstance(profiles, dict):
        return {}
    out: dict[str, int] = {}
    for model, profile in profiles.items():
        window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
        if isinstance(window, int) and not isinstance(window, bool) and window > 0:
            out[str(model)] = window
    return out


def build_client(
    spec: ModelSpec,
    *,
    flag: str = "--model",
    temperature: float = 0.0,
    timeout: float | None = 120.0,
    max_retries: int = 2,
) -> ChatClient:
    """The model client for ``spec``.

    Raises:
        MissingCredentialsError: No API key and no ``base_url``.
        MissingDependencyError: ``langchain-google-genai`` missing (``google:`` specs).
    """
    if spec.provider == "offline":
        return OfflineChat()
    if spec.provider == "openai":
        return OpenAIChat(
            spec.name,
            api_key=credential(spec, flag),
            base_url=spec.base_url,
            temperature=temperature,
            timeout=timeout,
            max_retries=max_retries,
            window=openai_window(spec.name),
        )
    llm = build_chat_model(
        spec, flag=flag, temperature=temperature, timeout=timeout, max_retries=max_retries
    )
    return LangChainChat(llm)
