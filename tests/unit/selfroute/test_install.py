"""Missing-extra hints name a ``pip install`` line that works for this installation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import selfroute._install as install
from selfroute import MissingDependencyError

ROOT = Path(__file__).resolve().parents[3]


def test_from_the_checkout_the_line_is_an_editable_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(ROOT)
    assert install.install_command("cli") == "pip install -e '.[cli]'"
    monkeypatch.chdir(tmp_path)
    assert install.install_command("cli") == f"pip install -e '{ROOT}[cli]'"
    assert f"install it with pip install -e '{ROOT}[chroma]'" in str(
        MissingDependencyError("chromadb", "chroma")
    )


class _Dist:
    def __init__(self, direct_url: dict[str, object] | None) -> None:
        self.raw = None if direct_url is None else json.dumps(direct_url)

    def read_text(self, name: str) -> str | None:
        assert name == "direct_url.json"
        return self.raw


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        (
            {"url": "file:///opt/dist/selfroute-0.1.0-py3-none-any.whl", "archive_info": {}},
            "pip install '/opt/dist/selfroute-0.1.0-py3-none-any.whl[llamaindex]'",
        ),
        (None, "pip install 'selfroute[llamaindex]'"),  # from a package index
    ],
)
def test_outside_a_checkout_the_line_follows_where_pip_installed_it_from(
    monkeypatch: pytest.MonkeyPatch, direct_url: dict[str, object] | None, expected: str
) -> None:
    import importlib.metadata

    monkeypatch.setattr(install, "_checkout_root", lambda: None)
    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Dist(direct_url))
    assert install.install_command("llamaindex") == expected
