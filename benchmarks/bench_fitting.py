"""6. Long-context fitting on LaRA: does the evidence survive ``fill`` versus ``truncate_middle``?

Setting: LaRA's 32k documents (15 novellas, 19 concatenated papers; 12k-33k tokens each) and their
``location`` questions (one passage holds the answer; the gold answer is a short abstractive
sentence). The long-context model has an 8k-token window. Each question runs through the real flow
(``self_route_flow`` + ``run_flow``) with a RAG step that always declines, so the long context is
fitted exactly as in production: the window minus the prompt and the 1,024-token answer budget,
``fill`` seeded with the BM25 top-5 chunks the declined RAG step saw (``selfroute.LexicalIndex``),
``truncate_middle`` keeping head and tail.

"Evidence survives" (no model involved):

1. Terms are lower-case alphanumeric words without stop words. The answer terms are the gold
   answer's terms; the question terms are the question's.
2. The document is split into sentences. The evidence window is the run of up to three consecutive
   sentences that covers the most answer terms (ties: most question terms, then earliest).
3. A question counts ("gold-answerable") only if that window covers at least 60% of the answer
   terms (at least one): otherwise the abstractive answer cannot be located and the question is
   left out (reported).
4. The key sentence is the window's sentence with the most answer terms. The evidence survives a
   strategy iff the key sentence, white space normalised, appears verbatim in the fitted context
   sent to the LC model (a sentence cut by a ``[...]`` gap does not survive).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import selfroute as sr
from benchmarks._common import BenchContext, BenchResult, Row, fmt_pct, markdown_table
from selfroute._text import STOP_WORDS

__all__ = ["Evidence", "locate_evidence", "run"]

KEY, TITLE = "6", "Long-context fitting on LaRA (8k window): evidence survival"
WINDOW = 8_000
MIN_COVERAGE = 0.6
SPAN = 3

_WORD = re.compile(r"[0-9a-z]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n\s*\n")
_STOP = STOP_WORDS | {"paper", "according"}


def _terms(text: str) -> set[str]:
    return {t for t in _WORD.findall(text.lower()) if t not in _STOP}


def _squash(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Evidence:
    """Where a question's answer is in the document."""

    sentence: str
    coverage: float

    @property
    def located(self) -> bool:
        """Whether the answer could be located (coverage above the threshold)."""
        return self.coverage >= MIN_COVERAGE


def split_sentences(document: str) -> list[str]:
    """Sentences (and paragraph breaks) of ``document``, white space squashed, empties dropped."""
    return [s for s in (_squash(p) for p in _SENTENCE_END.split(document)) if s]


def locate_evidence(
    sentences: Sequence[str], question: str, answer: str, terms: Sequence[set[str]] | None = None
) -> Evidence | None:
    """The key sentence of the window that best covers ``answer`` (see the module docstring)."""
    a_terms = _terms(answer)
    if not a_terms:
        return None
    q_terms = _terms(question)
    sent_terms = terms if terms is not None else [_terms(s) for s in sentences]
    best: tuple[int, int, int] | None = None
    best_start = 0
    for i in range(len(sentences)):
        window = set().union(*sent_terms[i : i + SPAN])
        key = (len(a_terms & window), len(q_terms & window), -i)
        if best is None or key > best:
            best, best_start = key, i
    if best is None:
        return None
    span = range(best_start, min(best_start + SPAN, len(sentences)))
    key_i = max(span, key=lambda j: (len(a_terms & sent_terms[j]), len(q_terms & sent_terms[j])))
    return Evidence(sentences[key_i], best[0] / len(a_terms))


class _DecliningHandler:
    """RAG step always declines; the LC step records the context it was sent."""

    def __init__(self, index: sr.LexicalIndex, document: str) -> None:
        self.index = index
        self.document = document
        self.lc_prompt = ""

    def retrieve(self, step: sr.flow.Retrieve) -> Sequence[sr.Passage]:
        return self.index.search(step.question, step.k)

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        if step.stage is sr.Stage.LONG_CONTEXT:
            self.lc_prompt = step.prompt
            return sr.Generation("(long-context answer)", model="lc")
        return sr.Generation("unanswerable", model="rag")

    def stream(self, step: sr.flow.Generate) -> Any:  # pragma: no cover - not streamed here
        yield sr.flow.GenerationChunk(self.generate(step).text)

    def load_long_context(self, step: sr.flow.LoadLongContext) -> Sequence[str]:
        return [self.document]


