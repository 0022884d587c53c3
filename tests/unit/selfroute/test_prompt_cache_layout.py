"""The long-context prompt is laid out for provider prefix caching.

Providers cache prompt prefixes (OpenAI automatically from 1024 tokens, Gemini implicitly), so the
long-context prompts of two questions over the same document must be identical from the first
character up to the end of the document text: the document before the question, nothing
question-dependent ahead of it. Checked on the prompts `fit_long_context` really builds with the
default `Prompts`, unfitted (``long_context_window=None``) and with a window the document fits.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import selfroute as sr
from selfroute._fitting import DOCUMENT_SEPARATOR
from selfroute._flow import RouteConfig, fit_long_context
from tests.support._loopback import common_prefix_length

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DOCUMENT = (FIXTURES / "llamaindex" / "bartleby_excerpt.txt").read_text(encoding="utf-8")
SECOND = (FIXTURES / "docs" / "christmas_carol_stave_one.txt").read_text(encoding="utf-8")
Q1 = "What nickname did the narrator and his clerks give to the youthful office boy?"
Q2 = "Why?"  # a much shorter question: nothing before the document may depend on its size


def _prompts(docs: list[str], window: int | None) -> tuple[str, str]:
    config = RouteConfig(long_context_window=window)
    built = []
    for question in (Q1, Q2):
        fitted, prompt, tokens = fit_long_context(question, docs, config)
        assert (fitted.truncated, fitted.strategy) == (False, "none")
        assert window is None or tokens + config.answer_tokens <= window
        built.append(prompt)
    return built[0], built[1]


def _tight_window(docs: list[str]) -> int:
    """The smallest window that fits the documents for both questions."""
    config = RouteConfig()
    return max(fit_long_context(q, docs, config)[2] for q in (Q1, Q2)) + config.answer_tokens


def _check_shared_document_prefix(docs: list[str], first: str, second: str) -> None:
    text = DOCUMENT_SEPARATOR.join(d.strip() for d in docs)  # the context as fitted
    assert first != second  # the questions do differ...
    end = first.index(text) + len(text)
    assert second.index(text) + len(text) == end
    # ...but only after the whole document: the common prefix contains all of it
    shared = common_prefix_length(first, second)
    assert shared >= end
    assert first[:end] == second[:end] and first[:end].endswith(text)
    assert Q1 in first[end:] and Q2 in second[end:]  # the questions come after it


@pytest.mark.parametrize("window", ["none", "roomy", "tight"])
@pytest.mark.parametrize("docs", [[DOCUMENT], [DOCUMENT, SECOND]], ids=["one-doc", "two-docs"])
def test_long_context_prompts_share_the_whole_document(docs: list[str], window: str) -> None:
    size = {"none": None, "roomy": 200_000, "tight": _tight_window(docs)}[window]
    first, second = _prompts(docs, size)
    _check_shared_document_prefix(docs, first, second)
    counter = sr.default_token_counter()
    # long enough that the shared document prefix is cacheable (OpenAI: 1024 tokens and up)
    assert counter.count(first[: common_prefix_length(first, second)]) >= 1024


def test_question_first_template_would_defeat_caching() -> None:
    """Control: the check above fails for a template that asks the question first."""
    prompts = sr.Prompts(long_context="Question: {question}\n\nDocument:\n{context}\n\nAnswer:")
    config = RouteConfig(prompts=prompts)
    first = fit_long_context(Q1, [DOCUMENT], config)[1]
    second = fit_long_context(Q2, [DOCUMENT], config)[1]
    assert common_prefix_length(first, second) < first.index(DOCUMENT.strip())
