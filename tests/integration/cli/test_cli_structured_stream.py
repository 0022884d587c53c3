"""``selfroute ask --verdict structured --stream`` streams the structured answer: the loopback
server streams the ``{"answerable", "answer"}`` object token by token (a ``json_schema``
response), pauses before the rest of the object, and the answer's first words must reach the
command's output before the server goes on. The streamed text is the object's answer exactly
(escapes, unicode, surrogate pairs split across tokens), equal to the unstreamed ``ask``; a
declined object shows nothing of itself; a cut-off or malformed object fails safe to long
context."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.serve.conftest import child_env
from tests.support._loopback import Reply
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = pytest.mark.integration

QUESTION = "How long did Mara Holt keep the lamp?"
DOC = (
    "Grey Point lighthouse stands on the northern cape. Mara Holt kept the lamp at Grey Point "
    "for thirty-one years, through the storm of 1938. The lamp was electrified in 1951."
)
ANSWER = "Mara Holt kept the lamp at Grey Point for thirty-one years, through the storm of 1938."
TRICKY = 'She said "thirty-one years" \\ café — 東京 😀 𝄞\nline two\ttab'
LC_ANSWER = "Thirty-one years, by the long-context model."
#: Stream events sent before the pause: the role, the object's opening and a few answer words.
PAUSE_AT = 9


def responder(obj: dict[str, Any] | str, **reply: Any) -> Any:
    """RAG prompts with a ``json_schema`` response format get ``obj`` (raw text if a str),
    everything else the long-context answer."""

    def respond(body: dict[str, Any]) -> Reply:
        if (body.get("response_format") or {}).get("type") == "json_schema":
            text = obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)
            return Reply(text, **reply)
        return Reply(LC_ANSWER)

    return respond


def ask(tmp_path: Path, server: ScriptedOpenAIServer, *extra: str) -> list[str]:
    doc = tmp_path / "lamp.txt"
    doc.write_text(DOC, encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "selfroute",
        "ask",
        QUESTION,
        "--doc",
        str(doc),
        "--base-url",
        server.base_url,
        "--model",
        "gpt-4o-mini",
        "--verdict",
        "structured",
        "--json",
        *extra,
    ]


def run_stream(tmp_path: Path, server: ScriptedOpenAIServer) -> tuple[list[dict[str, Any]], bool]:
    """The ``--stream --json`` events, and whether the first text event was printed before the
    server sent the rest of the object (the server is resumed then)."""
    proc = subprocess.Popen(
        ask(tmp_path, server, "--stream"),
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    events: list[dict[str, Any]] = []
    early: bool | None = None
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            event = json.loads(line)
            events.append(event)
            if early is None and event["event"] == "text":
                early = not server.past_pause.is_set()
                server.resume.set()
    finally:
        server.resume.set()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return events, bool(early)


def run_whole(tmp_path: Path, server: ScriptedOpenAIServer) -> dict[str, Any]:
    done = subprocess.run(
        ask(tmp_path, server),
        cwd=tmp_path,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["text"] for e in events if e["event"] == "text")


@pytest.mark.parametrize("answer", [ANSWER, TRICKY], ids=["plain", "escapes-unicode"])
def test_the_answer_streams_before_the_object_is_sent(
    answer: str, tmp_path: Path, openai_server: ScriptedOpenAIServer
) -> None:
    obj = {"answerable": True, "answer": answer}
    # 3-character tokens split escapes and surrogate pairs (ensure_ascii) across events
    wire = json.dumps(obj) if answer is TRICKY else obj
    openai_server.responder = responder(
        wire,
        pause_at=PAUSE_AT if answer is ANSWER else 16,
        piece_chars=None if answer is ANSWER else 3,
    )
    events, early = run_stream(tmp_path, openai_server)
    assert early, "the first answer text waited for the whole object"
    assert text_of(events) == answer
    result = events[-1]["result"]
    assert (result["route"], result["answer"]) == ("rag", answer)
    requests = openai_server.requests
    assert requests[0]["stream"] is True and requests[0]["response_format"]["type"] == "json_schema"
    openai_server.reset()
    openai_server.responder = responder(wire, piece_chars=3)
    whole = run_whole(tmp_path, openai_server)
    assert (whole["route"], whole["answer"]) == ("rag", answer)


def test_a_declined_object_shows_nothing_of_itself(
    tmp_path: Path, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.responder = responder({"answerable": False, "answer": "Mara Holt, maybe."})
    events, _ = run_stream(tmp_path, openai_server)
    assert text_of(events) == LC_ANSWER
    assert {e["stage"] for e in events if e["event"] == "text"} == {"long_context"}
    assert events[-1]["result"]["route"] == "long_context"


@pytest.mark.parametrize(
    "wire",
    [
        '{"answerable": true, "answer": "Mara Holt kept the lamp for thirty',  # cut off
        '{"answerable": true, "answer": "Mara Holt kept the lamp" "x"}',  # malformed
    ],
    ids=["cut-off", "malformed"],
)
def test_a_broken_object_fails_safe_to_long_context(
    wire: str, tmp_path: Path, openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.responder = responder(wire)
    events, _ = run_stream(tmp_path, openai_server)
    assert events[-1]["result"]["route"] == "long_context"
    assert events[-1]["result"]["answer"] == LC_ANSWER
    assert any(e["event"] == "retract" for e in events) or not any(
        e["event"] == "text" and e["stage"] == "rag" for e in events
    )
