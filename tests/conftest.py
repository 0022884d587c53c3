"""Test-wide settings: offline, loopback only, Chroma telemetry off."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("CHROMA_TELEMETRY", "False")
os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

pytest_plugins = ["tests.support.fixtures", "tests.support.spans"]

_TESTS = Path(__file__).resolve().parent
#: Tiers by location: everything under these folders carries the marker without saying so.
_TIER_BY_FOLDER = {"integration": "integration"}
#: Fixtures that start a real server process (a ``chroma run``): the tests that use one are ``server``.
_SERVER_FIXTURES = frozenset({"chroma_server"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier: ``integration`` by folder, ``server`` by fixture; run the
    ``install`` tests first.

    ``slow`` and ``install`` are marked where the tests are written (``pytestmark``); the quick
    loop is ``python -m pytest -m "not integration and not slow"``.
    """
    del config
    for item in items:
        try:
            parts = Path(str(item.path)).resolve().relative_to(_TESTS).parts
        except ValueError:
            continue
        marker = _TIER_BY_FOLDER.get(parts[0]) if parts else None
        if marker and item.get_closest_marker(marker) is None:
            item.add_marker(marker)
        if _SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker("server")
    # Longest first: the fresh-environment installs take minutes; started first, they overlap
    # the rest of a parallel run instead of trailing it (stable: otherwise collection order).
    items.sort(key=lambda item: item.get_closest_marker("install") is None)
