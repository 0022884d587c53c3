"""Exception hierarchy for selfroute.

Every exception raised on purpose by selfroute derives from :class:`SelfRouteError`, so callers can
catch one type. The subclasses split along who has to act:

* :class:`ConfigurationError` -- the caller configured something wrong (bad template, bad k, unknown
  strategy). Also a :class:`ValueError`.
* :class:`InvalidInputError` -- a question or document is unusable (empty, not a string). Raised
  before any model call. Also a :class:`ValueError`.
* :class:`ContextOverflowError` -- a document does not fit the long-context window and the
  ``error`` overflow strategy was chosen. Carries the sizes.
* :class:`RetrievalError` -- the retriever or vector store failed and there was no long context to
  fall back to.
* :class:`ModelOutputError` -- a model call failed or returned something unusable where no fallback
  applies.
* :class:`ModelConfigurationError` -- a provider rejected a model call (bad key, no permission,
  unknown model, request too large): a :class:`ConfigurationError` and a
  :class:`ModelOutputError`; never escalated (it would fail the same way, or spend the expensive
  model on every question).
* :class:`LongContextError` -- the long-context step failed; carries the partial result of the RAG
  step (its answer and usage) so nothing already paid for is lost.
* :class:`MissingDependencyError` -- an optional dependency is missing; names the extra to install.
  Also an :class:`ImportError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from selfroute._redact import redact

if TYPE_CHECKING:
    from selfroute._result import RouteResult

__all__ = [
    "ConfigurationError",
    "ContextOverflowError",
    "InvalidInputError",
    "LongContextError",
    "MissingDependencyError",
    "ModelConfigurationError",
    "ModelOutputError",
    "RetrievalError",
    "SelfRouteError",
]


class SelfRouteError(Exception):
    """Base class of every error selfroute raises on purpose.

    The message is passed through :func:`~selfroute._redact.redact`, so an API key echoed by a
    provider error never reaches an exception message made by selfroute.

    Attributes:
        context: Extra facts about the failure (sizes, step, model), for logs and debugging.
    """

    def __init__(self, message: str, **context: Any) -> None:
        super().__init__(redact(message))
        self.context: dict[str, Any] = dict(context)


class ConfigurationError(SelfRouteError, ValueError):
    """A setting is invalid (for example a prompt template without ``{question}``)."""


class InvalidInputError(SelfRouteError, ValueError):
    """A question or document cannot be used (empty, whitespace only, wrong type)."""


class ContextOverflowError(SelfRouteError):
    """The long context does not fit the model window and the strategy is ``error``.

    Attributes:
        document_tokens: Tokens the document needs.
        available_tokens: Tokens available for the document in the window.
        window_tokens: The configured long-context window.
    """

    def __init__(
        self, message: str, *, document_tokens: int, available_tokens: int, window_tokens: int
    ) -> None:
        super().__init__(
            message,
            document_tokens=document_tokens,
            available_tokens=available_tokens,
            window_tokens=window_tokens,
        )
        self.document_tokens = document_tokens
        self.available_tokens = available_tokens
        self.window_tokens = window_tokens


class RetrievalError(SelfRouteError):
    """The retriever failed and no long context was available to fall back to."""


class ModelOutputError(SelfRouteError):
    """A model call failed or its output was unusable and no fallback applied."""


class ModelConfigurationError(ConfigurationError, ModelOutputError):
    """A provider rejected a model call as wrongly configured (HTTP 400, 401, 403, 404, 422).

    Raised at once, not escalated: a typo in the RAG model's name must not send every question
    to the long-context model. ``context`` holds ``stage`` (``rag``/``long_context``),
    ``status`` and ``model``.
    """


class LongContextError(SelfRouteError):
    """The long-context step failed after the RAG step ran.

    Attributes:
        partial: A :class:`~selfroute.RouteResult` with what was computed before the failure: the
            RAG-step answer, its verdict and usage, the sources. ``partial.answer`` is ``None``.
    """

    def __init__(self, message: str, *, partial: RouteResult, **context: Any) -> None:
        super().__init__(message, **context)
        self.partial = partial


class MissingDependencyError(SelfRouteError, ImportError):
    """An optional dependency is not installed.

    The message names the ``pip install`` line that works for this installation: ``pip install
    -e '.[EXTRA]'`` in a checkout, the wheel's path for a wheel, ``selfroute[EXTRA]`` from an index.

    Attributes:
        extra: The extra (``pip install 'selfroute[EXTRA]'``) that provides it.
    """

    def __init__(self, package: str, extra: str) -> None:
        from selfroute._install import install_command

        super().__init__(
            f"{package} is required for this feature; install it with {install_command(extra)}",
            package=package,
            extra=extra,
        )
        self.extra = extra
        self.package = package
