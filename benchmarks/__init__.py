"""Benchmarks of selfroute: overhead, concurrency, streaming, indexing, routing economics, fitting.

Run them all with ``python -m benchmarks`` (``--quick`` for a tiny run); results land in
``docs/benchmarks.md``.
"""

__all__: list[str] = []
