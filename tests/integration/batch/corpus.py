"""A scripted workload for batch tests: 40 documents, 5 questions each, answered the same online
and in a batch (the responder only reads the prompt).

The RAG step answers when the asked fact is in its passage and the fact's number is not a
multiple of 3 (those decline, so phase 2 has work); the long-context step answers from the
document, except facts numbered 7 mod 50 (an abstention). Questions numbered 11 mod 50 get an
HTTP 500 on their RAG step (a per-request error: escalated to long context, as online); those
numbered 23 mod 50 get a RAG answer cut short (``finish_reason`` ``length``: truncated).
"""

from __future__ import annotations

import re
from typing import Any

from tests.support._loopback import Reply, last_user_text

DOCS = 40
PER_DOC = 5
_FACT = "The access code of unit {n} is AC-{code}."
_FILLER = (
    "This section restates procedures that apply across the facility and does not concern any "
    "particular unit. Staff rotate through the stations on a weekly plan. "
)


def code(n: int) -> str:
    """The answer to question ``n``."""
    return f"{(n * 7919) % 100000:05d}"


def documents() -> list[str]:
    """The 40 documents."""
    docs = []
    for d in range(DOCS):
        parts = []
        for j in range(PER_DOC):
            n = d * PER_DOC + j
            parts.append(_FILLER * 3 + _FACT.format(n=n, code=code(n)))
        docs.append(" ".join(parts))
    return docs


def inputs(count: int = DOCS * PER_DOC) -> list[dict[str, Any]]:
    """``{"id", "question", "document"}`` per question."""
    docs = documents()
    return [
        {
            "id": f"q{n}",
            "question": f"What is the access code of unit {n}?",
            "document": docs[n // PER_DOC],
        }
        for n in range(count)
    ]


_ASKED = re.compile(r"access code of unit (\d+)\?")


def respond(body: dict[str, Any]) -> Reply | str:
    """The scripted model (same for online and batch requests)."""
    user = last_user_text(body)
    asked = _ASKED.search(user)
    if asked is None:
        return "unanswerable"
    n = int(asked.group(1))
    fact = f"unit {n} is AC-{code(n)}"
    config = body.get("generationConfig") or {}
    structured = "response_format" in body or "responseJsonSchema" in config
    if "Document:" in user:
        return "unanswerable" if n % 50 == 7 else f"AC-{code(n)}"
    if n % 50 == 11:
        return Reply("scripted outage", kind="error", status=500)
    if n % 50 == 23:  # cut short by the token limit: not a verdict, escalated as online
        return Reply(f"AC-{code(n)[:2]}", finish_reason="length")
    ok = fact in user and n % 3 != 0
    if structured:
        return (
            f'{{"answerable": true, "answer": "AC-{code(n)}"}}'
            if ok
            else '{"answerable": false, "answer": ""}'
        )
    return f"AC-{code(n)}" if ok else "unanswerable"


def comparable(result: Any) -> dict[str, Any]:
    """A result's dict without what legitimately differs between online and batch: timing,
    the batch flag and batch price, and the wording of absorbed errors (kept as present or not)."""
    data = result.to_dict()
    for key in ("latency_s", "cost"):
        data.pop(key, None)
    data["error"] = data.get("error") is not None
    steps = []
    for step in data["steps"]:
        step = dict(step)
        step.pop("latency_s", None)
        step.pop("batch", None)
        step["error"] = step.get("error") is not None
        steps.append(step)
    data["steps"] = steps
    return data


def online(route: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
    """``{id: comparable result}`` of the same questions run online (``route.batch``)."""
    plain = [{"question": i["question"], "document": i["document"]} for i in items]
    outs = route.batch(plain, config={"max_concurrency": 8})
    return {i["id"]: comparable(o.result) for i, o in zip(items, outs, strict=True)}
