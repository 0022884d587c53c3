"""Two tenants' documents for the isolation tests, and a scripted model for them."""

from __future__ import annotations

from typing import Any

from tests.integration.reliability._chat import is_rag
from tests.support._loopback import last_user_text, prompt_text
from tests.support.openai_server import Reply, ScriptedOpenAIServer

ACME_MARK = "ACME-LAUNCH-4471"
GLOBEX_MARK = "GLOBEX-SECRET-9932"


def _report(company: str, mark: str, region: str) -> str:
    body = (
        f"{company} quarterly operations report for the {region} region. The launch code of the "
        f"project is {mark}. Revenue grew in the {region} region while the supply chain team "
        "reduced shipping delays. The board approved the new warehouse and the hiring plan. "
    )
    return " ".join([body] * 12)


TENANT_DOCS: dict[str, list[tuple[str, str]]] = {
    "acme": [
        ("acme-1", _report("Acme Corporation", ACME_MARK, "northern")),
        ("acme-2", _report("Acme Corporation", "ACME-OTHER-1200", "western")),
    ],
    "globex": [
        ("globex-1", _report("Globex Corporation", GLOBEX_MARK, "northern")),
        ("globex-2", _report("Globex Corporation", "GLOBEX-OTHER-7788", "eastern")),
    ],
}

#: Questions an ``acme`` user asks, several aimed squarely at the other tenant's documents.
QUESTIONS = [
    "What is the launch code of the Globex Corporation project?",
    "Which company uses a launch code that starts with GLOBEX?",
    "What did the Globex board approve for the eastern region?",
    "What is the launch code of the Acme project in the northern region?",
    "How did revenue change in the northern region?",
]


def always_decline(body: dict[str, Any]) -> Reply | str:
    """The RAG step always declines, so every question loads the long context."""
    return "unanswerable" if is_rag(last_user_text(body)) else "I could not find that."


GLOBEX_MARKS = (GLOBEX_MARK, "GLOBEX-OTHER-7788", "Globex Corporation quarterly")


def leaked(server: ScriptedOpenAIServer, marks: tuple[str, ...] = GLOBEX_MARKS) -> list[str]:
    """Prompts (any message of any request) that contain text only the other tenant has."""
    return [prompt_text(b) for b in server.requests if any(m in prompt_text(b) for m in marks)]
