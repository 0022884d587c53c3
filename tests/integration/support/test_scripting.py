"""Scripting helpers of the loopback servers: `Reply`, `rules`, `load_script`."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support._loopback import last_user_text, load_script, prompt_text, split_tokens
from tests.support.openai_server import Reply, rules

OPENAI_BODY = {
    "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": [{"type": "text", "text": "second"}]},
    ]
}
GEMINI_BODY = {
    "systemInstruction": {"parts": [{"text": "sys"}]},
    "contents": [{"role": "user", "parts": [{"text": "hello"}, {"text": "world"}]}],
}


def test_message_extraction_for_both_wire_formats():
    assert last_user_text(OPENAI_BODY) == "second"
    assert prompt_text(OPENAI_BODY) == "sys\nfirst\nreply\nsecond"
    assert last_user_text(GEMINI_BODY) == "hello\nworld"
    assert prompt_text(GEMINI_BODY) == "sys\nhello\nworld"
    assert last_user_text({}) == ""


def test_rules_first_match_wins_and_callables_are_allowed():
    responder = rules(
        ("sec", "substring"),
        (lambda text: text.startswith("second"), "callable"),
        default=Reply("fallback", status=429),
    )
    assert responder(OPENAI_BODY) == "substring"
    responder = rules((lambda text: text.startswith("second"), "callable"))
    assert responder(OPENAI_BODY) == "callable"
    assert responder(GEMINI_BODY) == "unanswerable"
    with pytest.raises(TypeError, match="matcher"):
        rules((3, "x"))


def test_reply_status_and_kind_are_consistent():
    assert Reply("x", status=429).kind == "error"
    assert Reply("x", kind="error").status == 500
    assert Reply("x").kind == "ok"
    with pytest.raises(ValueError, match="kind"):
        Reply("x", kind="explode")


@given(st.text())
def test_split_tokens_round_trips(text):
    pieces = split_tokens(text)
    assert "".join(pieces) == text
    # one word per piece (leading whitespace attached); only trailing whitespace stands alone
    assert all(len(piece.split()) == 1 for piece in pieces[:-1])
    assert len(pieces) == len(text.split()) + (1 if text and text[-1].isspace() else 0)


def test_load_script_list_and_object_forms(tmp_path):
    as_list = tmp_path / "list.json"
    as_list.write_text(json.dumps([{"match": "first", "text": "one"}]))
    as_object = tmp_path / "object.json"
    as_object.write_text(
        json.dumps(
            {
                "rules": [{"match": "second", "text": "two", "completion_tokens": 9}],
                "default": {"text": "nothing", "kind": "empty"},
            }
        )
    )
    body = {"messages": [{"role": "user", "content": "first"}]}
    assert load_script(str(as_list))(body).text == "one"
    assert load_script(str(as_list))(GEMINI_BODY) == "unanswerable"
    reply = load_script(str(as_object))(OPENAI_BODY)
    assert (reply.text, reply.completion_tokens) == ("two", 9)
    assert load_script(str(as_object))(body).kind == "empty"


def test_load_script_rejects_bad_rules(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"text": "no matcher"}]))
    with pytest.raises(ValueError, match="rule 0 needs 'match' and 'text'"):
        load_script(str(bad))
