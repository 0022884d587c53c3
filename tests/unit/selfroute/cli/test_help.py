"""``--help`` of every command is plain text: no reStructuredText markup, no internal notes."""

from __future__ import annotations

import contextlib
import io

import pytest

from selfroute.cli import main

MARKUP = ("``", ":func:", ":class:", ":mod:", "Registered by", "add_parser")


@pytest.mark.parametrize("command", [[], ["index"], ["ask"], ["chat"], ["stats"], ["eval"],
                                     ["calibrate"], ["verdicts"]])  # fmt: skip
def test_help_has_no_markup_or_internal_notes(command: list[str]) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0
    text = out.getvalue()
    assert text.startswith("usage: selfroute")
    assert [m for m in MARKUP if m in text] == []
