"""``selfroute eval`` arguments, the keyless sample run, dry run and error messages."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from selfroute import ConfigurationError
from selfroute.eval import parse_prices
from selfroute.eval.cli import add_parser, main


def test_sample_run_with_the_oracle_writes_everything(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "--sample",
            "--reader",
            "oracle",
            "--limit",
            "12",
            "--k",
            "1,5",
            "--out",
            str(out),
            "--no-cache",
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "| Self-Route (k=5) |" in printed and "Reader: oracle" in printed
    for name in (
        "results.jsonl",
        "summary.json",
        "report.md",
        "fig2_rag_minus_lc.png",
        "fig3_k.png",
    ):
        assert (out / name).is_file(), name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["items"] == 12 and summary["model_calls"] == 0


def test_dry_run_calls_nothing(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "--sample",
            "--reader",
            "oracle",
            "--limit",
            "3",
            "--dry-run",
            "--out",
            str(tmp_path / "o"),
            "--no-cache",
            "--prices",
            "oracle=1/2",
        ]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "Dry run: 3 items" in text and "Self-Route (k=5)" in text
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sample"], "choose a reader"),
        ([], "give a data file"),
        (["--sample", "--reader", "oracle", "--model", "openai:x"], "calls no model"),
        (["--sample", "--model", "nobody:x"], "unknown provider"),
        (["--sample", "--model", "bare-name"], "has no provider"),
        (["--sample", "--reader", "oracle", "--prices", "gpt=abc"], "bad price"),
        (["missing.jsonl", "--reader", "oracle"], "no such file"),
    ],
)
def test_errors_exit_2_with_a_message(argv: list[str], message: str, capsys, tmp_path) -> None:
    assert main([*argv, "--out", str(tmp_path), "--no-cache"]) == 2
    assert message in capsys.readouterr().err


def test_bad_k_is_an_argparse_error(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--sample", "--reader", "oracle", "--k", "0,5"])
    assert "positive integers" in capsys.readouterr().err


def test_add_parser_registers_eval_with_a_handler() -> None:
    parser = argparse.ArgumentParser(prog="selfroute")
    sub = parser.add_subparsers(dest="command")
    add_parser(sub)
    args = parser.parse_args(
        ["eval", "--sample", "--reader", "oracle", "--k", "1,10", "--methods", "rag,self-route"]
    )
    assert args.command == "eval" and callable(args.func)
    assert args.k == [1, 10] and args.methods == ["rag", "self_route"]


def test_parse_prices(tmp_path: Path) -> None:
    table = parse_prices("gpt-4o=2.5/10, gpt-4o-mini=0.15/0.6")
    assert table.prices["gpt-4o-mini"] == (0.15, 0.6)
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"currency": "EUR", "m": [1, 2], "n": {"input": 3, "output": 4}}))
    table = parse_prices(str(path))
    assert table.currency == "EUR" and table.prices["n"] == (3.0, 4.0)
    path.write_text(json.dumps({"m": [1]}))
    with pytest.raises(ConfigurationError, match="input_per_million"):
        parse_prices(path)
    with pytest.raises(ConfigurationError, match="does not exist"):
        parse_prices(tmp_path / "none.json")
    with pytest.raises(ConfigurationError, match="empty"):
        parse_prices(" , ")


def test_importing_the_eval_package_loads_no_framework() -> None:
    code = (
        "import sys, selfroute.eval, selfroute.eval.cli; "
        "heavy = ('langchain', 'langchain_core', 'llama_index', 'chromadb', 'matplotlib', "
        "'rouge_score', 'openai'); "
        "print([m for m in sys.modules if m.split('.')[0] in heavy])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_decline_pattern_is_a_recorded_policy(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    argv = ["--sample", "--reader", "oracle", "--limit", "2", "--out", str(out), "--no-cache",
            "--no-progress", "--decline-pattern", "^keine angaben"]  # fmt: skip
    assert main(argv) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["policy"]["decline_detector"] == "DeclinePattern('^keine angaben')"
    assert "own decline detector DeclinePattern('^keine angaben')" in summary["policy_description"]
    assert "own decline detector" in (out / "report.md").read_text()
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["--sample", "--reader", "oracle", "--decline-pattern", "(unclosed"])
    assert "not a valid regular expression" in capsys.readouterr().err
