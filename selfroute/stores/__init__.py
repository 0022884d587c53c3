"""A document store for Self-Route: files -> chunks and full documents in Chroma, hybrid retrieval.

* :class:`DocumentStore` indexes ``.txt``, ``.md``, ``.html`` and ``.pdf`` files into an embedded
  Chroma ``PersistentClient`` (or a Chroma server), idempotently and crash-safely, keeping the full
  documents for the long-context route and a ``bm25s`` index beside the store.
* :class:`HybridRetriever` returns :class:`selfroute.Passage` lists (dense + BM25 fused by
  reciprocal rank fusion, or either alone) and loads the parent documents as long context.

Chroma, bm25s and pypdf are imported only when used (extras ``chroma`` and ``cli``).
"""

from __future__ import annotations

from selfroute.stores._bm25 import BM25Index
from selfroute.stores._discovery import FoundFile, Skipped, discover_files
from selfroute.stores._embedding import EMBEDDING_KINDS, EmbeddingChoice
from selfroute.stores._errors import (
    CollectionNotFoundError,
    DocumentReadError,
    EmbeddingMismatchError,
    EmbeddingUnavailableError,
    MissingCredentialsError,
    StoreError,
)
from selfroute.stores._readers import SUPPORTED_SUFFIXES, LoadedDocument, read_document
from selfroute.stores._retriever import RETRIEVAL_MODES, HybridRetriever, rrf_fuse
from selfroute.stores._store import (
    DEFAULT_COLLECTION,
    DEFAULT_STORE,
    DOCUMENTS_SUFFIX,
    DocumentStore,
    IndexReport,
    StoreStats,
)

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_STORE",
    "DOCUMENTS_SUFFIX",
    "EMBEDDING_KINDS",
    "RETRIEVAL_MODES",
    "SUPPORTED_SUFFIXES",
    "BM25Index",
    "CollectionNotFoundError",
    "DocumentReadError",
    "DocumentStore",
    "EmbeddingChoice",
    "EmbeddingMismatchError",
    "EmbeddingUnavailableError",
    "FoundFile",
    "HybridRetriever",
    "IndexReport",
    "LoadedDocument",
    "MissingCredentialsError",
    "Skipped",
    "StoreError",
    "StoreStats",
    "discover_files",
    "read_document",
    "rrf_fuse",
]
