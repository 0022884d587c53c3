"""LlamaIndex `BaseEmbedding`s: selfroute's offline `HashingEmbedding`, and hosted APIs through
selfroute's concurrent client (`HostedEmbedding`)."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import Field, PrivateAttr

from selfroute._embeddings import CHROMA_EMBEDDING_NAME, DEFAULT_EMBEDDING_DIM
from selfroute._embeddings import HashingEmbedding as _HashingEmbedding
from selfroute.stores._embedding import EmbeddingChoice
from selfroute.stores._hosted import (
    DEFAULT_EMBEDDING_CONCURRENCY,
    HostedEmbedder,
    PendingVectors,
)

__all__ = ["HashingEmbedding", "HostedEmbedding"]


class HashingEmbedding(BaseEmbedding):
    """Deterministic feature-hashing embedding: no model download, no network, no API key.

    Good for tests, CI, demos and air-gapped setups (lexical similarity only). Use it as
    ``Settings.embed_model = HashingEmbedding()`` or pass ``embed_model=`` to an index.

    Args:
        dim: Vector size.
        bigrams: Also hash word bigrams.
        lowercase: Fold case before tokenising.
    """

    dim: int = Field(default=DEFAULT_EMBEDDING_DIM, description="Vector size.", ge=2)
    bigrams: bool = Field(default=False, description="Also hash word bigrams.")
    lowercase: bool = Field(default=True, description="Fold case before tokenising.")
    _impl: _HashingEmbedding = PrivateAttr()

    def __init__(
        self,
        dim: int = DEFAULT_EMBEDDING_DIM,
        *,
        bigrams: bool = False,
        lowercase: bool = True,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("model_name", CHROMA_EMBEDDING_NAME)
        kwargs.setdefault("embed_batch_size", 256)
        kwargs.update(dim=dim, bigrams=bigrams, lowercase=lowercase)
        super().__init__(**kwargs)
        self._impl = _HashingEmbedding(dim, bigrams=bigrams, lowercase=lowercase)

    @classmethod
    def class_name(cls) -> str:
        return "SelfRouteHashingEmbedding"

    def _get_query_embedding(self, query: str) -> Embedding:
        return self._impl.embed_query(query)

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return self._impl.embed_query(query)

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._impl.embed(text)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return self._impl.embed(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._impl.embed_documents(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return self._impl.embed_documents(texts)


class HostedEmbedding(BaseEmbedding):
    """LlamaIndex embedding through a hosted API with selfroute's concurrent client.

    The same client ``selfroute index`` uses: a batch goes out as token-sized requests within
    the provider's limits, up to ``concurrency`` at once, retried after a 429 (honouring
    ``Retry-After``) or a 5xx, with the vectors in order. LlamaIndex hands it batches of
    ``embed_batch_size`` texts (2048 by default, so one batch fills the requests in flight):
    :func:`~llamaindex_selfroute.build_index` and ``VectorStoreIndex`` index through it
    concurrently, and the async methods await the requests without blocking the event loop.

    Args:
        embedding: ``openai[:MODEL]`` (OpenAI or any OpenAI-compatible server, with
            ``base_url``) or ``google[:MODEL]`` (Gemini).
        base_url: OpenAI-compatible server (``http://host:port/v1``).
        concurrency: Requests in flight at once (>= 1).
    """

    embedding: str = Field(default="openai:text-embedding-3-small", description="KIND[:MODEL].")
    base_url: str | None = Field(default=None, description="OpenAI-compatible server.")
    concurrency: int = Field(default=DEFAULT_EMBEDDING_CONCURRENCY, ge=1)
    _impl: HostedEmbedder = PrivateAttr()

    def __init__(
        self,
        embedding: str = "openai:text-embedding-3-small",
        *,
        base_url: str | None = None,
        concurrency: int = DEFAULT_EMBEDDING_CONCURRENCY,
        **kwargs: Any,
    ) -> None:
        choice = EmbeddingChoice.parse(embedding, base_url=base_url)
        kwargs.setdefault("model_name", choice.spec)
        kwargs.setdefault("embed_batch_size", 2048)
        kwargs.update(embedding=embedding, base_url=base_url, concurrency=concurrency)
        super().__init__(**kwargs)
        self._impl = HostedEmbedder(choice, concurrency=concurrency, step="embedding")

    @classmethod
    def class_name(cls) -> str:
        return "SelfRouteHostedEmbedding"

    def _get_query_embedding(self, query: str) -> Embedding:
        return list(self._impl.embed([query])[0].tolist())

    async def _aget_query_embedding(self, query: str) -> Embedding:
        return list((await self._impl.submit([query]).aresult())[0].tolist())

    def _get_text_embedding(self, text: str) -> Embedding:
        return self._get_query_embedding(text)

    async def _aget_text_embedding(self, text: str) -> Embedding:
        return await self._aget_query_embedding(text)

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return [v.tolist() for v in self._impl.embed(texts)]

    def submit(self, texts: list[str]) -> PendingVectors:
        """Send ``texts`` out and return their pending float32 vectors at once (``.result()``
        waits for them, ``.cancel()`` drops the requests not started)."""
        return self._impl.submit(texts)

    async def _aget_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        if not texts:
            return []
        return [v.tolist() for v in await self._impl.submit(texts).aresult()]
