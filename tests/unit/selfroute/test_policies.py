"""Routing policies beyond the paper, in the core flow: structured verdicts, the k-ladder,
pre-routing, abstention and grounded mode (driven by a scripted handler, sync and async)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import selfroute as sr
from tests.unit.selfroute._scripted import DOCUMENT, LC_USAGE, RAG_USAGE, Scripted, arun, run

R, LC = sr.Route.RAG, sr.Route.LONG_CONTEXT
QUOTE_31 = 'Quote: "Mara Holt, kept the lamp at Grey Point for thirty-one years."'
QUOTE_1901 = 'Quote: "She was born in Dunmore in 1901."'


def _timeless(d: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if k != "latency_s"}
    out["steps"] = [{k: v for k, v in s.items() if k != "latency_s"} for s in d["steps"]]
    return out


def both(script_kw: dict[str, Any], question: str = "Who kept the lamp?", **config: Any) -> Any:
    """Run with the sync and the async driver; assert they agree; return (result, script)."""
    s1, s2 = Scripted(**script_kw), Scripted(**script_kw)
    r1 = run(s1, question, **config)
    r2 = asyncio.run(arun(s2, question, **config))
    assert _timeless(r1.to_dict()) == _timeless(r2.to_dict())
    assert s1.stages() == s2.stages()
    return r1, s1


# -- structured verdicts ---------------------------------------------------------------------
def test_structured_answer_routes_to_rag() -> None:
    result, script = both(
        {"structured": {"answerable": True, "answer": "Mara Holt"}}, verdict="structured"
    )
    assert (result.route, result.reason, result.answer) == (R, sr.Reason.ANSWERED, "Mara Holt")
    rag = result.steps[0]
    assert rag.structured and rag.verdict == "answered"
    step = next(s for s in script.seen if isinstance(s, sr.flow.Generate))
    assert step.structured is not None and step.structured.required
    assert step.structured.schema["required"] == ["answerable", "answer"]
    assert "unanswerable" not in step.structured.prompt  # no sentinel needed
    assert step.hold


def test_structured_decline_routes_to_long_context() -> None:
    result, _ = both({"structured": {"answerable": False, "answer": ""}}, verdict="structured")
    assert (result.route, result.reason) == (LC, sr.Reason.DECLINED)
    assert result.rag_verdict == "sentinel" and result.steps[0].structured
    assert result.usage.input_tokens == RAG_USAGE.input_tokens + LC_USAGE.input_tokens


@pytest.mark.parametrize(
    "obj",
    [
        {"answerable": True, "answer": "The passage does not mention who kept it."},
        {"answerable": True, "answer": ""},
        {"answerable": "maybe", "answer": "x"},
        "not an object",
    ],
    ids=["claims-answerable-but-declines", "answerable-without-answer", "bad-flag", "not-a-dict"],
)
def test_structured_garbage_fails_safe_to_long_context(obj: Any) -> None:
    result, _ = both({"structured": obj}, verdict="auto")
    assert result.route is LC
    assert result.reason in (sr.Reason.REFUSED, sr.Reason.EMPTY_OUTPUT)


def test_structured_error_accepts_a_plain_decline_and_fails_safe_otherwise() -> None:
    def gen(text: str) -> sr.Generation:
        return sr.Generation(text, usage=RAG_USAGE, structured_error="no JSON object")

    declined = run(Scripted(generate_result=gen("unanswerable")), verdict="auto")
    assert (declined.route, declined.reason) == (LC, sr.Reason.DECLINED)
    garbled = run(Scripted(generate_result=gen("{'answerable': tru")), verdict="auto")
    assert (garbled.route, garbled.reason) == (LC, sr.Reason.EMPTY_OUTPUT)
    assert garbled.steps[0].structured


def test_auto_falls_back_to_the_sentinel_and_structured_requires_support() -> None:
    result, _ = both({"rag": "Mara Holt."}, verdict="auto")
    assert (result.route, result.answer) == (R, "Mara Holt.")
    assert not result.steps[0].structured
    with pytest.raises(sr.ConfigurationError, match="verdict='auto'"):
        run(Scripted(), verdict="structured")


def test_function_handler_structured() -> None:
    calls: list[tuple[str, Any]] = []

    def structured(prompt: str, schema: Any) -> dict[str, Any]:
        calls.append((prompt, schema))
        return {"answerable": True, "answer": "Thirty-one years."}

    handler = sr.FunctionHandler(
        retrieve=lambda q, k: [sr.Passage("Mara Holt kept it thirty-one years.")],
        generate=lambda p: "unanswerable",
        generate_structured=structured,
        long_context="doc",
    )
    cfg = sr.RouteConfig(verdict="structured")
    result = sr.flow.run_flow(sr.flow.self_route_flow("How long?", cfg), handler)
    assert result.answer == "Thirty-one years." and len(calls) == 1
    assert json.loads(result.steps[0].output or "")["answerable"] is True


# -- k-ladder ----------------------------------------------------------------------------------
PASSAGES = tuple(f"Passage {i}: the keeper's log, page {i}." for i in range(30))


def test_ladder_climbs_until_an_answer() -> None:
    result, script = both(
        {"passages": PASSAGES, "rag_outputs": ["unanswerable", "The log's page 12."]},
        k=5,
        k_ladder=(20,),
    )
    assert (result.route, result.answer, result.k_used) == (R, "The log's page 12.", 20)
    retrieve = script.seen[0]
    assert (
        isinstance(retrieve, sr.flow.Retrieve) and retrieve.k == 20
    )  # one retrieval, largest rung
    rag_steps = [s for s in script.seen if isinstance(s, sr.flow.Generate)]
    assert [s.k for s in rag_steps] == [5, 20]
    assert "page 19" in rag_steps[1].prompt and "page 19" not in rag_steps[0].prompt
    assert [s.k for s in result.steps] == [5, 20]
    assert [s.verdict for s in result.steps] == ["sentinel", "answered"]
    assert len(result.sources) == 20
    assert result.usage.input_tokens == 2 * RAG_USAGE.input_tokens  # every rung is paid for


def test_ladder_ends_in_long_context() -> None:
    result, script = both({"passages": PASSAGES, "rag": "unanswerable"}, k=2, k_ladder=(5, 10))
    assert result.route is LC and [s.k for s in result.steps] == [2, 5, 10, None]
    assert script.stages() == ["retrieve", "rag", "rag", "rag", "answer", "long_context"]
    # the long context is the parents of the top-k chunks, whatever the ladder showed
    load = next(s for s in script.seen if isinstance(s, sr.flow.LoadLongContext))
    assert len(load.passages) == 2


def test_ladder_skips_rungs_with_nothing_new() -> None:
    result, _ = both({"passages": PASSAGES[:6], "rag": "unanswerable"}, k=5, k_ladder=(20, 50))
    assert [s.k for s in result.steps] == [5, 6, None]


@pytest.mark.parametrize("ladder", [(5,), (3,), (10, 8), ("20",), "20", (True,)])
def test_bad_ladder_is_a_configuration_error(ladder: Any) -> None:
    with pytest.raises(sr.ConfigurationError, match="k_ladder"):
        sr.RouteConfig(k=5, k_ladder=ladder)


# -- pre-routing -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "question",
    [
        "Summarize the whole document.",
        "What is the main theme of the story?",
        "How does Mara's attitude change throughout the book?",
        "Overall, what did the committee decide?",
    ],
)
def test_global_questions_skip_the_rag_step(question: str) -> None:
    result, script = both({}, question, pre_route=sr.PreRoute())
    assert (result.route, result.reason) == (LC, sr.Reason.GLOBAL_QUESTION)
    assert "rag" not in script.stages()
    assert result.usage.input_tokens == LC_USAGE.input_tokens  # no wasted RAG call


@pytest.mark.parametrize(
    "question",
    ["Who kept the lamp?", "When was the lens replaced?", "How many steps did she climb?"],
)
def test_specific_questions_are_not_global(question: str) -> None:
    assert not sr.is_global_question(question)


def test_weak_retrieval_threshold() -> None:
    weak, script = both({}, pre_route=sr.PreRoute(min_top_score=1.5))
    assert (weak.route, weak.reason) == (LC, sr.Reason.WEAK_RETRIEVAL)
    assert "rag" not in script.stages()
    strong, _ = both({}, pre_route=sr.PreRoute(min_top_score=0.9))  # top score is 1.0
    assert (strong.route, strong.reason) == (R, sr.Reason.ANSWERED)
    unscored = [sr.Passage("Mara Holt kept the lamp.")]
    kept, _ = both({"retrieve_result": unscored}, pre_route=sr.PreRoute(min_top_score=5.0))
    assert kept.route is R  # passages without scores never trigger it


def test_pre_route_validation() -> None:
    with pytest.raises(sr.ConfigurationError, match="not a valid regular expression"):
        sr.PreRoute(global_patterns=("(unclosed",))
    with pytest.raises(sr.ConfigurationError, match="min_top_score"):
        sr.PreRoute(min_top_score="high")  # type: ignore[arg-type]
    with pytest.raises(sr.ConfigurationError, match="pre_route"):
        sr.RouteConfig(pre_route={"min_top_score": 0.2})  # type: ignore[arg-type]


# -- abstention --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("lc", "abstained"),
    [
        ("unanswerable", True),
        ("**Unanswerable.**", True),
        ("The document does not mention her favourite song.", True),
        ("I'm sorry, but the text does not say.", True),
        ("In 1901.", False),
        ("The text does not say, but she was likely born around 1900.", False),
    ],
)
def test_long_context_declines_are_abstentions(lc: str, abstained: bool) -> None:
    result, _ = both({"rag": "unanswerable", "lc": lc})
    assert result.abstained is abstained
    assert result.abstention is (sr.Abstention.DECLINED if abstained else None)
    assert result.rag_verdict == "sentinel"
    assert result.long_context_verdict == (
        "answered" if not abstained else result.long_context_verdict
    )
    # both verdicts are recorded; an LC answer after a RAG decline is flagged as disputed
    assert result.disputed is (not abstained)
    d = result.to_dict()
    assert d["abstained"] is abstained and d["rag_verdict"] == "sentinel"


def test_rag_answers_are_not_abstentions_nor_disputed() -> None:
    result, _ = both({})
    assert not result.abstained and not result.disputed and result.verified is None


def test_over_budget_abstains() -> None:
    result = run(Scripted(rag="unanswerable"), budget=sr.LongContextBudget(max_calls=0))
    assert result.abstention is sr.Abstention.OVER_BUDGET and result.abstained


def test_long_context_prompt_allows_declining() -> None:
    _, script = both({"rag": "unanswerable"})
    lc = [s for s in script.seen if isinstance(s, sr.flow.Generate)][-1]
    assert 'write "unanswerable"' in lc.prompt


# -- grounded mode: every combination ----------------------------------------------------------
RAG_BEHAVIOUR = {
    "declines": "unanswerable",
    "answers": f"Thirty-one years.\n{QUOTE_31}",
    "fabricates": 'Forty years.\nQuote: "She kept the lamp at Grey Point for forty years."',
}
LC_BEHAVIOUR = {
    "declines": "unanswerable",
    "answers": f"In 1901.\n{QUOTE_1901}",
    "fabricates": 'In 1899.\nQuote: "She was born in Dunmore in 1899."',
}


@pytest.mark.parametrize("grounded", [False, True], ids=["plain", "grounded"])
@pytest.mark.parametrize("lc_kind", list(LC_BEHAVIOUR))
@pytest.mark.parametrize("rag_kind", list(RAG_BEHAVIOUR))
def test_every_combination(rag_kind: str, lc_kind: str, grounded: bool) -> None:
    result, script = both(
        {"rag": RAG_BEHAVIOUR[rag_kind], "lc": LC_BEHAVIOUR[lc_kind]}, grounded=grounded
    )
    rag_answers = rag_kind == "answers" or (rag_kind == "fabricates" and not grounded)
    if rag_answers:
        assert result.route is R and not result.abstained
        assert "long_context" not in script.stages()
        assert result.verified is (True if grounded else None)
        if grounded:
            (c,) = result.citations
            assert c.found and c.source_index == 0
            assert "thirty-one years" in PASSAGE_TEXT[c.start : c.end]
        return
    assert result.route is LC
    expected_reason = sr.Reason.UNGROUNDED if rag_kind == "fabricates" else sr.Reason.DECLINED
    assert result.reason is expected_reason
    if lc_kind == "declines":
        assert result.abstention is sr.Abstention.DECLINED and result.answer == "unanswerable"
    elif lc_kind == "fabricates" and grounded:
        assert result.abstention is sr.Abstention.UNGROUNDED
        assert result.answer == "unanswerable"
        assert result.unverified_answer == "In 1899."
        assert result.verified is False and not result.citations[0].found
        assert result.steps[-1].output == LC_BEHAVIOUR["fabricates"]  # kept for inspection
    else:
        assert not result.abstained
        if grounded:
            assert result.answer == "In 1901." and result.verified is True
            (c,) = result.citations
            assert c.found and "born in Dunmore in 1901" in DOCUMENT[c.start : c.end]
            assert not result.disputed
        else:  # without grounding the fabrication cannot be told apart: flagged, not hidden
            assert result.disputed
    steps = [s for s in script.seen if isinstance(s, sr.flow.Generate)]
    assert all(s.grounded is grounded for s in steps)
    assert all(("Quote:" in s.prompt) is grounded for s in steps)


PASSAGE_TEXT = "The lighthouse keeper, Mara Holt, kept the lamp at Grey Point for thirty-one years."


def test_grounded_answer_without_quotes_is_ungrounded() -> None:
    result, _ = both({"rag": "Thirty-one years.", "lc": "In 1901."}, grounded=True)
    assert result.reason is sr.Reason.UNGROUNDED
    assert result.abstention is sr.Abstention.UNGROUNDED


def test_grounded_with_structured_output() -> None:
    ok = {
        "answerable": True,
        "answer": "Thirty-one years.",
        "quotes": ["kept the lamp at Grey Point for thirty-one years"],
    }
    result, script = both({"structured": ok}, verdict="structured", grounded=True)
    assert result.route is R and result.verified is True
    step = next(s for s in script.seen if isinstance(s, sr.flow.Generate))
    assert step.structured is not None and "quotes" in step.structured.schema["required"]
    bad = dict(ok, quotes=["kept the lamp for ninety years"])
    result, _ = both(
        {"structured": bad, "lc": f"In 1901.\n{QUOTE_1901}"}, verdict="structured", grounded=True
    )
    assert (result.route, result.reason, result.verified) == (LC, sr.Reason.UNGROUNDED, True)


# -- streaming with held text -----------------------------------------------------------------
def _stream(script: Scripted, **config: Any) -> tuple[str, list[Any]]:
    flow = sr.flow.self_route_flow("Who kept the lamp?", sr.RouteConfig(**config))
    events = list(sr.flow.drive(flow, script, stream=True))
    text = "".join(e.text for e in events if isinstance(e, sr.flow.TokenEvent))
    return text, events


def test_grounded_streaming_shows_only_verified_text() -> None:
    text, events = _stream(
        Scripted(rag=RAG_BEHAVIOUR["answers"], rag_chunks=["Thirty", "-one years.\n", QUOTE_31]),
        grounded=True,
    )
    result = events[-1].result
    assert text == result.answer == "Thirty-one years."
    text, events = _stream(
        Scripted(rag="unanswerable", lc=LC_BEHAVIOUR["fabricates"]), grounded=True
    )
    assert "1899" not in text and text == "unanswerable"


def test_ladder_streaming_retracts_a_rung_that_declined_late() -> None:
    script = Scripted(
        passages=PASSAGES,
        rag_outputs=[
            "The log shows nothing about that, unfortunately, so I cannot say.",
            "Page 12.",
        ],
    )
    text, events = _stream(script, k=5, k_ladder=(20,))
    result = events[-1].result
    assert result.answer == "Page 12."
    assert text.endswith("Page 12.")


# -- speculative long context -------------------------------------------------------------------
class Timed(Scripted):
    """A scripted handler whose model calls take time (async: asyncio.sleep; sync: time.sleep)."""

    rag_delay = 0.05
    lc_delay = 0.08

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        await asyncio.sleep(self.rag_delay if step.stage is sr.Stage.RAG else self.lc_delay)
        return self._generation(step)

    def generate(self, step: sr.flow.Generate) -> sr.Generation:
        import time

        time.sleep(self.rag_delay if step.stage is sr.Stage.RAG else self.lc_delay)
        return self._generation(step)


def test_speculation_starts_long_context_only_on_weak_evidence() -> None:
    strong = run(Timed(), speculate_below=0.5)  # top score 1.0
    assert not any(s.wasted for s in strong.steps) and len(strong.steps) == 1
    weak = asyncio.run(arun(Timed(), speculate_below=2.0))  # RAG answers: LC cancelled
    assert weak.route is R and weak.answer == "Thirty-one years."
    (_, lc) = sorted(weak.steps, key=lambda s: s.stage.value != "rag")
    assert lc.wasted and lc.stage is sr.Stage.LONG_CONTEXT
    assert lc.usage.is_estimate  # the cancelled call: a local count ...
    # ... which always-LC reports in the provider's tokens (issue 17: scaled by the RAG ratio)
    from selfroute._flow._counterfactual import provider_ratio

    ratio = provider_ratio(weak.steps)
    assert ratio is not None and weak.long_context_tokens_source == "provider_scaled"
    assert weak.long_context_tokens == round(lc.usage.input_tokens * ratio)
    assert weak.usage.input_tokens == RAG_USAGE.input_tokens + lc.usage.input_tokens
    assert sr.RouteStats([weak]).summary()["wasted_usage"]["input_tokens"] == lc.usage.input_tokens
    assert weak.long_context_verdict is None  # a wasted call is no verdict


class InFlight(Timed):
    """A timed handler counting the model calls in flight at once (the most seen)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.running = 0
        self.most = 0

    async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            return await super().agenerate(step)
        finally:
            self.running -= 1


