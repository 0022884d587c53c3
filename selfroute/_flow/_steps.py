"""The step requests the flow yields, the answers it receives, and the handler protocols.

A step is a request for I/O (retrieve, run a model, load the long context, start or settle a
speculative call); a handler (an adapter) answers it. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from selfroute._fitting import ContextDocument
from selfroute._result import Passage, Stage
from selfroute._usage import Usage
from selfroute._verdict import DeclineDetector

__all__ = [
    "AsyncStepHandler",
    "Generate",
    "Generation",
    "GenerationChunk",
    "LoadLongContext",
    "Retrieve",
    "Settle",
    "Speculate",
    "Step",
    "StepHandler",
    "StructuredRequest",
]


@dataclass(frozen=True)
class Retrieve:
    """Ask the handler for the top-``k`` chunks for ``question``.

    The handler returns a sequence of :class:`~selfroute.Passage` (best first).

    Attributes:
        question: The question.
        k: How many chunks.
        timeout_s: The drivers give up on the retriever after this many seconds (``None``: wait
            as long as it takes); the flow then treats it as a retrieval failure.
    """

    question: str
    k: int
    timeout_s: float | None = None


@dataclass(frozen=True)
class StructuredRequest:
    """The structured-output form of a RAG step, offered to the handler.

    A handler whose model supports structured output (JSON schema) or tool calling sends
    ``prompt`` and asks for an object matching ``schema``, and returns it in
    :attr:`Generation.structured`; a handler that cannot sends the step's plain ``prompt`` instead
    (the sentinel form) -- unless ``required``, when it raises
    :class:`~selfroute.ConfigurationError`.

    Attributes:
        prompt: The prompt for structured output (no sentinel instruction).
        schema: JSON schema of the object (see :func:`~selfroute.verdict_schema`).
        required: ``verdict="structured"``: falling back to the sentinel is not allowed.
    """

    prompt: str
    schema: Mapping[str, Any]
    required: bool = False

    @property
    def name(self) -> str:
        """The schema's title (the tool or response-format name)."""
        return str(self.schema.get("title", "rag_verdict"))


@dataclass(frozen=True)
class Generate:
    """Ask the handler to run a model on ``prompt``.

    The handler returns a :class:`Generation` (or, when streaming, yields
    :class:`GenerationChunk`).

    Attributes:
        stage: ``rag`` (the cheap model, may decline) or ``long_context``.
        prompt: The full prompt (sent as one user message).
        question: The question, for tracing.
        sentinel: For the RAG stage: the decline word (streaming holds back text that could
            still become a decline).
        strict: For the RAG stage: whether only the sentinel counts as a decline.
        structured: For the RAG stage: the structured-output form the handler may use instead.
        grounded: Grounded mode: the answer carries quotes that are checked before any of it is
            shown (streaming delivers such an answer once it is verified).
        k: For the RAG stage: how many chunks the prompt shows (one step per k-ladder rung).
        speculative: A long-context call started alongside the RAG step (inside a
            :class:`Speculate`); it may be cancelled.
        timeout_s: The drivers give up on the call after this many seconds (what is left of
            the call's ``deadline_s``; ``None``: no limit).
        hold_chars: For a streamed RAG stage: ``RouteConfig.stream_hold_chars``.
        detector: For a streamed RAG stage: ``RouteConfig.decline_detector`` (the stream's
            hold asks it too).
    """

    stage: Stage
    prompt: str
    question: str
    sentinel: str | None = None
    strict: bool = False
    structured: StructuredRequest | None = None
    grounded: bool = False
    k: int | None = None
    speculative: bool = False
    timeout_s: float | None = field(default=None, compare=False)
    hold_chars: int = 0
    detector: DeclineDetector | None = field(default=None, compare=False, repr=False)

    @property
    def hold(self) -> bool:
        """Whether streamed ``text`` must be held back until the whole output is checked (a
        structured step's answer streams through ``GenerationChunk.structured_delta`` instead,
        once ``answerable`` is known; grounded answers still wait for the whole object)."""
        return self.grounded or self.structured is not None


@dataclass(frozen=True)
class LoadLongContext:
    """Ask the handler for the long context: a fixed document, the per-call document, or the
    parent documents of the retrieved chunks (most relevant first).

    The handler returns a sequence of :class:`~selfroute.ContextDocument` or strings, or ``None``
    when no long context is available.

    Attributes:
        question: The question.
        passages: The retrieved chunks (the parents of these are the usual long context).
        purpose: ``answer`` (the LC call will run) or ``counterfactual`` (only to price always-LC).
        timeout_s: The drivers give up on the loader after this many seconds (the store
            timeout, or what is left of the deadline; ``None``: no limit).
    """

    question: str
    passages: tuple[Passage, ...]
    purpose: str = "answer"
    timeout_s: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Speculate:
    """Start ``generate`` (a long-context call) in the background and answer at once with an
    opaque handle; the flow later settles it with :class:`Settle`.

    Drivers run it with the handler's ``agenerate`` as a task (async) or ``generate`` in a
    worker thread (sync); handlers need nothing new.
    """

    generate: Generate


