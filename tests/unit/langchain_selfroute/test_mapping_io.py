"""The output is a mapping, inputs follow create_retrieval_chain, chunks add up to the output."""

from __future__ import annotations

import functools
import operator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.prompt_values import ChatPromptValue

import selfroute as sr
from langchain_selfroute import SelfRouteChunk, SelfRouteOutput
from tests.unit.langchain_selfroute.test_streaming import make

QUESTION = "How long did Mara Holt keep the lamp?"


def _stable(mapping: Any) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in ("latency_s", "steps")}


@pytest.mark.parametrize(
    "value",
    [
        QUESTION,
        {"question": QUESTION},
        {"input": QUESTION},
        {"query": QUESTION},
        {"messages": [SystemMessage("be brief"), HumanMessage(QUESTION)]},
        [HumanMessage("hi"), AIMessage("hello"), HumanMessage(QUESTION)],
        HumanMessage(QUESTION),
        ChatPromptValue(messages=[HumanMessage(QUESTION)]),
    ],
    ids=["str", "question", "input", "query", "messages_key", "messages", "message", "prompt"],
)
def test_every_input_form_asks_the_same_question(value: Any) -> None:
    route, _ = make("Thirty-one years.")
    out = route.invoke(value)
    assert isinstance(out, dict) and isinstance(out, SelfRouteOutput)
    assert out.question == QUESTION and out["answer"] == "Thirty-one years."


def test_unused_keys_pass_through_and_the_question_key_is_configurable() -> None:
    route, _ = make("Thirty-one years.", question_key="q")
    out = route.invoke({"q": QUESTION, "question": "ignored?", "chat_history": [], "user": 7})
    assert out.question == QUESTION
    assert out.passthrough == {"q": QUESTION, "chat_history": [], "user": 7}
    with pytest.raises(sr.InvalidInputError, match="no 'q' key"):
        route.invoke({"question": QUESTION})
    with pytest.raises(sr.InvalidInputError, match="no human message"):
        route.invoke([SystemMessage("only a system prompt")])


@pytest.mark.parametrize(
    "rag_output", ["Thirty-one years.", '"Thirty-one years."'], ids=["plain", "quoted"]
)
def test_chunks_add_up_to_the_invoke_output(rag_output: str) -> None:
    route, _ = make(rag_output)
    chunks = list(route.stream(QUESTION))
    assert all(isinstance(c, dict) and set(c) == {"answer"} for c in chunks[:-1])
    final = chunks[-1]
    assert final.output is not None and final.text == "" and final.is_final
    total = functools.reduce(operator.add, chunks)
    assert _stable(total) == _stable(route.invoke(QUESTION))
    assert total["answer"] == final.output.answer == "Thirty-one years."
    if rag_output.startswith('"'):  # the cleaned answer differs from the text shown: resent
        (fix,) = [c for c in chunks if c.retracted]
        assert fix.text == "Thirty-one years." and fix.output is None


def test_chunk_mapping_addition_keeps_the_latest_fields() -> None:
    a = SelfRouteChunk({"answer": "Thirty", "user": 1})
    b = SelfRouteChunk({"answer": " years", "route": sr.Route.RAG, "user": 2})
    total = a + b
    assert total == {"answer": "Thirty years", "route": sr.Route.RAG, "user": 2}
    assert total.route is sr.Route.RAG and total.text == "Thirty years"


def test_output_rebuilds_from_its_json_and_from_a_plain_dict() -> None:
    route, _ = make("Thirty-one years.")
    out = route.invoke({"question": QUESTION, "user": "ann"})
    again = SelfRouteOutput.model_validate_json(out.model_dump_json())
    assert again.to_dict() == out.to_dict() and again["user"] == "ann"
    plain = SelfRouteOutput.model_validate(dict(out))
    assert plain == out and plain.result.to_dict() == out.result.to_dict()
    assert plain.stage_usage("rag") == out.stage_usage("rag")