def _load(data: Path, quick: bool) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, document text, question) for every location question."""
    rows = []
    for kind, folder in (("book", "book"), ("paper", "paper")):
        path = data / "lara" / "query" / f"32k_{kind}_location.jsonl"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as fh:
            questions = [json.loads(line) for line in fh if line.strip()]
        if quick:
            questions = questions[:4]
        for q in questions:
            doc = data / "lara" / "32k" / folder / q["file"]
            if doc.is_file():
                rows.append((kind, doc.read_text(encoding="utf-8"), q))
    return rows


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    query_dir = ctx.data / "lara" / "query"
    if not (query_dir / "32k_book_location.jsonl").is_file():
        return BenchResult(KEY, TITLE, skipped=f"data not found at {query_dir}")
    rows = _load(ctx.data, ctx.quick)
    counter = sr.default_token_counter()
    strategies = {
        "truncate_middle": sr.RouteConfig(
            long_context_window=WINDOW, overflow="truncate_middle", counterfactual=False
        ),
        "fill": sr.RouteConfig(long_context_window=WINDOW, overflow="fill", counterfactual=False),
    }
    indexes: dict[str, tuple[sr.LexicalIndex, list[str], list[set[str]]]] = {}
    survived: dict[tuple[str, str], int] = {}
    total: dict[str, int] = {}
    unlocated = 0
    too_short = 0
    doc_tokens: list[int] = []
    for kind, document, q in rows:
        if document not in indexes:
            sentences = split_sentences(document)
            indexes[document] = (
                sr.LexicalIndex(sr.chunk_text(document, doc_id=q["file"])),
                sentences,
                [_terms(s) for s in sentences],
            )
            doc_tokens.append(counter.count(document))
        index, sentences, terms = indexes[document]
        if counter.count(document) <= WINDOW:
            too_short += 1
            continue
        evidence = locate_evidence(sentences, q["question"], q["answer"], terms)
        if evidence is None or not evidence.located:
            unlocated += 1
            continue
        total[kind] = total.get(kind, 0) + 1
        for name, config in strategies.items():
            handler = _DecliningHandler(index, document)
            sr.flow.run_flow(sr.flow.self_route_flow(q["question"], config), handler)
            kept = evidence.sentence in _squash(handler.lc_prompt)
            survived[kind, name] = survived.get((kind, name), 0) + kept
    n = sum(total.values())
    result = BenchResult(KEY, TITLE)
    if not n:
        result.skipped = "no location question could be located in its document"
        return result
    trunc = sum(survived.get((k, "truncate_middle"), 0) for k in total)
    fill = sum(survived.get((k, "fill"), 0) for k in total)
    result.rows.append(
        Row(
            f"evidence survives, all {n} located questions (baseline truncate_middle, ours fill)",
            f"{trunc}/{n} ({fmt_pct(trunc / n)})",
            f"{fill}/{n} ({fmt_pct(fill / n)})",
            f"{fill / trunc:.2f}x" if trunc else "inf",
            ">= 1.0x",
            fill >= trunc,
        )
    )
    for kind in sorted(total):
        t, f, m = (
            survived.get((kind, "truncate_middle"), 0),
            survived.get((kind, "fill"), 0),
            total[kind],
        )
        result.rows.append(
            Row(
                f"{kind}s: evidence survives",
                f"{t}/{m} ({fmt_pct(t / m)})",
                f"{f}/{m} ({fmt_pct(f / m)})",
                f"{f / t:.2f}x" if t else "inf",
            )
        )
    mean_tokens = sum(doc_tokens) / len(doc_tokens)
    result.details.append(
        markdown_table(
            ["documents", "tokens (min / mean / max)", "window", "questions located", "left out"],
            [
                [
                    len(doc_tokens),
                    f"{min(doc_tokens):,} / {mean_tokens:,.0f} / {max(doc_tokens):,}",
                    f"{WINDOW:,} (minus prompt and 1,024 answer tokens)",
                    n,
                    f"{unlocated} answer not locatable, {too_short} document fits the window",
                ]
            ],
        )
    )
    result.notes.append(
        "Evidence survives = the key sentence of the best-matching 3-sentence window (covering "
        f">= {MIN_COVERAGE:.0%} of the gold answer's content words) appears verbatim in the fitted "
        "context. `fill` is seeded with the BM25 top-5 chunks the declined RAG step retrieved, as in "
        f"the flow. A window keeps about {WINDOW / mean_tokens:.0%} of a mean document, which is what "
        "truncate_middle's survival rate tracks (position-blind)."
    )
    return result
