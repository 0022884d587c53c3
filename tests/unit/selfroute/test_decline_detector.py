"""A user's own decline detector (``RouteConfig.decline_detector``) beside the rules.

The detector is asked about each output the rules read as an answer; ``True`` makes it a decline.
It adds declines and never removes one, never sees empty or garbled output, and its failures are
configuration errors (raised, not routed). The flow asks it about the RAG answer, the
long-context answer and eval's baselines; the stream holds text until it has read a sentence.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import selfroute as sr
from benchmarks.stream_replay import tokens
from selfroute.eval.metrics import declined, score_answer
from tests.unit.selfroute._scripted import Scripted

GERMAN = "Keine Angaben in den Textstellen."
QUESTION = "When was she born?"


class Recorder:
    """A detector that declines German give-ups and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []

    def __call__(self, text: str, question: str | None) -> bool | None:
        self.asked.append((text, question))
        return True if text.lower().startswith("keine angaben") else None


def test_a_detector_adds_a_decline_the_rules_miss() -> None:
    assert sr.parse_verdict(GERMAN).answered  # what the rules alone say
    detector = Recorder()
    verdict = sr.parse_verdict(GERMAN, detector=detector, question=QUESTION)
    assert verdict.kind is sr.VerdictKind.REFUSAL and verdict.declined
    assert verdict.matched == "Recorder" and verdict.answer == GERMAN
    assert detector.asked == [(GERMAN, QUESTION)]


@pytest.mark.parametrize("says", [None, False])
def test_no_opinion_or_false_leaves_the_answer(says: bool | None) -> None:
    verdict = sr.parse_verdict("Thirty-one years.", detector=lambda text, question: says)
    assert verdict.kind is sr.VerdictKind.ANSWERED and verdict.answer == "Thirty-one years."


@pytest.mark.parametrize(
    "text",
    ["unanswerable", "The passages do not mention her birth year.", "", "   ", "...", "<think>"],
)
def test_it_never_removes_a_decline_and_is_not_asked_about_one(text: str) -> None:
    detector = Recorder()
    asked_false = sr.parse_verdict(text, detector=lambda t, q: False)
    assert asked_false.declined and asked_false == sr.parse_verdict(text)
    assert sr.parse_verdict(text, detector=detector).declined
    assert detector.asked == []  # declines, empty and garbled output never reach it


def test_it_is_given_the_text_as_it_would_be_served() -> None:
    detector = Recorder()
    raw = "<think>The passages list no date.</think>\n**Answer:** Keine Angaben."
    verdict = sr.parse_verdict(raw, detector=detector)
    assert verdict.declined and detector.asked == [("Keine Angaben.", None)]


def test_with_strict_the_sentinel_and_the_detector_decide_alone() -> None:
    refusal = "The passages do not mention her birth year."
    assert sr.parse_verdict(refusal, strict=True, detector=Recorder()).answered
    assert sr.parse_verdict(GERMAN, strict=True, detector=Recorder()).declined
    assert sr.parse_verdict("Unanswerable.", strict=True, detector=Recorder()).declined


def test_a_numpy_boolean_counts() -> None:
    np = pytest.importorskip("numpy")
    assert sr.parse_verdict("N/A.", detector=lambda t, q: np.bool_(True)).declined
    assert sr.parse_verdict("1901.", detector=lambda t, q: np.bool_(False)).answered


@pytest.mark.parametrize("returned", ["yes", 1, 0.0, [], sr.VerdictKind.REFUSAL])
def test_another_return_value_is_a_configuration_error_naming_it(returned: Any) -> None:
    def mine(text: str, question: str | None) -> Any:
        return returned

    with pytest.raises(sr.ConfigurationError, match=r"decline_detector .*mine.* must return") as e:
        sr.parse_verdict("1901.", detector=mine)
    assert repr(returned) in str(e.value) and e.value.context["detector"].endswith("mine")


def test_an_exception_it_raises_is_a_configuration_error_with_the_cause() -> None:
    def broken(text: str, question: str | None) -> bool:
        raise KeyError("lang")

    with pytest.raises(sr.ConfigurationError, match=r"decline_detector .*broken raised KeyError"):
        sr.parse_verdict("1901.", detector=broken)
    try:
        sr.parse_verdict("1901.", detector=broken)
    except sr.ConfigurationError as exc:
        assert isinstance(exc.__cause__, KeyError)


def test_a_selfroute_error_it_raises_passes_unchanged() -> None:
    def strict_mine(text: str, question: str | None) -> bool:
        raise sr.InvalidInputError("not my language")

    with pytest.raises(sr.InvalidInputError, match="not my language"):
        sr.parse_verdict("1901.", detector=strict_mine)


