"""Which embedding function a collection uses, and calling it with clear errors.

Four choices, recorded with the collection as ``kind:model`` (for example
``default:all-MiniLM-L6-v2``):

* ``default`` -- Chroma's default embedding function (all-MiniLM-L6-v2 in ONNX, fetched once by
  Chroma into ``~/.cache/chroma``). If it cannot be fetched, :class:`EmbeddingUnavailableError`
  names the ``offline`` alternative.
* ``offline`` -- :func:`selfroute._embeddings.chroma_embedding_function`: deterministic feature
  hashing, no model and no network (air-gapped machines, tests, CI).
* ``openai`` -- OpenAI embeddings (``OPENAI_API_KEY``; any OpenAI-compatible server via
  ``base_url``).
* ``google`` -- Gemini embeddings (``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute.stores._errors import EmbeddingUnavailableError, MissingCredentialsError

__all__ = [
    "EMBEDDING_KINDS",
    "EmbeddingChoice",
    "create_embedding_function",
    "embed_documents",
    "embed_query",
    "embed_rows",
    "require_key",
]

#: The embedding kinds the store understands.
EMBEDDING_KINDS = ("default", "offline", "openai", "google")

_DEFAULT_MODELS = {
    "default": "all-MiniLM-L6-v2",
    "offline": "selfroute-hashing-384",
    "openai": "text-embedding-3-small",
    "google": "gemini-embedding-001",
}


@dataclass(frozen=True)
class EmbeddingChoice:
    """An embedding kind and model.

    Attributes:
        kind: ``default``, ``offline``, ``openai`` or ``google``.
        model: The model name (each kind has a default).
        base_url: For ``openai``: an OpenAI-compatible server (not part of the identity).
    """

    kind: str = "default"
    model: str | None = None
    base_url: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in EMBEDDING_KINDS:
            raise ConfigurationError(
                f"unknown embedding {self.kind!r}; choose one of {', '.join(EMBEDDING_KINDS)}"
            )
        if self.kind in ("default", "offline") and self.model not in (
            None,
            _DEFAULT_MODELS[self.kind],
        ):
            raise ConfigurationError(
                f"the {self.kind!r} embedding has one model ({_DEFAULT_MODELS[self.kind]}); "
                f"got {self.model!r}"
            )
        if self.model is None:
            object.__setattr__(self, "model", _DEFAULT_MODELS[self.kind])

    @property
    def spec(self) -> str:
        """``kind:model``, as recorded in the collection's metadata."""
        return f"{self.kind}:{self.model}"

    @classmethod
    def parse(cls, spec: str, *, base_url: str | None = None) -> EmbeddingChoice:
        """Parse ``kind`` or ``kind:model``.

        Raises:
            ConfigurationError: Unknown kind.
        """
        kind, _, model = str(spec).strip().partition(":")
        return cls(kind.strip().lower(), model.strip() or None, base_url)


