"""``selfroute calibrate``: the threshold search, the results reader, the config writer."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from selfroute import ConfigurationError, InvalidInputError
from selfroute.cli import build_parser, main
from selfroute.cli._calibrate import Question, calibrate, load_questions, update_pre_route
from selfroute.cli._config import load_toml, resolve


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith("SELFROUTE_"):
            monkeypatch.delenv(name)


def q(top: float | None, answered: bool, rag: int = 100, lc: int = 1000, text: str = "Who?"):
    return Question(text, top, answered, rag, lc)


def test_threshold_between_weak_declines_and_strong_answers() -> None:
    questions = [q(1.0, False), q(1.5, False), q(5.0, True), q(6.0, True)]
    result = calibrate(questions)
    assert result.plain_tokens == 2 * 1100 + 2 * 100
    assert result.min_top_score is not None and 1.5 < result.min_top_score <= 5.0
    assert result.min_top_score == 3.0  # a short number between the two scores
    assert (result.best.tokens, result.best.pre_routed, result.best.lost) == (2200, 2, 0)
    assert not result.global_questions
    table = result.table()
    assert "<- chosen" in table and "off" in table and "none in the data" in table


def test_no_threshold_when_pre_routing_never_pays() -> None:
    # every question is answered from the chunks: pre-routing any costs its whole document
    result = calibrate([q(1.0, True), q(2.0, True), q(3.0, True)])
    assert result.min_top_score is None and result.best.tokens == 300
    assert result.candidates[0].threshold is None


def test_equal_scores_move_together_and_lost_answers_count() -> None:
    questions = [q(1.0, False), q(1.0, True, rag=100, lc=150), q(4.0, True)]
    result = calibrate(questions)
    assert [c.pre_routed for c in result.candidates] == [0, 2, 3]
    pre_two = result.candidates[1]
    assert pre_two.lost == 1 and pre_two.tokens == 1000 + 150 + 100
    assert result.best is pre_two  # 1,250 < plain 1,300


def test_global_detector_enabled_only_when_it_lowers_tokens() -> None:
    costly = q(9.0, False, text="Summarize the whole report.")
    cheap = q(9.0, True, rag=100, lc=5000, text="What is the overall budget?")
    on = calibrate([costly, q(9.0, True)])
    assert on.global_questions and on.global_matched == 1 and on.best.pre_routed >= 1
    off = calibrate([cheap, q(9.0, True)])
    assert not off.global_questions and "does not pay" in off.table()
    with pytest.raises(ConfigurationError, match="objective"):
        calibrate([costly], objective="money")


def _record(method: str = "self_route", **kw: Any) -> dict[str, Any]:
    row = {
        "item_id": kw.pop("item_id", "i"),
        "method": method,
        "k": 5,
        "question": "Who?",
        "reason": "answered",
        "answered_from_chunks": True,
        "top_score": 3.0,
        "rag_input_tokens": 100,
        "lc_input_tokens": 0,
        "lc_reference_tokens": 1000,
        "calls": [],
        "error": None,
    }
    row.update(kw)
    return row


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_load_questions_reads_plain_self_route_runs(tmp_path: Path) -> None:
    old_style = {  # a results line without the new fields: derived from calls and retrieved
        **_record(answered_from_chunks=False, reason="declined"),
        "calls": [
            {"stage": "rag", "usage": {"input_tokens": 120}},
            {"stage": "long_context", "usage": {"input_tokens": 900}},
        ],
        "retrieved": [{"score": 2.0}, {"score": 1.0}],
    }
    for key in ("top_score", "rag_input_tokens", "lc_input_tokens"):
        del old_style[key]
    path = _write(
        tmp_path / "results.jsonl",
        [_record("lc"), _record(), old_style, _record(k=10), _record(error="boom")],
    )
    questions, k, notes = load_questions(path)
    assert k == 5 and len(questions) == 2
    assert questions[0] == Question("Who?", 3.0, True, 100, 1000)
    assert questions[1] == Question("Who?", 2.0, False, 120, 900)
    assert any("k=[5, 10]" in n for n in notes) and any("skipped 1" in n for n in notes)
    assert len(load_questions(tmp_path, k=10)[0]) == 1  # the folder works too


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (None, "no such file"),
        ("garbage\n", "line 1 is not JSON"),
        ('{"a": 1}\n', "not a `selfroute eval` results record (missing item_id"),
        ("", "is empty"),
        ([_record("lc")], "no plain Self-Route runs"),
        ([_record(reason="weak_retrieval")], "were pre-routed"),
        ([_record(top_score=None)], "no retrieval scores in the records"),
    ],
)
def test_bad_results_files_are_one_line_errors(
    tmp_path: Path, rows: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "results.jsonl"
    if isinstance(rows, str):
        path.write_text(rows, encoding="utf-8")
    elif rows is not None:
        _write(path, rows)
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        load_questions(path, k=None)
    assert main(["calibrate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("selfroute: error: ") and message.split("`")[0] in err
    assert len(err.strip().splitlines()) == 1
    assert not Path("selfroute.toml").exists()


def test_update_pre_route_keeps_everything_else() -> None:
    text = '# mine\nmodel = "openai:gpt-4o-mini"\n\n[pre_route]\nglobal_questions = true\n'
    out = update_pre_route(text, {"global_questions": False, "min_top_score": 2.5})
    assert out.startswith('# mine\nmodel = "openai:gpt-4o-mini"\n')
    assert "global_questions = false\nmin_top_score = 2.5\n" in out
    again = update_pre_route(out, {"global_questions": True, "min_top_score": None})
    assert "min_top_score" not in again and "global_questions = true" in again
    added = update_pre_route('k = 3\n[selfroute]\nstore = "kb"', {"min_top_score": 1.0})
    assert added.endswith('store = "kb"\n\n[pre_route]\nmin_top_score = 1.0\n')
    nested = update_pre_route("[selfroute.pre_route]\nmin-top-score = 4\n", {"min_top_score": 2.0})
    assert nested == "[selfroute.pre_route]\nmin_top_score = 2.0\n"
    assert update_pre_route("", {"min_top_score": 2.0}) == "[pre_route]\nmin_top_score = 2.0\n"


def test_calibrate_writes_the_config_that_ask_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        _record(item_id="a", top_score=1.0, answered_from_chunks=False, reason="declined",
                lc_input_tokens=1000),
        _record(item_id="b", top_score=1.5, answered_from_chunks=False, reason="declined",
                lc_input_tokens=1000),
        _record(item_id="c", top_score=5.0),
        _record(item_id="d", top_score=6.0),
    ]  # fmt: skip
    path = _write(tmp_path / "results.jsonl", rows)
    config = tmp_path / "selfroute.toml"
    config.write_text('model = "openai:gpt-4o-mini"\nk = 5\n', encoding="utf-8")
    assert main(["calibrate", str(path), "--no-write"]) == 0
    assert "min_top_score = 3" in capsys.readouterr().out
    assert "pre_route" not in config.read_text()
    assert main(["calibrate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "<- chosen" in out and "wrote [pre_route]" in out
    text = config.read_text()
    assert text.startswith('model = "openai:gpt-4o-mini"\nk = 5\n')
    settings = resolve(
        build_parser().parse_args(["ask", "q"]),
        "ask",
        environ={},
        config=load_toml(None, explicit=False),
    )
    assert settings.min_top_score == 3.0 and settings.pre_route is False
    assert settings.source("min_top_score") == "file"
    other = tmp_path / "other.toml"
    assert main(["calibrate", str(path), "--config", str(other)]) == 0
    assert load_toml(other, explicit=True)["min_top_score"] == 3.0


def test_an_invalid_config_file_is_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path / "results.jsonl", [_record()])
    config = tmp_path / "selfroute.toml"
    config.write_text("k = [", encoding="utf-8")
    assert main(["calibrate", str(path)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    assert config.read_text() == "k = ["
    inline = tmp_path / "inline.toml"
    inline.write_text("pre_route = { min_top_score = 9.0 }\n", encoding="utf-8")
    rows = [_record(item_id="a", top_score=1.0, answered_from_chunks=False, lc_input_tokens=1000),
            _record(item_id="b", top_score=5.0)]  # fmt: skip
    _write(path, rows)
    assert main(["calibrate", str(path), "--config", str(inline)]) == 2
    assert "by hand" in capsys.readouterr().err
