"""LlamaIndex `BaseEmbedding` backed by selfroute's offline `HashingEmbedding`."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding, Embedding
from pydantic import Field, PrivateAttr

from selfroute._embeddings import CHROMA_EMBEDDING_NAME, DEFAULT_EMBEDDING_DIM
from selfroute._embeddings import HashingEmbedding as _HashingEmbedding

__all__ = ["HashingEmbedding"]


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