def require_key(names: Sequence[str], what: str, alternative: str) -> str:
    """The first of the environment variables ``names`` that is set, or
    :class:`MissingCredentialsError` saying what needs it and the ``alternative``."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    raise MissingCredentialsError(
        f"{what} needs an API key: set {' or '.join(names)}, or {alternative}",
        variable=names[0],
    )


def create_embedding_function(choice: EmbeddingChoice) -> Any:
    """Build the Chroma embedding function for ``choice``.

    Raises:
        MissingDependencyError: chromadb (or the provider's client) is not installed.
        MissingCredentialsError: ``openai``/``google`` without an API key.
    """
    try:
        import chromadb.utils.embedding_functions as efs
    except ImportError as exc:
        raise MissingDependencyError("chromadb", "chroma") from exc
    if choice.kind == "offline":
        from selfroute._embeddings import chroma_embedding_function

        return chroma_embedding_function()
    if choice.kind == "default":
        return efs.DefaultEmbeddingFunction()
    if choice.kind == "openai":
        from_env = bool(os.environ.get("OPENAI_API_KEY"))
        if from_env or not choice.base_url:
            require_key(
                ["OPENAI_API_KEY"],
                "--embedding openai",
                "use --embedding offline (no key, no network)",
            )
        try:
            with warnings.catch_warnings():
                # a local server needs no key; Chroma warns that a direct key is not persisted
                warnings.simplefilter("ignore", DeprecationWarning)
                return efs.OpenAIEmbeddingFunction(
                    api_key=None if from_env else "not-needed",
                    model_name=str(choice.model),
                    api_key_env_var="OPENAI_API_KEY",
                    api_base=choice.base_url,
                )
        except ValueError as exc:  # openai package missing
            raise MissingDependencyError("openai", "openai") from exc
    variable = "GOOGLE_API_KEY" if os.environ.get("GOOGLE_API_KEY") else "GEMINI_API_KEY"
    require_key(
        ["GOOGLE_API_KEY", "GEMINI_API_KEY"],
        "--embedding google",
        "use --embedding offline (no key, no network)",
    )
    try:
        return efs.GoogleGeminiEmbeddingFunction(
            model_name=str(choice.model), api_key_env_var=variable
        )
    except ValueError as exc:
        if "google" in str(exc).lower() and "install" in str(exc).lower():
            raise MissingDependencyError("google-genai", "google") from exc
        raise


def _unavailable(choice: EmbeddingChoice, exc: BaseException) -> EmbeddingUnavailableError:
    detail = f"{type(exc).__name__}: {exc}".strip()
    if len(detail) > 300:
        detail = detail[:300] + "..."
    if choice.kind == "default":
        return EmbeddingUnavailableError(
            "Chroma's default embedding model (all-MiniLM-L6-v2) could not be loaded or "
            f"downloaded ({detail}); on a machine without internet index with --embedding "
            "offline, or ask a store indexed with it using --retrieval bm25",
            embedding=choice.spec,
        )
    return EmbeddingUnavailableError(
        f"the {choice.spec} embedding failed ({detail}); check the key and the network, or use "
        "--embedding offline",
        embedding=choice.spec,
    )


def _as_lists(vectors: Any) -> list[list[float]]:
    return [list(map(float, v.tolist() if hasattr(v, "tolist") else v)) for v in vectors]


def embed_documents(
    function: Any, choice: EmbeddingChoice, texts: Sequence[str]
) -> list[list[float]]:
    """Embed ``texts`` with ``function``; failures become :class:`EmbeddingUnavailableError`."""
    if not texts:
        return []
    try:
        return _as_lists(function(list(texts)))
    except (KeyboardInterrupt, MissingDependencyError, EmbeddingUnavailableError):
        raise
    except Exception as exc:
        raise _unavailable(choice, exc) from exc


def embed_rows(function: Any, choice: EmbeddingChoice, texts: Sequence[str]) -> list[Any]:
    """:func:`embed_documents` for writes: one vector per text as the function made it.

    Chroma's functions return numpy arrays, which its writes take as they are; converting 10^4
    vectors to lists of floats (and Chroma converting them back) cost about a twentieth of a
    small file's indexing time.
    """
    if not texts:
        return []
    try:
        vectors = list(function(list(texts)))
        if len(vectors) != len(texts):
            raise ValueError(f"{len(vectors)} vectors for {len(texts)} texts")
        return vectors
    except (KeyboardInterrupt, MissingDependencyError, EmbeddingUnavailableError):
        raise
    except Exception as exc:
        raise _unavailable(choice, exc) from exc


def embed_query(function: Any, choice: EmbeddingChoice, text: str) -> list[float]:
    """Embed one query; failures become :class:`EmbeddingUnavailableError`."""
    try:
        query = getattr(function, "embed_query", None)
        vectors = query([text]) if query is not None else function([text])
        return _as_lists(vectors)[0]
    except (KeyboardInterrupt, MissingDependencyError, EmbeddingUnavailableError):
        raise
    except Exception as exc:
        raise _unavailable(choice, exc) from exc
