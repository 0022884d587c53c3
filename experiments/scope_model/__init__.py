"""The learned scope model of the verdict parser: an experiment that did not beat the rules.

* :mod:`experiments.scope_model.model` -- features and pure-Python inference.
* :mod:`experiments.scope_model.train` -- training and cross-validation (numpy).
* :mod:`experiments.scope_model.measure` -- the verdict benchmarks' tables with its rows added.

The write-up is ``docs/verdict.md``, "A learned scope model".
"""