def test_speculation_saves_the_rag_latency_when_it_escalates() -> None:
    plain_calls, spec_calls = InFlight(rag="unanswerable"), InFlight(rag="unanswerable")
    plain = asyncio.run(arun(plain_calls))
    spec = asyncio.run(arun(spec_calls, speculate_below=2.0))
    assert plain.answer == spec.answer == "In 1901." and spec.route is LC
    assert [s.stage for s in spec.steps] == [sr.Stage.RAG, sr.Stage.LONG_CONTEXT]
    assert not any(s.wasted for s in spec.steps)
    # the LC call ran while the RAG call did (the whole call takes about max(rag, lc), not the
    # sum): counted as calls in flight at once, not timed
    assert (plain_calls.most, spec_calls.most) == (1, 2)


def test_speculation_sync_driver_and_streaming() -> None:
    script = Timed(rag="unanswerable")
    flow = sr.flow.self_route_flow("Who kept the lamp?", sr.RouteConfig(speculate_below=2.0))
    events = list(sr.flow.drive(flow, script, stream=True))
    result = events[-1].result
    text = "".join(e.text for e in events if isinstance(e, sr.flow.TokenEvent))
    assert result.route is LC and text == result.answer == "In 1901."
    assert any(isinstance(e, sr.flow.RouteEvent) and e.route is LC for e in events)


