"""What ask/chat print for abstentions, k-ladder steps, pre-routing and grounded citations."""

from __future__ import annotations

import selfroute as sr
from selfroute.cli._output import (
    NOT_FOUND,
    format_answer,
    format_citations,
    format_result,
    format_session,
)

QUOTE = "The lighthouse at Grey Point was built from granite blocks quarried on the island."
PASSAGE = sr.Passage(
    f"Intro. {QUOTE} More.",
    doc_id="d1",
    score=3.2,
    metadata={"source": "docs/a.txt", "chunk_index": 2},
)
OTHER = sr.Passage("Unrelated text here.", doc_id="d2", metadata={"source": "docs/b.txt"})


def _steps(*ks: int, lc: bool = False) -> tuple[sr.StepRecord, ...]:
    steps = [sr.StepRecord(sr.Stage.RAG, sr.Usage.of(100 * k, 1), k=k) for k in ks]
    if lc:
        steps.append(sr.StepRecord(sr.Stage.LONG_CONTEXT, sr.Usage.of(9000, 5)))
    return tuple(steps)


def _result(**kw: object) -> sr.RouteResult:
    base: dict[str, object] = {
        "question": "q",
        "answer": "granite blocks",
        "route": sr.Route.RAG,
        "reason": sr.Reason.ANSWERED,
        "sources": (PASSAGE, OTHER),
        "steps": _steps(5),
        "long_context_tokens": 9000,
        "long_context_tokens_source": "tokenizer",
    }
    base.update(kw)
    return sr.RouteResult(**base)  # type: ignore[arg-type]


def test_abstained_results_show_not_found_and_why() -> None:
    declined = _result(
        answer="The document does not say.",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.DECLINED,
        steps=_steps(5, 20, lc=True),
        abstention=sr.Abstention.DECLINED,
    )
    assert format_answer(declined) == NOT_FOUND == "not found in the documents"
    text = format_result(declined)
    assert "abstained   [declined] the long-context model found no answer" in text
    assert "rag k=5" in text and "rag k=20" in text
    ungrounded = _result(
        answer="unanswerable",
        route=sr.Route.LONG_CONTEXT,
        reason=sr.Reason.UNGROUNDED,
        steps=_steps(5, lc=True),
        abstention=sr.Abstention.UNGROUNDED,
        unverified_answer="Basalt.",
    )
    assert "[ungrounded]" in format_result(ungrounded) and "unverified_answer" in format_result(
        ungrounded
    )
    assert "quotes were not found in the retrieved chunks" in format_result(ungrounded)
    assert format_answer(_result()) == "granite blocks"


def test_pre_routed_and_disputed_results() -> None:
    weak = _result(
        route=sr.Route.LONG_CONTEXT, reason=sr.Reason.WEAK_RETRIEVAL, steps=_steps(lc=True)
    )
    assert "pre-routed: the best chunk scored under --min-top-score" in format_result(weak)
    glob = _result(route=sr.Route.LONG_CONTEXT, reason=sr.Reason.GLOBAL_QUESTION)
    assert "a question about the whole document" in format_result(glob)
    disputed = _result(route=sr.Route.LONG_CONTEXT, reason=sr.Reason.DECLINED)
    assert disputed.disputed and "disputed" in format_result(disputed)


def test_citations_name_the_source_and_shorten_the_quote() -> None:
    found = sr.Citation(QUOTE, True, 0, "d1", 7, 7 + len(QUOTE))
    rag = _result(citations=(found,), verified=True)
    text = format_citations(rag, width=40)
    assert text.splitlines()[0] == "citations"
    assert text.splitlines()[1].startswith('  [1] docs/a.txt chunk 2: "The lighthouse at Grey')
    assert text.endswith('..."')
    assert "grounded    verified" in format_result(rag)
    # long-context citations: the retrieved chunk that holds the quote, else the offsets
    lc = _result(
        route=sr.Route.LONG_CONTEXT, reason=sr.Reason.DECLINED, citations=(found,), verified=True
    )
    assert "docs/a.txt chunk 2" in format_citations(lc)
    elsewhere = sr.Citation("A sentence that no chunk holds at all.", True, 0, None, 1200, 1238)
    lc2 = _result(route=sr.Route.LONG_CONTEXT, reason=sr.Reason.DECLINED, citations=(elsewhere,))
    assert "long context, characters 1,200-1,238" in format_citations(lc2)
    missing = sr.Citation("Made up words here.", False, None, None, None, None, "not_found")
    assert "NOT FOUND (not_found)" in format_citations(_result(citations=(missing,)))
    assert format_citations(_result()) == ""


def test_session_summary_counts_abstentions() -> None:
    stats = sr.RouteStats(
        [_result(), _result(route=sr.Route.LONG_CONTEXT, reason=sr.Reason.DECLINED,
                            abstention=sr.Abstention.DECLINED)]
    )  # fmt: skip
    assert "1 not found in the documents" in format_session(stats)
