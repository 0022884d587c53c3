"""Counting a prompt as its document plus the rest: exact, and the document tokenised once."""

from __future__ import annotations

import json
import random
from importlib import resources

import pytest

import selfroute as sr
import selfroute.flow as srflow
from selfroute import _tokens
from selfroute._prompts import Prompts
from selfroute._tokens import TiktokenCounter, count_in_prompt, default_token_counter


def _documents() -> list[str]:
    ref = resources.files("selfroute.eval").joinpath("data").joinpath("squad_sample.jsonl")
    rows = [json.loads(line) for line in ref.read_text(encoding="utf-8").splitlines() if line]
    return [r["document"] for r in rows]


DOCS = _documents()
HAYSTACK = "\n\n".join(DOCS)


def _fresh() -> TiktokenCounter:
    base = sr.default_token_counter()
    assert isinstance(base, TiktokenCounter)
    return TiktokenCounter(base._enc, "o200k_base")


def _whole(counter: TiktokenCounter, text: str) -> int:
    return len(counter._enc.encode(text, disallowed_special=()))


def test_counts_add_up_at_every_safe_cut() -> None:
    counter = _fresh()
    text = HAYSTACK + "\n/path\n\n  indented.\n\tTab! Yes? No.  Two.\n\n\nEnd"
    cuts = [m.end() for m in _tokens._SAFE_CUT.finditer(text)]
    assert len(cuts) > 100
    for cut in cuts:
        left, right = text[max(0, cut - 200) : cut], text[cut : cut + 200]
        assert _whole(counter, left) + _whole(counter, right) == _whole(counter, left + right)


def test_the_cut_rules_are_needed() -> None:
    # a line break before "/" or white space, or a full stop before a letter: not cuts, and
    # counting across them separately would be wrong
    counter = _fresh()
    for left, right in (("a.\n", "/x"), ("x:\n", "\n"), ("a.", "b"), ("x\n", " y")):
        assert not any(m.end() == len(left) for m in _tokens._SAFE_CUT.finditer(left + right))
    assert _whole(counter, "a.\n") + _whole(counter, "\n") != _whole(counter, "a.\n\n")


@pytest.mark.parametrize("seed", range(6))
def test_count_in_prompt_is_exact(seed: int) -> None:
    rng = random.Random(seed)
    counter = _fresh()
    body = HAYSTACK if seed % 2 else rng.choice(DOCS)
    questions = ["Who?", "/root path?", "  spaced  ", "end.\n", "\n\nWhat. Then", "ünïcode — «x»"]
    prompts = Prompts()
    for q in questions:
        for prompt in (
            prompts.long_context_prompt(q, body),
            prompts.rag_prompt(q, [body]),
            q + body + q,
            body + q,
            q + body,
        ):
            assert count_in_prompt(counter, prompt, body) == _whole(counter, prompt), q


def test_the_document_is_tokenised_once_across_prompts() -> None:
    counter = _fresh()
    encoded: list[int] = []
    original = counter._encode_len

    def spy(text: str) -> int:
        encoded.append(len(text))
        return original(text)

    counter._encode_len = spy  # type: ignore[method-assign]
    prompts = Prompts()
    for i in range(20):
        prompt = prompts.long_context_prompt(f"Question number {i}?", HAYSTACK)
        assert count_in_prompt(counter, prompt, HAYSTACK) == _whole(counter, prompt)
    # the document once, then only each prompt's own lines and the document's edges
    assert sum(encoded) < 1.2 * len(HAYSTACK)


def test_a_body_without_cuts_is_counted_whole() -> None:
    counter = _fresh()
    body = "word " * 5_000  # no line break, no sentence end
    prompt = "Q:\n" + body + "\nA:"
    assert count_in_prompt(counter, prompt, body) == _whole(counter, prompt)


def test_the_same_text_object_is_not_hashed_again() -> None:
    counter = _fresh()
    text = HAYSTACK
    first = counter.count(text)
    counter._counts.clear()  # only the identity memory can answer now
    calls: list[str] = []
    counter._encode_len = lambda t: calls.append(t) or 0  # type: ignore[method-assign]
    assert counter.count(text) == first and not calls
    assert counter.count(text + " ") == 0 and calls  # another text is counted


def _paragraphs() -> list[str]:
    return [p.strip() for p in HAYSTACK.split("\n") if len(p.strip()) > 600]


@pytest.mark.parametrize("seed", range(4))
def test_a_rag_prompt_over_known_passages_is_exact(seed: int) -> None:
    rng = random.Random(seed)
    counter = _fresh()
    passages = rng.sample(_paragraphs(), 5)
    for grounded in (False, True):
        prompt = Prompts().rag_prompt("Who? /x", passages, grounded=grounded)
        assert count_in_prompt(counter, prompt, *passages) == _whole(counter, prompt)
    # a body that is not in the prompt, or given out of order, changes nothing
    prompt = Prompts().rag_prompt("Why.", passages)
    assert count_in_prompt(counter, prompt, "absent " * 200, *passages[::-1]) == _whole(
        counter, prompt
    )


def test_passages_are_tokenised_once_across_rag_prompts() -> None:
    counter = _fresh()
    passages = _paragraphs()[:5]
    encoded: list[int] = []
    original = counter._encode_len

    def spy(text: str) -> int:
        encoded.append(len(text))
        return original(text)

    counter._encode_len = spy  # type: ignore[method-assign]
    prompts = [Prompts().rag_prompt(f"Question {i}?", passages) for i in range(10)]
    for prompt in prompts:
        assert count_in_prompt(counter, prompt, *passages) == _whole(counter, prompt)
    assert sum(encoded) < 0.5 * sum(len(p) for p in prompts)


