"""LangChain `Embeddings` backed by selfroute's offline `HashingEmbedding`."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from selfroute._embeddings import DEFAULT_EMBEDDING_DIM, HashingEmbedding

__all__ = ["HashingEmbeddings"]


class HashingEmbeddings(Embeddings):
    """Deterministic feature-hashing embeddings: no model download, no network, no API key.

    Good for tests, CI, demos and air-gapped setups (lexical similarity only). Vectors are
    L2-normalised and identical across processes, so persisted vector stores stay valid.

    Args:
        dim: Vector size.
        bigrams: Also hash word bigrams.
        lowercase: Fold case before tokenising.

    Example:
        >>> from langchain_core.vectorstores import InMemoryVectorStore
        >>> store = InMemoryVectorStore(HashingEmbeddings())
    """

    def __init__(
        self, dim: int = DEFAULT_EMBEDDING_DIM, *, bigrams: bool = False, lowercase: bool = True
    ) -> None:
        self._impl = HashingEmbedding(dim, bigrams=bigrams, lowercase=lowercase)

    @property
    def dim(self) -> int:
        """Vector size."""
        return self._impl.dim

    def config(self) -> dict[str, Any]:
        """Settings of the underlying `HashingEmbedding`."""
        return self._impl.config()

    def __repr__(self) -> str:
        return f"HashingEmbeddings(dim={self.dim})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (raises ``selfroute.InvalidInputError`` on non-strings)."""
        return self._impl.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return self._impl.embed_query(text)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents (CPU-cheap, computed inline rather than in a thread pool)."""
        return self._impl.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Embed a query (computed inline)."""
        return self._impl.embed_query(text)
