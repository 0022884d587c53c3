"""A scripted "reader" model for the CLI tests: it answers only from what its prompt contains.

For the RAG prompt (the one over "excerpts retrieved from a longer document") it answers when the
evidence sentence is among the retrieved passages and declines otherwise; for the long-context
prompt it answers when the evidence is in the document, and otherwise says the document does not
say (which the core reads as a decline). When the prompt asks for quotes (grounded mode) it adds
the evidence sentence as a ``Quote:`` line. Routing therefore depends on what retrieval really
found, not on a fixed script. A fact marked ``whole`` makes the RAG step decline even when the
evidence is there (a question that needs the whole document), so the long-context route runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support._loopback import Reply, last_user_text

FIXTURE_DOCS = Path(__file__).parents[2] / "fixtures" / "docs"
RAG_MARKER = "excerpts retrieved from a longer document"
GROUNDED_MARKER = 'starting with "Quote:"'


@dataclass(frozen=True)
class Fact:
    """A question the scripted model can answer, and the text it needs to see."""

    key: str
    question: str
    evidence: str
    answer: str
    whole: bool = False


OIL = Fact(
    "oil embargo",
    "Who proclaimed the oil embargo in October 1973?",
    "proclaimed an oil embargo",
    "The members of OAPEC.",
)
PACKETS = Fact(
    "packet switching",
    "Who developed the concept behind packet switching at RAND?",
    "Paul Baran developed the concept",
    "Paul Baran.",
)
CLERK = Fact(
    "clerk",
    "Over the whole stave, how does Hartman treat his clerk at Christmas?",
    "earlier next morning",
    "He grudgingly gives him Christmas Day off if he comes in earlier the next morning.",
    whole=True,
)
NOT_THERE = "What is the capital of Australia?"
FACTS = (OIL, PACKETS, CLERK)
LC_NOT_FOUND = "The document does not say."


def is_rag(prompt: str) -> bool:
    """Whether ``prompt`` is the RAG-and-route prompt."""
    return RAG_MARKER in prompt


def evidence_sentence(prompt: str, evidence: str) -> str:
    """The sentence of ``prompt`` holding ``evidence`` (between sentence ends or line breaks)."""
    at = prompt.index(evidence)
    start = max(prompt.rfind(". ", 0, at) + 2, prompt.rfind("\n", 0, at) + 1)
    ends = [i for i in (prompt.find(". ", at), prompt.find("\n", at)) if i >= 0]
    end = min(ends) + 1 if ends else len(prompt)
    return " ".join(prompt[start:end].split())


def reader(body: dict[str, Any]) -> Reply:
    """The responder for ``ScriptedOpenAIServer``/``ScriptedGeminiServer`` (it reports the model
    name it was asked for, like a real provider)."""
    prompt = last_user_text(body)
    question = prompt.rsplit("Question:", 1)[-1]
    rag = is_rag(prompt)
    for fact in FACTS:
        if fact.key in question:
            if rag and fact.whole:
                return Reply("unanswerable", model=None)
            if fact.evidence in prompt:
                text = fact.answer
                if GROUNDED_MARKER in prompt:
                    text += f'\nQuote: "{evidence_sentence(prompt, fact.evidence)}"'
                return Reply(text, model=None)
            break
    return Reply("unanswerable" if rag else LC_NOT_FOUND, model=None)


def copy_docs(target: Path) -> Path:
    """A writable copy of the vendored documents."""
    shutil.copytree(FIXTURE_DOCS, target)
    return target