@pytest.mark.parametrize("bad", ["keine angaben", 3, object()])
def test_a_detector_that_is_not_callable_is_refused_where_it_is_given(bad: Any) -> None:
    with pytest.raises(sr.ConfigurationError, match="decline_detector must be a callable"):
        sr.RouteConfig(decline_detector=bad)
    with pytest.raises(sr.ConfigurationError, match="decline_detector must be a callable"):
        sr.parse_verdict("1901.", detector=bad)
    with pytest.raises(sr.ConfigurationError, match="decline_detector must be a callable"):
        sr.flow.SentinelSniffer(detector=bad)


def test_the_structured_verdict_asks_it_about_an_answerable_answer_only() -> None:
    from selfroute._structured import parse_structured_verdict

    detector = Recorder()
    data = {"answerable": True, "answer": GERMAN}
    assert parse_structured_verdict(data, detector=detector).declined
    no = parse_structured_verdict({"answerable": False, "answer": ""}, detector=detector)
    assert no.declined and detector.asked == [(GERMAN, None)]


# -- the flow --------------------------------------------------------------------------------


def _run(script: Scripted, **config: Any) -> sr.RouteResult:
    return sr.flow.run_flow(sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config)), script)


def _arun(script: Scripted, **config: Any) -> sr.RouteResult:
    flow = sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config))
    return asyncio.run(sr.flow.arun_flow(flow, script))


@pytest.mark.parametrize("run", [_run, _arun], ids=["sync", "async"])
def test_the_flow_escalates_what_the_detector_declines(run: Any) -> None:
    detector = Recorder()
    result = run(Scripted(rag=GERMAN), decline_detector=detector)
    assert result.route is sr.Route.LONG_CONTEXT and result.reason is sr.Reason.REFUSED
    assert result.answer == "In 1901." and result.rag_answer == GERMAN
    assert [s.verdict for s in result.steps] == ["refusal", "answered"]
    # asked about the RAG answer, with the question, and about the long-context answer
    assert detector.asked == [(GERMAN, QUESTION), ("In 1901.", QUESTION)]
    plain = run(Scripted(rag=GERMAN))
    assert plain.route is sr.Route.RAG  # without it the German give-up is served


@pytest.mark.parametrize("run", [_run, _arun], ids=["sync", "async"])
def test_a_long_context_decline_it_finds_is_an_abstention(run: Any) -> None:
    result = run(Scripted(rag=GERMAN, lc="Keine Angaben im Dokument."), decline_detector=Recorder())
    assert result.abstained and result.abstention is sr.Abstention.DECLINED


@pytest.mark.parametrize("run", [_run, _arun], ids=["sync", "async"])
@pytest.mark.parametrize("on_rag_error", ["long_context", "raise"])
def test_a_failing_detector_is_raised_not_routed(run: Any, on_rag_error: str) -> None:
    def broken(text: str, question: str | None) -> bool:
        raise RuntimeError("model file missing")

    script = Scripted(rag="Thirty-one years.")
    with pytest.raises(sr.ConfigurationError, match="broken raised RuntimeError"):
        run(script, decline_detector=broken, on_rag_error=on_rag_error)
    assert not any(
        isinstance(s, sr.flow.Generate) and s.stage is sr.Stage.LONG_CONTEXT for s in script.seen
    )  # no long-context call was spent on a bug


# -- streaming -------------------------------------------------------------------------------


def _stream(script: Scripted, **config: Any) -> list[sr.flow.FlowEvent]:
    flow = sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config))
    return list(sr.flow.drive(flow, script, stream=True))


def _astream(script: Scripted, **config: Any) -> list[sr.flow.FlowEvent]:
    async def collect() -> list[sr.flow.FlowEvent]:
        flow = sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config))
        return [e async for e in sr.flow.adrive(flow, script, stream=True)]

    return asyncio.run(collect())


def _rag_text(events: list[sr.flow.FlowEvent]) -> str:
    return "".join(
        e.text for e in events if isinstance(e, sr.flow.TokenEvent) and e.stage is sr.Stage.RAG
    )


@pytest.mark.parametrize("stream", [_stream, _astream], ids=["drive", "adrive"])
@pytest.mark.parametrize("hold", [0, 80])
def test_a_streamed_decline_it_finds_is_never_shown(stream: Any, hold: int) -> None:
    text = GERMAN + " Sie behandeln nur ihre Laufbahn."
    events = stream(
        Scripted(rag=text, rag_chunks=tokens(text)),
        decline_detector=Recorder(),
        stream_hold_chars=hold,
    )
    assert _rag_text(events) == ""
    routes = [e for e in events if isinstance(e, sr.flow.RouteEvent)]
    assert routes == [sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=False)]
    assert events[-1].result.reason is sr.Reason.REFUSED  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [_stream, _astream], ids=["drive", "adrive"])
