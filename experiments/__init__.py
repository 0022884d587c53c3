"""One-off experiments: measured, written up, not shipped and not part of the benchmarks.

See ``experiments/README.md``.
"""
