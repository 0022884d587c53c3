"""``selfroute ask --batch`` in-process with the real clients against the batch loopback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from tests.integration.batch.corpus import documents, respond
from tests.support.openai_batch_server import OpenAIBatchServer

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SELFROUTE_BATCH_POLL_S", "0.01")
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    doc = tmp_path / "units.txt"
    doc.write_text(documents()[0] + "\n\n" + documents()[1], encoding="utf-8")
    questions = tmp_path / "questions.jsonl"
    lines = [
        json.dumps({"id": f"u{n}", "question": f"What is the access code of unit {n}?"})
        for n in range(10)
    ]
    lines.append(json.dumps("What is the access code of unit 3?"))
    questions.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return doc, questions


def _ask(capsys: Any, srv: OpenAIBatchServer, doc: Path, questions: Path, *extra: str) -> Any:
    code = main(
        [
            "ask",
            "--doc",
            str(doc),
            "--batch",
            str(questions),
            "--base-url",
            srv.base_url,
            "--model",
            "gpt-4o-mini",
            "--k",
            "2",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ask_batch_json_then_rerun_resumes(capsys: Any, tmp_path: Path) -> None:
    doc, questions = _files(tmp_path)
    with OpenAIBatchServer(respond) as srv:
        code, out, err = _ask(capsys, srv, doc, questions, "--json")
        assert code == 0, err
        rows = [json.loads(line) for line in out.splitlines()]
        assert [r["id"] for r in rows] == [f"u{n}" for n in range(10)] + ["11"]
        assert all(r["steps"] and all(s["batch"] for s in r["steps"]) for r in rows)
        assert {r["route"] for r in rows} == {"rag", "long_context"}
        assert "[batch] phase 1: submitting 11 requests" in err
        assert "phase 2" in err and "completed" in err
        assert len(srv.created) == 2
        assert (tmp_path / "questions.jsonl.job.json").is_file()
        code, again, err = _ask(capsys, srv, doc, questions, "--json")
        assert code == 0, err
        assert "resuming the job file" in err
        assert len(srv.created) == 2  # finished work is not sent again
        strip = [
            {k: v for k, v in json.loads(x).items() if k != "latency_s"} for x in again.splitlines()
        ]
        assert strip == [{k: v for k, v in r.items() if k != "latency_s"} for r in rows]


def test_ask_batch_prints_answers_and_the_cost_table(capsys: Any, tmp_path: Path) -> None:
    doc, questions = _files(tmp_path)
    with OpenAIBatchServer(respond) as srv:
        code, out, err = _ask(capsys, srv, doc, questions, "--prices", "loopback-model=1/4")
        assert code == 0, err
    assert "[u1] AC-" in out
    assert "| always long context, online |" in out
    assert "| Self-Route, batch |" in out


def test_ask_batch_rejects_a_bad_file_and_stream(capsys: Any, tmp_path: Path) -> None:
    doc, _ = _files(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": 1}\n', encoding="utf-8")
    with OpenAIBatchServer(respond) as srv:
        code, _, err = _ask(capsys, srv, doc, bad)
        assert code == 2 and "bad.jsonl:1" in err
        code, _, err = _ask(capsys, srv, doc, tmp_path / "missing.jsonl")
        assert code == 2 and "no such file" in err
        good = tmp_path / "q.jsonl"
        good.write_text('"What?"\n', encoding="utf-8")
        code, _, err = _ask(capsys, srv, doc, good, "--stream")
        assert code == 2 and "--stream" in err


def test_eval_batch_with_a_model_uses_the_provider_batch_api(capsys: Any, tmp_path: Path) -> None:
    from tests.support._loopback import last_user_text

    def model(body: dict[str, Any]) -> str:
        return "unanswerable" if "Passage:" in last_user_text(body) else "a long-context answer"

    with OpenAIBatchServer(model) as srv:
        code = main(
            [
                "eval",
                "--sample",
                "--limit",
                "6",
                "--model",
                "gpt-4o-mini",
                "--base-url",
                srv.base_url,
                "--batch",
                "--out",
                str(tmp_path),
                "--no-progress",
                "--no-cache",
            ]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert len(srv.created) == 2  # RAG prompts, then the long-context prompts of all six
        assert len(srv.batch_bodies) == 12
    assert "6 questions, 2 batches, 0 failed" in out


def _rows(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.parametrize("source", ["--doc", "store"])
def test_ask_batch_on_the_core_answers_as_the_langchain_adapter(
    capsys: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    from selfroute.cli import _commands
    from selfroute.stores import DocumentStore

    doc, questions = _files(tmp_path)
    twin = tmp_path / "twin.jsonl"  # the same questions, with a job file of their own
    twin.write_bytes(questions.read_bytes())
    extra: list[str] = []
    if source == "store":
        (tmp_path / "kb").mkdir()
        (tmp_path / "kb" / doc.name).write_bytes(doc.read_bytes())
        DocumentStore(tmp_path / "store", embedding="offline").index([tmp_path / "kb"])
        extra = ["--store", str(tmp_path / "store")]

    def ask(srv: OpenAIBatchServer, path: Path) -> list[dict[str, Any]]:
        argv = ["ask", "--batch", str(path), "--base-url", srv.base_url, "--model", "gpt-4o-mini"]
        argv += ["--k", "2", "--json", *extra, *(["--doc", str(doc)] if source == "--doc" else [])]
        code = main(argv)
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return _rows(captured.out)

    adapter_session = _commands._langchain_batch_session
    with OpenAIBatchServer(respond) as srv:
        with monkeypatch.context() as patch:
            patch.setattr(
                _commands, "_langchain_batch_session", lambda *a: pytest.fail("LangChain used")
            )
            core = ask(srv, questions)
        monkeypatch.setattr(_commands, "_batch_session", adapter_session)
        adapter = ask(srv, twin)
        assert len(srv.created) == 4  # two phases each
    assert {r["route"] for r in core} == {"rag", "long_context"}
    assert _comparable(core) == _comparable(adapter)


def _comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ask --batch --json`` rows without their wall times."""
    return [{k: v for k, v in row.items() if k != "latency_s"} for row in rows]


def test_ask_batch_escapes_terminal_sequences_in_ids_and_replies(
    capsys: Any, tmp_path: Path
) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text(documents()[0], encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        json.dumps({"id": "evil\x1b]0;pwned\x07", "question": "What is the access code?"}) + "\n",
        encoding="utf-8",
    )

    def hostile(body: dict[str, Any]) -> str:
        return "\x1b[2J\x1b[31mred\u202e answer"

    with OpenAIBatchServer(hostile) as srv:
        code, out, err = _ask(capsys, srv, doc, questions)
        assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out, repr(out)
    assert "\\x1b[31mred" in out and "evil\\x1b]0;pwned\\x07" in out
    assert "\x1b" not in err and "\x07" not in err, repr(err)