def test_a_streamed_answer_is_released_after_its_first_sentence(stream: Any) -> None:
    answer = "She was born in 1901. She grew up in Ohio and moved to Paris in 1920."
    detector = Recorder()
    events = stream(Scripted(rag=answer, rag_chunks=tokens(answer)), decline_detector=detector)
    assert _rag_text(events) == answer
    pieces = [e for e in events if isinstance(e, sr.flow.TokenEvent)]
    assert len(pieces) > 2  # the rest of the answer streams after the first sentence
    assert pieces[0].text.startswith("She was born in 1901.")
    assert events[-1].result.route is sr.Route.RAG  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [_stream, _astream], ids=["drive", "adrive"])
def test_a_decline_it_finds_after_a_shown_sentence_is_retracted(stream: Any) -> None:
    def anywhere(text: str, question: str | None) -> bool:
        return "keine angaben" in text.lower()

    text = "Sie war Lehrerin. Keine Angaben zum Geburtsjahr."
    events = stream(Scripted(rag=text, rag_chunks=tokens(text)), decline_detector=anywhere)
    assert _rag_text(events).startswith("Sie war Lehrerin.")  # the first sentence read as answer
    routes = [e for e in events if isinstance(e, sr.flow.RouteEvent)]
    assert routes[-1] == sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=True)
    assert events[-1].result.answer == "In 1901."  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [_stream, _astream], ids=["drive", "adrive"])
def test_a_detector_failing_mid_stream_is_raised(stream: Any) -> None:
    def broken(text: str, question: str | None) -> bool:
        raise RuntimeError("model file missing")

    text = "She was born in 1901. She grew up in Ohio."
    with pytest.raises(sr.ConfigurationError, match="broken raised RuntimeError"):
        stream(Scripted(rag=text, rag_chunks=tokens(text)), decline_detector=broken)


def test_without_a_detector_the_streamed_give_up_is_served() -> None:
    events = _stream(Scripted(rag=GERMAN, rag_chunks=tokens(GERMAN)))
    assert _rag_text(events) == GERMAN  # the rules read it as an answer
    assert events[-1].result.route is sr.Route.RAG  # type: ignore[union-attr]


def test_the_sniffer_holds_for_the_detector_until_a_sentence_ends() -> None:
    sniffer = sr.flow.SentinelSniffer(detector=Recorder())
    shown = "".join(sniffer.feed(t) for t in tokens("Keine Angaben zu ihrem Geburtsjahr"))
    assert shown == "" and not sniffer.released  # no sentence end yet: nothing judged
    assert sniffer.feed(". Nur ihre Laufbahn.") == "" and not sniffer.released
    answer = sr.flow.SentinelSniffer(detector=Recorder())
    assert "".join(answer.feed(t) for t in tokens("In 1901. Then Paris.")) == "In 1901. Then Paris."


# -- eval ------------------------------------------------------------------------------------


def test_eval_scores_a_detected_decline_as_a_correct_abstention() -> None:
    assert not declined(GERMAN)
    assert declined(GERMAN, detector=Recorder())
    assert score_answer(GERMAN, [], unanswerable=True, detector=Recorder()) == 1.0
    assert score_answer(GERMAN, [], unanswerable=True) == 0.0


# -- DeclinePattern --------------------------------------------------------------------------


def test_a_pattern_detector_searches_case_insensitively() -> None:
    german = sr.DeclinePattern(r"^(keine angaben|dazu steht nichts)")
    assert german("KEINE ANGABEN.", None) and german("Dazu steht nichts im Text.", "q")
    assert not german("Sie hat keine Angaben gemacht.", None)  # anchored: not at the start
    verdict = sr.parse_verdict("Keine Angaben.", detector=german)
    assert (
        verdict.declined
        and verdict.matched == "DeclinePattern('^(keine angaben|dazu steht nichts)')"
    )
    assert sr.RouteConfig(decline_detector=german).decline_detector == german
    import re

    exact = sr.DeclinePattern(re.compile("N\\.V\\."))  # a compiled pattern is used as it is
    assert exact("N.V.", None) and not exact("n.v.", None)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", "non-empty regular expression"),
        ("   ", "non-empty regular expression"),
        (None, "non-empty regular expression"),
        ("(unclosed", "not a valid regular expression"),
        ("x*", "matches the empty string"),
        ("^", "matches the empty string"),
    ],
)
def test_a_bad_pattern_is_refused_with_what_is_wrong(bad: Any, message: str) -> None:
    with pytest.raises(sr.ConfigurationError, match=message):
        sr.DeclinePattern(bad)
