"""``selfroute verdicts``: the decline detector on a file of your model's outputs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from selfroute._jsonl import jsonl_objects
from selfroute.cli import main
from selfroute.cli._verdicts import Row, read_rows, summarise

ROWS = [
    {"prediction": "unanswerable", "question": "When was she born?", "declined": True},
    {"prediction": "The passages do not mention her birth.", "declined": True},
    {"prediction": "Keine Angaben zum Geburtsjahr.", "declined": True},  # missed by the rules
    {"prediction": "She was born in 1901.", "question": "When was she born?", "declined": False},
    # a yes/no question answered "no": an answer with the question, a decline without it
    {"prediction": "No, the paper does not mention BERT.", "question": "Do they use BERT?", "declined": False},
    {"prediction": "", "declined": None},
]  # fmt: skip


def _file(tmp_path: Path, rows: list[dict[str, object]] = ROWS) -> Path:
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_counts_and_scores_against_the_labels() -> None:
    rows = list(read_rows(jsonl_objects([json.dumps(r) for r in ROWS], "t")))
    summary = summarise(rows)
    assert summary.rows == 6 and summary.declined == 3  # sentinel, refusal, empty
    assert summary.kinds == {"answered": 3, "sentinel": 1, "refusal": 1, "empty": 1}
    assert (summary.labelled, summary.caught, summary.false_declines, summary.missed) == (
        5,
        2,
        0,
        1,
    )
    assert summary.precision == 1.0 and summary.recall == pytest.approx(2 / 3)
    assert [row.line for row, _ in summary.errors] == [3]
    without = summarise(
        read_rows(jsonl_objects([json.dumps(r) for r in ROWS], "t"), use_question=False)
    )
    assert without.false_declines == 1  # "No, the paper does not mention BERT." needs its question


def test_the_report_names_what_it_got_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, "verdicts", str(_file(tmp_path)))
    assert code == 0
    assert "6 outputs in" in out and "3 read as declines" in out
    assert "precision 1.000" in out and "recall    0.667" in out
    assert "1 decline read as an answer (served)" in out
    assert "line 3: missed decline: Keine Angaben zum Geburtsjahr." in out
    code, out, _ = _run(capsys, "verdicts", str(_file(tmp_path)), "--no-question")
    assert "line 5: false decline (refusal: " in out  # "No, ..." without its yes/no question


def test_a_decline_pattern_from_the_flag_env_or_config_fixes_the_miss(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(_file(tmp_path))
    _, out, _ = _run(capsys, "verdicts", path, "--decline-pattern", "^keine angaben", "--json")
    report = json.loads(out)
    assert (report["caught"], report["missed"], report["recall"]) == (3, 0, 1.0)
    monkeypatch.setenv("SELFROUTE_DECLINE_PATTERN", "^keine angaben")
    assert json.loads(_run(capsys, "verdicts", path, "--json")[1])["missed"] == 0
    monkeypatch.delenv("SELFROUTE_DECLINE_PATTERN")
    config = tmp_path / "selfroute.toml"
    config.write_text('decline_pattern = "^keine angaben"\n', encoding="utf-8")
    assert (
        json.loads(_run(capsys, "verdicts", path, "--json", "--config", str(config))[1])["missed"]
        == 0
    )


def test_json_lists_every_wrong_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "verdicts", str(_file(tmp_path)), "--json", "--strict")
    report = json.loads(out)
    assert code == 0 and report["kinds"] == {"answered": 4, "sentinel": 1, "empty": 1}
    assert [(e["line"], e["label"], e["kind"]) for e in report["errors"]] == [
        (2, "declined", "answered"),
        (3, "declined", "answered"),
    ]


def test_named_fields_the_sentinel_and_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = [
        json.dumps({"reply": "NO_ANSWER", "q": "Who?", "is_decline": True}),
        json.dumps({"reply": "Mara Holt.", "q": "Who?", "is_decline": False}),
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines)))
    argv = ["verdicts", "-", "--text-field", "reply", "--question-field", "q",
            "--label-field", "is_decline", "--sentinel", "NO_ANSWER", "--json"]  # fmt: skip
    report = json.loads(_run(capsys, *argv)[1])
    assert (report["caught"], report["false_declines"], report["missed"]) == (1, 0, 0)


def test_no_labels_no_scores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, [{"output": "unanswerable"}, {"output": "Paris."}])
    _, out, _ = _run(capsys, "verdicts", str(path))
    assert "2 outputs in" in out and "1 read as declines" in out and "no labels" in out


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("outputs.jsonl", "not json", "outputs.jsonl:1: not valid JSON"),
        ("outputs.jsonl", "[1, 2]", "expected a JSON object per line"),
        ("outputs.jsonl", '{"x": 1, "y": 2}', "no prediction or output"),
        ("outputs.jsonl", '{"prediction": 3}', "prediction must be a string, got int"),
        ("outputs.jsonl", '{"prediction": "a", "declined": "yes"}', "the label must be true, false or null"),
        ("labels.csv", "", "labels.csv: empty: a CSV file needs a header row"),
        ("labels.csv", "answer,declined\nyes,maybe\n", "labels.csv:2: declined: the label must be true or false"),
        ("labels.csv", 'answer,declined\n"a",true,extra\n', "labels.csv:2: 3 cells for 2 columns"),
        ("labels.csv", "reply,declined\nunanswerable,true\n", "labels.csv:2: no prediction or output"),
        ("labels.csv", 'answer\n"unterminated\n', "labels.csv:2: not valid CSV"),
        ("labels.csv", 'answer\nok\n"a"b\n', "labels.csv:3: not valid CSV"),
    ],
)  # fmt: skip
def test_a_bad_record_is_a_clear_error_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text + ("\n" if name.endswith(".jsonl") else ""), encoding="utf-8")
    code, _, err = _run(capsys, "verdicts", str(path))
    assert code == 2 and message in err, err


def test_a_missing_file_and_a_bad_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "verdicts", str(tmp_path / "nope.jsonl"))
    assert code == 2 and "no such file" in err
    latin = tmp_path / "latin1.jsonl"
    latin.write_bytes('{"text": "Stra\u00dfe"}'.encode("latin-1") + b"\xff\n")
    code, _, err = _run(capsys, "verdicts", str(latin))
    assert code == 2 and "not UTF-8 text" in err
    path = str(_file(tmp_path))
    code, _, err = _run(capsys, "verdicts", path, "--decline-pattern", "x*")
    assert code == 2 and "matches the empty string" in err
    with pytest.raises(SystemExit):
        main(["verdicts", path, "--show", "-1"])


def test_rows_keep_their_line_numbers() -> None:
    rows = list(
        read_rows(
            jsonl_objects(["", json.dumps({"text": "a"}), "  ", json.dumps({"text": "b"})], "t")
        )
    )
    assert rows == [Row(2, "a"), Row(4, "b")]


CSV_TEXT = (
    "question,answer,declined\n"
    "When was she born?,unanswerable,TRUE\n"
    'Where did she work?,"The passages do not mention\nher employer.",yes\n'
    "Where did she work?,Keine Angaben zum Arbeitgeber.,1\n"
    'When was she born?,"She was born in 1901, in Lyon.",false\n'
    'Do they use BERT?,"No, the paper does not mention BERT.",No\n'
    ",Paris.,\n"
    "Who?,,\n"  # an empty output: read as empty (a decline), not a missing column
    "Who?,Mara Holt.\n"  # a short record: its missing cells are empty
)


def test_a_csv_file_is_read_like_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "labels.CSV"
    # a spreadsheet's "CSV UTF-8" export: byte-order mark, CRLF line ends
    path.write_bytes(b"\xef\xbb\xbf" + CSV_TEXT.replace("\n", "\r\n").encode())
    report = json.loads(_run(capsys, "verdicts", str(path), "--json")[1])
    assert (report["rows"], report["labelled"]) == (8, 5)
    assert report["kinds"] == {"answered": 5, "sentinel": 1, "refusal": 1, "empty": 1}
    assert (report["caught"], report["false_declines"], report["missed"]) == (2, 0, 1)
    # the quoted cell spans lines 3-4: the record after it is on line 5
    assert [(e["line"], e["text"]) for e in report["errors"]] == [
        (5, "Keine Angaben zum Arbeitgeber.")
    ]
    assert report["errors"][0]["question"] == "Where did she work?"
    out = _run(capsys, "verdicts", str(path), "--no-question", "--json")[1]
    assert json.loads(out)["false_declines"] == 1  # the yes/no answer needs its question


def test_csv_from_stdin_or_a_file_named_otherwise_with_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "labels.txt"
    path.write_text(CSV_TEXT, encoding="utf-8")
    code, _, err = _run(capsys, "verdicts", str(path))
    assert code == 2 and "labels.txt:1: not valid JSON" in err  # not .csv: read as JSON Lines
    by_flag = json.loads(_run(capsys, "verdicts", str(path), "--format", "csv", "--json")[1])
    monkeypatch.setattr("sys.stdin", io.StringIO(CSV_TEXT))
    by_stdin = json.loads(_run(capsys, "verdicts", "-", "--format", "csv", "--json")[1])
    assert by_flag == by_stdin and by_flag["missed"] == 1


def test_a_missing_or_non_utf8_csv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "verdicts", str(tmp_path / "nope.csv"))
    assert code == 2 and "no such file" in err
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("answer\nStra\u00dfe\n".encode("latin-1"))
    code, _, err = _run(capsys, "verdicts", str(latin))
    assert code == 2 and "not UTF-8 text" in err