def test_cancelled_run_cancels_the_speculative_call() -> None:
    started: list[asyncio.Task[Any]] = []

    class Hanging(Scripted):
        async def agenerate(self, step: sr.flow.Generate) -> sr.Generation:
            started.append(asyncio.current_task())  # type: ignore[arg-type]
            await asyncio.sleep(30)
            return self._generation(step)

    async def go() -> None:
        task = asyncio.ensure_future(arun(Hanging(), speculate_below=2.0))
        while len(started) < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        assert all(t.cancelled() or t.done() for t in started)

    asyncio.run(go())


def test_speculation_validation() -> None:
    with pytest.raises(sr.ConfigurationError, match="speculate_below"):
        sr.RouteConfig(speculate_below="low")  # type: ignore[arg-type]


@pytest.mark.parametrize("answerable", [True, False])
def test_structured_verdict_survives_streaming(answerable: bool) -> None:
    obj = {"answerable": answerable, "answer": "Thirty-one years." if answerable else ""}
    handler = sr.FunctionHandler(
        retrieve=lambda q, k: [sr.Passage("Mara Holt kept it thirty-one years.")],
        generate=lambda p: "In 1901.",
        generate_structured=lambda p, schema: obj,
        long_context="Mara Holt kept it thirty-one years.",
    )
    flow = sr.flow.self_route_flow("How long?", sr.RouteConfig(verdict="structured"))
    events = list(sr.flow.drive(flow, handler, stream=True))
    result = events[-1].result
    text = "".join(e.text for e in events if isinstance(e, sr.flow.TokenEvent))
    assert result.steps[0].structured and result.route is (R if answerable else LC)
    assert text == result.answer and "answerable" not in text