@dataclass(frozen=True)
class Settle:
    """Settle a speculative call: wait for its :class:`Generation` (``cancel=False``), or cancel
    it (``cancel=True``: the driver answers with the ``Generation`` if it had already finished,
    else ``None``). ``timeout_s``: give up waiting after this many seconds (``None``: wait)."""

    handle: Any
    cancel: bool = False
    timeout_s: float | None = field(default=None, compare=False)


Step = Retrieve | Generate | LoadLongContext | Speculate | Settle


@dataclass(frozen=True)
class Generation:
    """A finished model call.

    Attributes:
        text: What the model wrote.
        usage: Provider-reported usage, or ``None`` if the provider reported none (the flow then
            estimates it and labels it an estimate).
        model: Model name as reported by the provider.
        latency_s: Set by the driver.
        structured: The parsed object when the handler used the step's structured form
            (``None`` when it sent the plain prompt).
        structured_error: Set (to what went wrong) when the handler used the structured form
            but got no valid object back; ``text`` then holds the raw output. The flow accepts
            a plain decline in it and fails safe to long context on anything else.
        finish_reason: How the call ended, in the core's words (the adapter normalizes the
            provider's value: ``stop``, ``length``, ``content_filter``, ``tool_calls``,
            ``incomplete`` for a stream that ended without one), or ``None`` when the provider
            did not say. ``length``, ``content_filter`` and ``incomplete`` mean the text was cut
            short: a RAG answer so cut is not a verdict (``truncated``).
    """

    text: str
    usage: Usage | None = None
    model: str | None = None
    latency_s: float = 0.0
    structured: Mapping[str, Any] | None = None
    structured_error: str | None = None
    finish_reason: str | None = None


@dataclass(frozen=True)
class GenerationChunk:
    """A piece of a streamed model call; usage, model and finish reason usually arrive on the
    last piece (the drivers keep the last finish reason set).

    A structured RAG step ends with one piece whose ``text`` / ``structured`` /
    ``structured_error`` carry what :class:`Generation` would (the drivers keep the last set).
    A handler whose model streams the object sends the pieces of its JSON text before that, as
    ``structured_delta`` (the JSON-schema response's content, or a tool call's argument deltas):
    the drivers read them as they come, decide once ``answerable`` has arrived and stream the
    ``answer`` text (held back, as plain text is, while it could still be a decline); the last
    piece's object still decides the route.

    Attributes:
        structured_delta: The next piece of a streamed structured object's JSON text (not part
            of ``text``).
    """

    text: str = ""
    usage: Usage | None = None
    model: str | None = None
    structured: Mapping[str, Any] | None = None
    structured_error: str | None = None
    finish_reason: str | None = None
    structured_delta: str = ""

    @classmethod
    def of_text(cls, text: str) -> GenerationChunk:
        """A piece with only ``text`` set: ``GenerationChunk(text=text)``, built for less (a
        stream makes one per token, and a frozen dataclass's ``__init__`` sets each field
        through ``object.__setattr__``)."""
        piece = object.__new__(cls)
        state = piece.__dict__
        state.update(_CHUNK_DEFAULTS)
        state["text"] = text
        return piece

    @classmethod
    def of(cls, gen: Generation) -> GenerationChunk:
        """A finished call as one piece (for handlers whose call does not stream)."""
        return cls(
            text=gen.text,
            usage=gen.usage,
            model=gen.model,
            structured=gen.structured,
            structured_error=gen.structured_error,
            finish_reason=gen.finish_reason,
        )


#: Every field of a :class:`GenerationChunk` at its default (see :meth:`GenerationChunk.of_text`).
_CHUNK_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(GenerationChunk)}


class StepHandler(Protocol):
    """What an adapter implements for the sync driver."""

    def retrieve(self, step: Retrieve) -> Sequence[Passage]:
        """Top-k passages for the question, best first."""
        ...

    def generate(self, step: Generate) -> Generation:
        """Run the stage's model on the prompt."""
        ...

    def stream(self, step: Generate) -> Iterable[GenerationChunk]:
        """Run the stage's model on the prompt, streaming."""
        ...

    def load_long_context(self, step: LoadLongContext) -> Sequence[ContextDocument | str] | None:
        """The long context, most relevant document first, or ``None``."""
        ...


class AsyncStepHandler(Protocol):
    """What an adapter implements for the async driver."""

    def aretrieve(self, step: Retrieve) -> Awaitable[Sequence[Passage]]:
        """Top-k passages for the question, best first."""
        ...

    def agenerate(self, step: Generate) -> Awaitable[Generation]:
        """Run the stage's model on the prompt."""
        ...

    def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        """Run the stage's model on the prompt, streaming."""
        ...

    def aload_long_context(
        self, step: LoadLongContext
    ) -> Awaitable[Sequence[ContextDocument | str] | None]:
        """The long context, most relevant document first, or ``None``."""
        ...
