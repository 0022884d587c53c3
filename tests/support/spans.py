"""OpenTelemetry spans collected in memory (the SDK's ``InMemorySpanExporter``) for the tracing
tests, and helpers to read their tree."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["SpanRecorder", "global_provider", "recorder"]


class SpanRecorder:
    """A ``TracerProvider`` whose finished spans are kept in memory.

    Attributes:
        provider: Pass as ``tracing=`` (or make it the global provider, see
            :func:`global_provider`).
        exporter: The ``InMemorySpanExporter``.
    """

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def spans(self) -> list[Any]:
        """Every finished span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def clear(self) -> None:
        self.exporter.clear()

    def roots(self) -> list[Any]:
        """The ``SelfRoute`` spans (one per routed question), in the order they started."""
        roots = [s for s in self.spans() if s.name == "SelfRoute"]
        return sorted(roots, key=lambda s: s.start_time)

    def root(self) -> Any:
        """The one ``SelfRoute`` span (fails if there is not exactly one)."""
        roots = self.roots()
        assert len(roots) == 1, [s.name for s in self.spans()]
        return roots[0]

    def children(self, parent: Any) -> list[Any]:
        """The spans whose parent is ``parent``, in the order they started."""
        ctx = parent.context
        kids = [
            s
            for s in self.spans()
            if s.parent is not None
            and s.parent.span_id == ctx.span_id
            and s.context.trace_id == ctx.trace_id
        ]
        return sorted(kids, key=lambda s: s.start_time)

    def shape(self, parent: Any) -> list[tuple[str, str]]:
        """``(name, openinference.span.kind)`` of ``parent``'s children."""
        return [(s.name, s.attributes["openinference.span.kind"]) for s in self.children(parent)]

    def child(self, parent: Any, name: str) -> Any:
        """The one child of ``parent`` called ``name``."""
        found = [s for s in self.children(parent) if s.name == name]
        assert len(found) == 1, (name, self.shape(parent))
        return found[0]


@pytest.fixture
def recorder() -> SpanRecorder:
    """A fresh :class:`SpanRecorder`."""
    pytest.importorskip("opentelemetry.sdk")
    return SpanRecorder()


@pytest.fixture
def global_provider(
    recorder: SpanRecorder, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SpanRecorder]:
    """``recorder``'s provider as the global tracer provider for the test (what
    ``opentelemetry.trace.get_tracer_provider()`` returns; the real global is set once per
    process, so it is patched rather than set)."""
    from opentelemetry import trace

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: recorder.provider)
    yield recorder
