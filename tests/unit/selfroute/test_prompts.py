"""The two prompts, their validation and overrides."""

from __future__ import annotations

from typing import Any

import pytest

import selfroute as sr


def test_defaults_render_the_paper_prompt() -> None:
    p = sr.Prompts()
    rendered = p.rag_prompt("Who kept the lamp?", [" Mara Holt kept it. ", "The storm came."])
    assert 'write "unanswerable" and nothing else' in rendered
    assert (
        "Passage:\nMara Holt kept it.\n\nThe storm came.\n\nQuestion: Who kept the lamp?"
        in rendered
    )
    assert rendered.endswith("Answer:")
    lc = p.long_context_prompt("Who kept the lamp?", "DOCUMENT")
    assert "DOCUMENT" in lc
    # The long-context prompt lets the model decline (issue 10) and keeps the document before the
    # question, so the prompt prefix is the same for every question on a document (prompt caching).
    assert 'write "unanswerable" and nothing else' in lc
    assert lc.index("DOCUMENT") < lc.index("Who kept the lamp?")
    assert p.cache_friendly


def test_overrides_and_separator() -> None:
    p = sr.Prompts(
        rag="Q: {question}\nC: {context}\nIf unsure say {sentinel}.",
        long_context="{context} -> {question}",
        sentinel="NO_ANSWER",
        passage_separator="\n---\n",
    )
    assert p.rag_prompt("q?", ["a", "b"]) == "Q: q?\nC: a\n---\nb\nIf unsure say NO_ANSWER."
    assert p.long_context_prompt("q?", "doc") == "doc -> q?"


def test_question_and_passages_with_braces_are_not_template_fields() -> None:
    p = sr.Prompts()
    rendered = p.rag_prompt("What is {x}?", ["set {a, b} and {sentinel}"])
    assert "What is {x}?" in rendered and "set {a, b} and {sentinel}" in rendered


def test_literal_sentinel_word_in_the_template_is_enough() -> None:
    p = sr.Prompts(rag="{context}\n{question}\nOtherwise reply N/A.", sentinel="N/A")
    assert p.sentinel == "N/A"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rag": "no placeholders, unanswerable"}, r"missing: \{context\}, \{question\}"),
        ({"rag": "{context} only, unanswerable"}, r"missing: \{question\}"),
        ({"rag": "{context} {question} {answer} unanswerable"}, "unknown placeholders"),
        ({"rag": "{context} {question} {"}, "not a valid format string"),
        ({"rag": "{context} {question}"}, "never mentions the sentinel"),
        ({"rag": "   "}, "non-empty"),
        ({"long_context": "{question} only"}, r"long-context prompt .*\{context\}"),
        ({"sentinel": ""}, "sentinel must be a non-empty string"),
        ({"sentinel": "  "}, "sentinel must be a non-empty string"),
    ],
)
def test_validation_errors_name_the_problem(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(sr.ConfigurationError, match=message):
        sr.Prompts(**kwargs)


def test_custom_sentinel_flows_through_to_parsing() -> None:
    prompts = sr.Prompts(sentinel="NOT_IN_CONTEXT")
    assert "NOT_IN_CONTEXT" in prompts.rag_prompt("q?", ["p"])
    generated: list[str] = []

    def model(prompt: str) -> str:
        generated.append(prompt)
        return "NOT_IN_CONTEXT" if len(generated) == 1 else "In 1901."

    result = sr.self_route(
        "When was she born?",
        "Mara Holt kept the lamp. She was born in 1901.",
        model,
        config=sr.RouteConfig(prompts=prompts, strict=True),
    )
    assert result.reason is sr.Reason.DECLINED
    assert result.rag_answer == "NOT_IN_CONTEXT" and result.answer == "In 1901."
    assert '"NOT_IN_CONTEXT"' in generated[0]


_LONG = "Ünïcode — document line.\n" * 200  # long enough to be joined in, not formatted


@pytest.mark.parametrize(
    "template",
    [
        "Document:\n{context}\n\nQuestion: {question}\nSay {sentinel}.",
        "{question}\n{context}",
        "{{context}} is literal; the real one: {context} ({question})",
        "{context:.40} truncated ({question})",  # a format spec: rendered by str.format
        "{context!r} repr ({question})",
        "{context} twice {context} ({question})",
    ],
)
def test_prompts_render_the_same_text_as_str_format(template: str) -> None:
    prompts = sr.Prompts(long_context=template, rag=template + " {sentinel}")
    for question in ("Who?", "a {brace} \x00selfroute-context\x00 mark?"):
        expected = template.format(context=_LONG, question=question, sentinel=prompts.sentinel)
        assert prompts.long_context_prompt(question, _LONG) == expected
        rag = (template + " {sentinel}").format(
            context=_LONG.strip(), question=question, sentinel=prompts.sentinel
        )
        assert prompts.rag_prompt(question, [_LONG]) == rag