def test_the_rag_step_counts_its_prompt_exactly() -> None:
    from selfroute._simple import FunctionHandler

    passages = _paragraphs()[:3]
    seen: list[str] = []

    def generate(prompt: str) -> str:
        seen.append(prompt)
        return "Forty-two."

    handler = FunctionHandler(
        retrieve=lambda q, k: [sr.Passage(text=p, doc_id="d") for p in passages],
        generate=generate,
    )
    result = srflow.run_flow(srflow.self_route_flow("How many?", sr.RouteConfig()), handler)
    rag = next(s for s in result.steps if s.stage is sr.Stage.RAG)
    assert rag.prompt_tokens_estimate == _whole(_fresh(), seen[0])


def test_a_passage_met_again_as_a_new_string_is_neither_searched_nor_hashed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a RAG prompt's passages reach the counter split from it: equal texts, new objects
    counter = _fresh()
    passages = _paragraphs()[:5]
    prompts = [Prompts().rag_prompt(f"Question {i}?", passages) for i in range(6)]
    assert count_in_prompt(counter, prompts[0], *passages) == _whole(counter, prompts[0])
    searched: list[str] = []
    outer_cuts = _tokens._outer_cuts
    monkeypatch.setattr(_tokens, "_outer_cuts", lambda b: searched.append(b) or outer_cuts(b))
    digested: list[str] = []
    cached = counter._cached
    counter._cached = lambda t: digested.append(t) or cached(t)  # type: ignore[method-assign]
    for prompt in prompts[1:]:
        copies = [(" " + p)[1:] for p in passages]  # equal, not the same objects
        assert all(c is not p for c, p in zip(copies, passages, strict=True))
        assert count_in_prompt(counter, prompt, *copies) == _whole(counter, prompt)
    assert not searched  # the cuts of each passage are remembered
    # only the text between passages is counted again, never a passage's inside
    assert not any(len(t) > 400 and t in p for t in digested for p in passages)


def test_the_document_stays_remembered_however_many_prompts_are_counted() -> None:
    counter = _fresh()
    document = HAYSTACK * 2  # a long text: remembered by identity
    tokens = counter.count(document)
    count_in_prompt(counter, Prompts().long_context_prompt("Q?", document), document)
    passages = _paragraphs()[:3]
    calls: list[str] = []
    original = counter._encode_len
    counter._encode_len = lambda t: calls.append(t) or original(t)  # type: ignore[method-assign]
    counter._counts.clear()  # only the identity memory can answer for the document
    for i in range(3 * _tokens._RECENT):
        prompt = Prompts().rag_prompt(f"Question {i}?", passages)
        count_in_prompt(counter, prompt, *passages)  # RAG prompts: remembered too
        long_prompt = Prompts().long_context_prompt(f"Question {i}?", document)
        count_in_prompt(counter, long_prompt, document)
        assert counter.count(document) == tokens
    assert not any(len(t) >= len(document) // 2 for t in calls)  # never tokenised again


@pytest.mark.parametrize("seed", range(4))
def test_bodies_between_safe_cuts_are_counted_exactly_as_units(seed: int) -> None:
    # bodies glued to their neighbours by every kind of separator: line breaks (safe cuts),
    # spaces after a full stop (safe), and joins that are not cuts (counted around)
    rng = random.Random(seed)
    counter = _fresh()
    paragraphs = _paragraphs()
    glues = ["\n\n", "\n", "\n\n\n", " ", ". ", "\n /", "\n\t", "", "x", "\n\nQ: ", "!\n"]
    for _ in range(40):
        bodies = rng.sample(paragraphs, rng.randint(1, 5))
        bodies = [
            b if rng.random() < 0.7 else rng.choice([" ", "/", "\n", "é"]) + b for b in bodies
        ]
        parts = [rng.choice(["", "Passage:\n", "Q. ", "x"])]
        for body in bodies:
            parts += [body, rng.choice(glues)]
        prompt = "".join(parts)
        for _ in range(2):  # counted, then from what is remembered
            assert count_in_prompt(counter, prompt, *bodies) == _whole(counter, prompt)


def test_a_passage_between_line_breaks_is_not_encoded_again() -> None:
    counter = _fresh()
    passages = _paragraphs()[:5]
    encoded: list[int] = []
    original = counter._encode_len
    counter._encode_len = lambda t: encoded.append(len(t)) or original(t)  # type: ignore[method-assign]
    prompts = [Prompts().rag_prompt(f"Question {i}?", passages) for i in range(10)]
    count_in_prompt(counter, prompts[0], *passages)
    encoded.clear()
    for prompt in prompts[1:]:
        assert count_in_prompt(counter, prompt, *passages) == _whole(counter, prompt)
    assert sum(encoded) < 100 * len(prompts[1:])  # the question's lines only


def test_a_short_text_is_encoded_once_per_content() -> None:
    counter = _fresh()
    encoded: list[str] = []
    original = counter._encode_len
    counter._encode_len = lambda t: encoded.append(t) or original(t)  # type: ignore[method-assign]
    line = "\n\nQuestion: who built the lighthouse at Grey Point?\nAnswer:"
    counts = {counter.count((" " + line)[1:]) for _ in range(5)}  # equal texts, new objects
    assert counts == {_whole(counter, line)} and encoded == [line]
    assert default_token_counter() is default_token_counter()
