"""The RAG-and-route stage alone: ``selfroute._flow._rag``."""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._flow._rag import classify_rag, rag_ladder, rag_rung, rag_step
from tests.unit.selfroute.flow._stage import (
    QUESTION,
    TEXTS,
    gen,
    passages,
    retrieved,
    run_stage,
    state,
)


def test_one_answering_rung_is_recorded_and_wins() -> None:
    st = retrieved(state(k=2), passages(3))
    steps, out = run_stage(rag_ladder(st), [gen("Mara Holt.", sr.Usage.of(40, 3))])
    (step,) = steps
    assert step == rag_step(QUESTION, st.passages, st.config)
    assert (step.stage, step.k, step.sentinel) == (sr.Stage.RAG, 2, "unanswerable")
    assert out.reason is sr.Reason.ANSWERED and out.rag_answer == "Mara Holt."
    (record,) = out.steps
    assert (record.verdict, record.k, record.usage.input_tokens) == ("answered", 2, 40)


def test_declining_rungs_climb_the_ladder_until_one_answers() -> None:
    st = retrieved(state(k=1, k_ladder=(2, 3)), passages(3))
    steps, out = run_stage(rag_ladder(st), [gen("unanswerable"), gen("Mara Holt.")])
    assert [s.k for s in steps] == [1, 2]
    assert out.passages == passages(3)[:2] and out.reason is sr.Reason.ANSWERED
    assert [r.verdict for r in out.steps] == ["sentinel", "answered"]


def test_a_rung_with_nothing_new_to_show_is_skipped() -> None:
    st = retrieved(state(k=2, k_ladder=(5, 9)), passages(2))
    steps, out = run_stage(rag_ladder(st), [gen("unanswerable")])
    assert len(steps) == 1 and out.reason is sr.Reason.DECLINED
    assert out.rag_answer == "unanswerable"


def test_a_failed_call_escalates_and_stops_the_ladder() -> None:
    st = retrieved(state(k=1, k_ladder=(2,)), passages(3))
    steps, out = run_stage(rag_ladder(st), [TimeoutError("read timed out")])
    assert len(steps) == 1 and out.reason is sr.Reason.RAG_ERROR
    assert out.error is not None and out.error.startswith("rag:")
    (record,) = out.steps
    assert (
        record.usage == sr.Usage.zero() and record.k == 1 and "read timed out" in str(record.error)
    )


def test_raise_mode_and_wrong_answers_raise_model_output_error() -> None:
    st = retrieved(state(on_rag_error="raise"), passages(2))
    with pytest.raises(sr.ModelOutputError, match="RAG-step model call failed"):
        run_stage(rag_rung(st, st.passages), [OSError("boom")])
    with pytest.raises(sr.ModelOutputError, match="expected Generation"):
        run_stage(rag_rung(retrieved(state(), passages(2)), passages(2)), ["text"])
    with pytest.raises(sr.ConfigurationError):  # the caller's to fix, even in escalate mode
        run_stage(
            rag_rung(retrieved(state(), passages(2)), passages(2)), [sr.ConfigurationError("x")]
        )


def test_structured_verdicts_and_their_failures() -> None:
    cfg = state(verdict="auto").config
    step = rag_step(QUESTION, passages(2), cfg)
    assert step.structured is not None and not step.structured.required
    answered = classify_rag(
        gen("", structured={"answerable": True, "answer": "Mara Holt"}), step, passages(2), cfg
    )
    assert answered.answered and answered.structured and answered.text == "Mara Holt"
    garbled = classify_rag(gen("Mara Holt", structured_error="no JSON"), step, passages(2), cfg)
    assert not garbled.answered and garbled.reason is sr.Reason.EMPTY_OUTPUT
    declined = classify_rag(gen("unanswerable", structured_error="no JSON"), step, passages(2), cfg)
    assert declined.reason is sr.Reason.DECLINED


def test_grounded_answers_are_checked_against_the_chunks_shown() -> None:
    cfg = state(grounded=True).config
    shown = passages(2)
    step = rag_step(QUESTION, shown, cfg)
    good = classify_rag(gen(f'Mara Holt.\nQuote: "{TEXTS[0]}"'), step, shown, cfg)
    assert good.answered and good.grounding is not None and good.grounding.grounded
    bad = classify_rag(gen('Mara Holt.\nQuote: "the keeper was a man named Tom"'), step, shown, cfg)
    assert not bad.answered and bad.reason is sr.Reason.UNGROUNDED


@pytest.mark.parametrize(
    ("question", "answer", "answered"),
    [
        # The flow passes the question to the verdict parser (issue #15): "No, ..." answers a
        # yes/no question, and a partial answer that declares the asked-for item absent escalates.
        ("Did the keeper use a lamp?", "No, the passages do not mention a lamp.", True),
        ("What did the keeper use?", "No, the passages do not mention a lamp.", False),
        ("How did he die?", "He died in 1972. The passages do not mention the cause.", False),
        ("When did he die?", "He died in 1972. The passages do not mention the cause.", True),
    ],
)
def test_the_question_reaches_the_verdict(question: str, answer: str, answered: bool) -> None:
    cfg = state().config
    step = rag_step(question, passages(2), cfg)
    assert classify_rag(gen(answer), step, passages(2), cfg).answered is answered
    structured = classify_rag(
        gen("", structured={"answerable": True, "answer": answer}), step, passages(2), cfg
    )
    assert structured.answered is answered
