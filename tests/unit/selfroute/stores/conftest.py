"""Fixtures for the store tests: a copy of the vendored documents and offline stores."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from selfroute.stores import DocumentStore

FIXTURE_DOCS = Path(__file__).parents[3] / "fixtures" / "docs"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A writable copy of ``tests/fixtures/docs``."""
    target = tmp_path / "docs"
    shutil.copytree(FIXTURE_DOCS, target)
    return target


@pytest.fixture
def make_store(tmp_path: Path) -> Callable[..., DocumentStore]:
    """``make_store(**kwargs)``: a store under ``tmp_path/store`` (offline embedding)."""

    def make(**kwargs: Any) -> DocumentStore:
        kwargs.setdefault("embedding", "offline")
        kwargs.setdefault("path", tmp_path / "store")
        return DocumentStore(**kwargs)

    return make
