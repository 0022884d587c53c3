"""Holding streamed RAG text until the decline detector reads it as an answer (``hold_chars``).

A decline whose opening looks like an answer ("Her birth year is not mentioned in the passages.")
passes the opening check, so without a hold it is shown and then retracted. With
``RouteConfig(stream_hold_chars=N)`` the text is held until :func:`selfroute.parse_verdict` reads
the complete first sentence (or ``N`` characters with no decline in sight) as an answer.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import selfroute as sr
from benchmarks.stream_replay import tokens
from tests.unit.selfroute._scripted import Scripted
from tests.unit.selfroute.test_decline_grammar import (
    ADVERBS,
    AFTER,
    GRAMMAR,
    PARTICIPLES,
    objects,
    sources,
)

LATE = "Her birth year is not mentioned in the passages."
QUESTION = "When was she born?"


def _feed(text: str, **kw: Any) -> tuple[str, sr.flow.SentinelSniffer]:
    sniffer = sr.flow.SentinelSniffer(**kw)
    return "".join(sniffer.feed(t) for t in tokens(text)), sniffer


def test_without_a_hold_the_late_decline_is_shown() -> None:
    shown, sniffer = _feed(LATE)
    assert shown and sniffer.released  # the behaviour the hold exists to avoid


@pytest.mark.parametrize("hold", [40, 80, 200])
def test_with_a_hold_the_late_decline_is_never_shown(hold: int) -> None:
    shown, sniffer = _feed(LATE + " They only cover her career.", hold_chars=hold)
    assert shown == "" and not sniffer.released


def test_a_decline_seen_mid_sentence_waits_for_the_sentence_end_past_the_cap() -> None:
    text = "Her birth year is not mentioned anywhere in the long list of passages that were given."
    shown, _ = _feed(text + " Sorry.", hold_chars=30)
    assert shown == ""


def test_an_answer_is_released_when_its_first_sentence_ends() -> None:
    sniffer = sr.flow.SentinelSniffer(hold_chars=500)
    out = [sniffer.feed(t) for t in tokens("She was born in 1901. She grew up in Ohio.")]
    first = next(i for i, o in enumerate(out) if o)
    assert "".join(out[: first + 1]).startswith("She was born in 1901.")
    assert "".join(out).startswith("She was born in 1901. She grew up in")


def test_a_long_first_sentence_is_released_at_the_cap() -> None:
    text = "She was born in a small farmhouse on the edge of the county in the spring of 1901"
    sniffer = sr.flow.SentinelSniffer(hold_chars=30)
    received = 0
    for t in tokens(text):
        received += len(t)
        if sniffer.feed(t):
            break
    assert 30 <= received < 40


def test_markup_before_the_first_word_is_not_judged_a_decline() -> None:
    sniffer = sr.flow.SentinelSniffer(hold_chars=10)
    out = [sniffer.feed(t) for t in ["* ", "Paris", " is", " the", " capital", " of", " France"]]
    assert "".join(out).startswith("* Paris is the")  # released at the cap, not held as garbled


def test_a_hedged_decline_is_released_once_its_sentence_commits() -> None:
    text = "Her birth year is not mentioned, but she was born in 1901. More follows here."
    shown, _ = _feed(text, hold_chars=80)
    assert shown.startswith("Her birth year is not mentioned, but she was born in 1901.")


def test_the_question_reaches_the_detector(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []
    real = sr.parse_verdict

    def spy(text: str, **kw: Any) -> sr.Verdict:
        seen.append(kw.get("question"))
        return real(text, **kw)

    monkeypatch.setattr("selfroute._streaming.parse_verdict", spy)
    _feed("She was born in 1901. More.", hold_chars=80, question=QUESTION)
    assert seen and set(seen) == {QUESTION}


def test_strict_holds_only_for_the_sentinel() -> None:
    shown, _ = _feed(LATE + " More.", hold_chars=80, strict=True)
    assert shown.startswith(LATE)


def test_the_config_rejects_a_bad_hold() -> None:
    for bad in (-1, 1.5, True, "80"):
        with pytest.raises(sr.ConfigurationError, match="stream_hold_chars"):
            sr.RouteConfig(stream_hold_chars=bad)  # type: ignore[arg-type]


def _script() -> Scripted:
    return Scripted(rag=LATE, rag_chunks=tokens(LATE))


def _sync(**config: Any) -> list[sr.flow.FlowEvent]:
    return list(
        sr.flow.drive(
            sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config)), _script(), stream=True
        )
    )


def _async(**config: Any) -> list[sr.flow.FlowEvent]:
    async def collect() -> list[sr.flow.FlowEvent]:
        flow = sr.flow.self_route_flow(QUESTION, sr.RouteConfig(**config))
        return [e async for e in sr.flow.adrive(flow, _script(), stream=True)]

    return asyncio.run(collect())


@pytest.mark.parametrize("run", [_sync, _async], ids=["drive", "adrive"])
def test_both_drivers_hold_the_late_decline(run: Any) -> None:
    held = run(stream_hold_chars=80)
    assert not any(isinstance(e, sr.flow.TokenEvent) and e.stage is sr.Stage.RAG for e in held)
    routes = [e for e in held if isinstance(e, sr.flow.RouteEvent)]
    assert routes == [sr.flow.RouteEvent(sr.Route.LONG_CONTEXT, None, retracted=False)]
    assert held[-1].result.reason is sr.Reason.REFUSED  # type: ignore[union-attr]
    shown = run()  # the default: shown, then retracted
    assert any(isinstance(e, sr.flow.RouteEvent) and e.retracted for e in shown)


@pytest.mark.parametrize("run", [_sync, _async], ids=["drive", "adrive"])
def test_both_drivers_stream_an_answer_with_a_hold(run: Any) -> None:
    answer = "She was born in 1901. She grew up in Ohio and moved to Paris in 1920."

    def script() -> Scripted:
        return Scripted(rag=answer, rag_chunks=tokens(answer))

    events = (
        list(
            sr.flow.drive(
                sr.flow.self_route_flow(QUESTION, sr.RouteConfig(stream_hold_chars=80)),
                script(),
                stream=True,
            )
        )
        if run is _sync
        else asyncio.run(_collect(script()))
    )
    texts = [e.text for e in events if isinstance(e, sr.flow.TokenEvent)]
    assert len(texts) > 3 and "".join(texts) == answer  # streamed after the first sentence
    assert events[-1].result.route is sr.Route.RAG  # type: ignore[union-attr]


async def _collect(script: Scripted) -> list[sr.flow.FlowEvent]:
    flow = sr.flow.self_route_flow(QUESTION, sr.RouteConfig(stream_hold_chars=80))
    return [e async for e in sr.flow.adrive(flow, script, stream=True)]


@GRAMMAR
@given(
    obj=objects,
    aux=st.sampled_from(["is", "was", "has not been", "is not"]),
    adverb=st.sampled_from(ADVERBS),
    part=st.sampled_from(PARTICIPLES),
    src=sources,
    after=st.sampled_from(AFTER),
)
def test_a_passive_absence_is_never_shown_with_a_hold(
    obj: str, aux: str, adverb: str, part: str, src: str, after: str
) -> None:
    """ "X is not (explicitly) mentioned in <source>." opens like an answer; with a hold the
    detector reads the sentence first, so nothing of it is shown."""
    neg = "" if aux.endswith("not") or aux.endswith("been") else " not"
    text = f"{obj[0].upper()}{obj[1:]} {aux}{neg}{adverb} {part} in {src[0].lower()}{src[1:]}."
    text += after
    assert sr.parse_verdict(text).declined, text
    shown, _ = _feed(text, hold_chars=80)
    assert shown == "", (text, shown)
