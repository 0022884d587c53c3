"""Errors of the document store, all subclasses of :class:`selfroute.SelfRouteError`."""

from __future__ import annotations

from typing import Any

from selfroute._errors import ConfigurationError, InvalidInputError, SelfRouteError

__all__ = [
    "CollectionNotFoundError",
    "DocumentReadError",
    "EmbeddingMismatchError",
    "EmbeddingUnavailableError",
    "MissingCredentialsError",
    "StoreError",
]


class StoreError(SelfRouteError):
    """The document store could not do what was asked."""


class CollectionNotFoundError(StoreError):
    """The collection does not exist (nothing was indexed into it yet)."""


class EmbeddingMismatchError(StoreError, ConfigurationError):
    """The embedding asked for differs from the one the collection was indexed with.

    Attributes:
        recorded: The embedding recorded with the collection (``kind:model``).
        requested: The embedding that was asked for.
    """

    def __init__(self, message: str, *, recorded: str, requested: str) -> None:
        super().__init__(message, recorded=recorded, requested=requested)
        self.recorded = recorded
        self.requested = requested


class EmbeddingUnavailableError(StoreError):
    """The embedding model could not be loaded or called (offline, no model file, API down)."""


class MissingCredentialsError(ConfigurationError):
    """An API key that a model or embedding provider needs is not set.

    Attributes:
        variable: The environment variable to set.
    """

    def __init__(self, message: str, *, variable: str, **context: Any) -> None:
        super().__init__(message, variable=variable, **context)
        self.variable = variable


class DocumentReadError(InvalidInputError):
    """A file could not be turned into text (missing, binary, empty, unsupported, unreadable).

    Attributes:
        path: The file.
        reason: Why, in a few words.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}", path=path, reason=reason)
        self.path = path
        self.reason = reason
