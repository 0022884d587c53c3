"""``mypy --strict`` accepts the usual SelfRoute calls (tests/typing/selfroute_calls.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.integration
def test_usual_calls_type_check_strictly() -> None:
    # The project's own mypy cache (warm after `mypy` in CI) keeps this to seconds.
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            str(ROOT / "tests" / "typing" / "selfroute_calls.py"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
