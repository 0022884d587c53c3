"""The command line in-process with real LangChain clients against the loopback servers."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from selfroute.cli import main
from tests.integration.cli.scripted import (
    CLERK,
    LC_NOT_FOUND,
    NOT_THERE,
    OIL,
    PACKETS,
    copy_docs,
    is_rag,
    reader,
)
from tests.support._loopback import Reply, last_user_text
from tests.support.gemini_server import ScriptedGeminiServer
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_on(
    capsys: pytest.CaptureFixture[str],
    store: Path,
    server: Any,
    *argv: str,
    model: str = "reader",
) -> tuple[int, str, str]:
    """``selfroute ARGV... --store STORE --base-url SERVER --model MODEL``."""
    return run(
        capsys, *argv, "--store", str(store), "--base-url", server.base_url, "--model", model
    )


def ask_json(
    capsys: pytest.CaptureFixture[str], store: Path, server: Any, question: str, *extra: str
) -> dict[str, Any]:
    code, out, err = run_on(capsys, store, server, "ask", question, "--json", *extra)
    assert code == 0, err
    return dict(json.loads(out))


def test_a_question_nothing_answers_goes_to_long_context(
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = ask_json(capsys, indexed[1], reader_server, NOT_THERE)
    assert (result["route"], result["reason"], result["answer"]) == (
        "long_context",
        "declined",
        LC_NOT_FOUND,
    )
    assert result["rag_answer"] == "unanswerable"
    assert [s["stage"] for s in result["steps"]] == ["rag", "long_context"]


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_every_retrieval_mode_finds_the_evidence(
    mode: str,
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = ask_json(capsys, indexed[1], reader_server, PACKETS.question, "--retrieval", mode)
    assert (result["route"], result["answer"]) == ("rag", PACKETS.answer)
    assert result["retrieval"] == mode
    assert all(s["metadata"]["retrieval"] == mode for s in result["sources"])


def test_ask_over_one_file_needs_no_store(
    tmp_path: Path,
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    docs = copy_docs(tmp_path / "docs")
    pdf = str(docs / "packet_switching.pdf")
    answered = ask_json(capsys, tmp_path / "none", reader_server, PACKETS.question, "--doc", pdf)
    assert (answered["route"], answered["answer"]) == ("rag", PACKETS.answer)
    assert answered["retrieval"] == "bm25 over --doc"
    carol = str(docs / "christmas_carol_stave_one.txt")
    whole = ask_json(capsys, tmp_path / "none", reader_server, CLERK.question, "--doc", carol)
    assert (whole["route"], whole["answer"]) == ("long_context", CLERK.answer)
    assert not (tmp_path / "none").exists() and not (tmp_path / ".selfroute").exists()


def test_streaming_json_events(
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run_on(
        capsys, indexed[1], reader_server, "ask", CLERK.question, "--stream", "--json"
    )
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    assert events[0] == {"event": "route", "route": "long_context", "reason": None}
    text = "".join(e["text"] for e in events if e["event"] == "text")
    assert text == CLERK.answer
    assert {e["stage"] for e in events if e["event"] == "text"} == {"long_context"}
    assert events[-1]["event"] == "result" and events[-1]["result"]["answer"] == CLERK.answer


def ask_small_then_large(
    capsys: pytest.CaptureFixture[str], store: Path, server: Any, *extra: str
) -> tuple[int, str, str]:
    """The question that needs the whole document, with models ``small`` then ``large``."""
    argv = ("ask", CLERK.question, "--lc-model", "large", *extra)
    return run_on(capsys, store, server, *argv, model="small")


def test_separate_long_context_model_and_prices(
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = ask_small_then_large(
        capsys, indexed[1], reader_server, "--prices", "small=1/2,large=10/20"
    )
    assert code == 0, err
    assert [r["model"] for r in reader_server.requests] == ["small", "large"]
    rag_in = len(reader_server.requests[0]["messages"][-1]["content"].split())
    lc_in = len(reader_server.requests[1]["messages"][-1]["content"].split())
    out_tokens = len(CLERK.answer.split())
    cost = (rag_in * 1 + 1 * 2 + lc_in * 10 + out_tokens * 20) / 1_000_000
    assert f"cost        ${cost:.6f}".rstrip("0") in out
    assert "(always-LC: $" in out


def test_a_failing_long_context_model_is_one_error_line(
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        return Reply("overloaded", status=503) if body["model"] == "large" else reader(body)

    reader_server.responder = responder
    code, out, err = ask_small_then_large(capsys, indexed[1], reader_server, "--max-retries", "0")
    assert code == 1 and out == ""
    assert err.startswith("selfroute: error: long-context model call failed")
    assert "Traceback" not in err


def test_google_models_work_through_the_same_command(
    indexed: tuple[Path, Path],
    gemini_server: ScriptedGeminiServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    gemini_server.responder = reader
    code, out, err = run_on(
        capsys,
        indexed[1],
        gemini_server,
        "ask",
        OIL.question,
        "--json",
        model="google:gemini-2.5-flash",
    )
    assert code == 0, err
    result = json.loads(out)
    assert (result["route"], result["answer"]) == ("rag", OIL.answer)
    assert result["steps"][0]["usage"]["source"] == "provider"


def test_chat_reads_questions_until_exit(
    indexed: tuple[Path, Path],
    reader_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO(f"{OIL.question}\n\n{CLERK.question}\nexit\n{NOT_THERE}\n")
    )
    code, out, err = run_on(capsys, indexed[1], reader_server, "chat")
    assert code == 0, err
    assert out.count("route       ") == 2  # the blank line is skipped, 'exit' ends the loop
    assert OIL.answer in out and CLERK.answer in out
    assert reader_server.calls == 3
    assert "2 question(s): 1 answered from chunks, 1 needed the long context" in err


def test_changed_and_deleted_files_through_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    docs = copy_docs(tmp_path / "docs")
    assert run(capsys, "index", "docs", "--embedding", "offline")[0] == 0
    carol = docs / "christmas_carol_stave_one.txt"
    carol.write_text(carol.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    (docs / "packet_switching.pdf").unlink()
    code, out, _ = run(capsys, "index", "docs", "--prune")
    assert code == 0
    assert "0 new, 1 changed, 2 unchanged, 1 removed" in out
    assert "removed     docs/packet_switching.pdf" in out
    code, out, _ = run(capsys, "stats", "--json")
    data = json.loads(out)
    assert data["documents"] == 3 and data["orphan_chunks"] == 0


def test_a_decline_pattern_hears_a_model_that_declines_in_german(
    tmp_path: Path,
    openai_server: ScriptedOpenAIServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def german_rag(body: dict[str, Any]) -> Reply:
        prompt = last_user_text(body)
        if is_rag(prompt):
            return Reply("Keine Angaben in den Textstellen.", model=None)
        return reader(body)

    openai_server.responder = german_rag
    monkeypatch.chdir(tmp_path)
    docs = copy_docs(tmp_path / "docs")
    pdf = str(docs / "packet_switching.pdf")
    store = tmp_path / "none"
    served = ask_json(capsys, store, openai_server, PACKETS.question, "--doc", pdf)
    assert (served["route"], served["answer"]) == ("rag", "Keine Angaben in den Textstellen.")
    heard = ask_json(
        capsys, store, openai_server, PACKETS.question, "--doc", pdf,
        "--decline-pattern", "^keine angaben",
    )  # fmt: skip
    assert (heard["route"], heard["reason"]) == ("long_context", "refused")
    assert heard["answer"] == PACKETS.answer
    monkeypatch.setenv("SELFROUTE_DECLINE_PATTERN", "^keine angaben")  # and from the environment
    assert ask_json(capsys, store, openai_server, PACKETS.question, "--doc", pdf)["route"] == (
        "long_context"
    )
    code, _, err = run_on(
        capsys, store, openai_server, "ask", PACKETS.question, "--doc", pdf,
        "--decline-pattern", "(unclosed",
    )  # fmt: skip
    assert code != 0 and "not a valid regular expression" in err
