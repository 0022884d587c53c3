"""Chroma's OpenAI and Gemini embedding functions, calling through selfroute's own client.

A collection indexed with ``--embedding openai`` or ``google`` records Chroma's
``OpenAIEmbeddingFunction`` or ``GoogleGeminiEmbeddingFunction`` (name and config), so Chroma
itself can reopen it. :func:`hosted_chroma_function` gives an instance of a subclass of that very
class -- same ``name()``, same ``get_config()``, so what is recorded does not change -- whose
calls go through :class:`~selfroute.stores._hosted.HostedEmbedder` (retries honouring 429 and
``Retry-After``, keys masked in errors, the same float32 vectors) instead of the ``openai`` or
``google-genai`` SDK, which are never imported: importing ``openai`` alone took longer than
embedding a large document on a loopback server.
"""

from __future__ import annotations

import os
from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute.stores._embedding import EmbeddingChoice
from selfroute.stores._hosted import HostedEmbedder

__all__ = ["hosted_chroma_function"]

_CLASSES: dict[str, Any] = {}


def _classes() -> dict[str, Any]:
    if _CLASSES:
        return _CLASSES
    try:
        from chromadb.utils.embedding_functions.google_embedding_function import (
            GoogleGeminiEmbeddingFunction,
        )
        from chromadb.utils.embedding_functions.openai_embedding_function import (
            OpenAIEmbeddingFunction,
        )
    except ImportError as exc:  # pragma: no cover - exercised only without chromadb
        raise MissingDependencyError("chromadb", "chroma") from exc

    class SelfRouteOpenAIEmbeddingFunction(OpenAIEmbeddingFunction):
        """Chroma's ``openai`` embedding function, called through selfroute's client."""

        def __init__(self, choice: EmbeddingChoice) -> None:  # no SDK client: not super()
            self.api_key_env_var = "OPENAI_API_KEY"
            self.api_key = os.environ.get("OPENAI_API_KEY")
            self.model_name = str(choice.model)
            self.organization_id = None
            self.api_base = choice.base_url
            self.api_type = None
            self.api_version = None
            self.deployment_id = None
            self.default_headers = None
            self.dimensions = None
            self._embedder = HostedEmbedder(choice, concurrency=1, step="embedding")

        def __call__(self, input: Any) -> Any:
            return self._embedder.embed(list(input))

        def is_legacy(self) -> bool:  # Chroma's test rebuilds the SDK's function: known False
            return False

    class SelfRouteGeminiEmbeddingFunction(GoogleGeminiEmbeddingFunction):
        """Chroma's ``google_gemini`` embedding function, called through selfroute's client."""

        def __init__(self, choice: EmbeddingChoice) -> None:  # no SDK client: not super()
            self._embedder = HostedEmbedder(choice, concurrency=1, step="embedding")
            self.model_name = str(choice.model)
            self.task_type = None
            self.dimension = None
            has_google = bool(os.environ.get("GOOGLE_API_KEY"))
            self.api_key_env_var = "GOOGLE_API_KEY" if has_google else "GEMINI_API_KEY"
            self.vertexai = None
            self.project = None
            self.location = None

        def __call__(self, input: Any) -> Any:
            return self._embedder.embed(list(input))

        def is_legacy(self) -> bool:  # Chroma's test rebuilds the SDK's function: known False
            return False

    _CLASSES.update(
        openai=SelfRouteOpenAIEmbeddingFunction, google=SelfRouteGeminiEmbeddingFunction
    )
    return _CLASSES


def hosted_chroma_function(choice: EmbeddingChoice) -> Any:
    """The Chroma embedding function of an ``openai`` or ``google`` choice (see the module).

    Raises:
        MissingCredentialsError: No API key where one is needed.
        MissingDependencyError: chromadb is not installed (extra ``chroma``).
    """
    return _classes()[choice.kind](choice)
