"""LangChain `Embeddings`: selfroute's offline `HashingEmbedding`, and hosted APIs through
selfroute's concurrent client (`HostedEmbeddings`)."""

from __future__ import annotations

from typing import Any

from langchain_core.embeddings import Embeddings

from selfroute._embeddings import DEFAULT_EMBEDDING_DIM, HashingEmbedding
from selfroute.stores._embedding import EmbeddingChoice
from selfroute.stores._hosted import (
    DEFAULT_EMBEDDING_CONCURRENCY,
    HostedEmbedder,
    PendingVectors,
)

__all__ = ["HashingEmbeddings", "HostedEmbeddings"]


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


class HostedEmbeddings(Embeddings):
    """LangChain `Embeddings` through a hosted API with selfroute's concurrent client.

    The same client ``selfroute index`` uses: each ``embed_documents`` call goes out as
    token-sized requests within the provider's limits, up to ``concurrency`` at once, retried
    after a 429 (honouring ``Retry-After``) or a 5xx, and returns the vectors in order. So
    :func:`~langchain_selfroute.index_documents` and ``Chroma.from_documents`` index through it
    concurrently; ``aembed_documents`` awaits the requests without blocking the event loop.

    Args:
        embedding: ``openai[:MODEL]`` (OpenAI or any OpenAI-compatible server, with
            ``base_url``; key ``OPENAI_API_KEY``) or ``google[:MODEL]`` (Gemini; key
            ``GOOGLE_API_KEY`` or ``GEMINI_API_KEY``).
        base_url: OpenAI-compatible server (``http://host:port/v1``).
        concurrency: Requests in flight at once (>= 1).

    Raises:
        selfroute.ConfigurationError: Not a hosted kind, or a bad ``concurrency``.
        selfroute.stores.MissingCredentialsError: No API key where one is needed.

    Example:
        >>> emb = HostedEmbeddings("openai:text-embedding-3-small")  # doctest: +SKIP
    """

    def __init__(
        self,
        embedding: str = "openai:text-embedding-3-small",
        *,
        base_url: str | None = None,
        concurrency: int = DEFAULT_EMBEDDING_CONCURRENCY,
    ) -> None:
        choice = EmbeddingChoice.parse(embedding, base_url=base_url)
        self._impl = HostedEmbedder(choice, concurrency=concurrency, step="embedding")

    def __repr__(self) -> str:
        return f"HostedEmbeddings({self._impl.choice.spec!r}, concurrency={self._impl.concurrency})"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents concurrently (vectors in input order)."""
        return [v.tolist() for v in self._impl.embed(texts)]

    def submit(self, texts: list[str]) -> PendingVectors:
        """Send ``texts`` out and return their pending float32 vectors at once (``.result()``
        waits for them, ``.cancel()`` drops the requests not started)."""
        return self._impl.submit(texts)

    def embed_query(self, text: str) -> list[float]:
        """Embed a query."""
        return list(self._impl.embed([text])[0].tolist())

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed documents, awaiting the requests."""
        if not texts:
            return []
        return [v.tolist() for v in await self._impl.submit(texts).aresult()]

    async def aembed_query(self, text: str) -> list[float]:
        """Embed a query, awaiting the request."""
        return list((await self._impl.submit([text]).aresult())[0].tolist())
