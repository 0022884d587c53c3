"""Stage 3, RAG-and-route: ask the model to answer from the chunks or decline, one k-ladder rung at a
time.

Each rung's output is classified (sentinel or structured verdict, :func:`classify_rag`); in
grounded mode the answer's quotes are checked against the chunks shown, and an unverified answer
counts as a decline (``ungrounded``), and an output cut short (``finish_reason`` ``length``,
``content_filter``, or a stream that ended without one) is no verdict at all (``truncated``). The
first rung that answers wins; a declining rung climbs to the next (larger) retrieval; a failed call
escalates (``rag_error``, with a warning on the ``selfroute`` logger) unless ``on_rag_error`` is
``raise``; a provider's rejection of the request (:class:`~selfroute.ModelConfigurationError`)
always raises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from selfroute._errors import ModelOutputError
from selfroute._faults import TRUNCATING
from selfroute._flow._config import OnError, RouteConfig
from selfroute._flow._state import (
    CALLER_ERRORS,
    FlowState,
    Steps,
    expect_generation,
    failed_step,
    record_step,
    warn_escalation,
)
from selfroute._flow._steps import Generate, Generation, StructuredRequest
from selfroute._grounding import Grounding, GroundingSource, check_grounding, split_quotes
from selfroute._redact import redact_exception
from selfroute._result import Passage, Reason, Stage
from selfroute._structured import VerdictMode, parse_structured_verdict, verdict_schema
from selfroute._tokens import count_in_prompt
from selfroute._verdict import Verdict, VerdictKind, parse_verdict

__all__ = ["RagVerdict", "classify_rag", "rag_ladder", "rag_rung", "rag_step"]

_REASON_BY_KIND = {
    VerdictKind.SENTINEL: Reason.DECLINED,
    VerdictKind.REFUSAL: Reason.REFUSED,
    VerdictKind.EMPTY: Reason.EMPTY_OUTPUT,
    VerdictKind.GARBLED: Reason.EMPTY_OUTPUT,
}


@dataclass(frozen=True)
class RagVerdict:
    """What one RAG rung concluded.

    Attributes:
        answered: The model answered (and, in grounded mode, its quotes were found).
        text: The answer text (or the decline's text).
        verdict: The parsed verdict.
        reason: Why it did not answer (``None`` when it did).
        grounding: The grounding check (grounded mode).
        structured: The verdict came as structured output.
    """

    answered: bool
    text: str
    verdict: Verdict
    reason: Reason | None = None
    grounding: Grounding | None = None
    structured: bool = False


def rag_ladder(state: FlowState) -> Steps[FlowState]:
    """Climb the k-ladder (``k``, then each ``k_ladder`` rung) while the RAG step declines.

    A rung that would show no more chunks than the one before is skipped (the retriever has
    nothing more). Stops at the first answer or at a failed call.

    Returns:
        The state with every rung's step recorded and ``reason`` ``answered`` or why the RAG step
        did not answer.
    """
    shown = 0
    for rung in state.config.rungs:
        if rung > state.config.k and len(state.ranked[:rung]) <= shown:
            break  # the retriever has nothing more to show: another rung would repeat
        state = yield from rag_rung(state, state.ranked[:rung])
        shown = len(state.passages)
        if state.reason in (Reason.ANSWERED, Reason.RAG_ERROR, Reason.TRUNCATED):
            break  # a cut-short output would be cut again with more chunks
    return state


def rag_step(question: str, passages: Sequence[Passage], cfg: RouteConfig) -> Generate:
    """The RAG step for ``passages`` (with its structured form unless ``verdict="sentinel"``)."""
    prompts = cfg.prompts
    texts = [p.text for p in passages]
    structured = None
    if cfg.verdict is not VerdictMode.SENTINEL:
        structured = StructuredRequest(
            prompt=prompts.structured_rag_prompt(question, texts, grounded=cfg.grounded),
            schema=verdict_schema(grounded=cfg.grounded),
            required=cfg.verdict is VerdictMode.STRUCTURED,
        )
    return Generate(
        Stage.RAG,
        prompts.rag_prompt(question, texts, grounded=cfg.grounded),
        question,
        prompts.sentinel,
        cfg.strict,
        structured=structured,
        grounded=cfg.grounded,
        k=len(passages),
        hold_chars=cfg.stream_hold_chars,
        detector=cfg.decline_detector,
    )


def rag_rung(state: FlowState, passages: tuple[Passage, ...]) -> Steps[FlowState]:
    """One RAG call on ``passages``, classified and recorded.

    Returns:
        The state showing ``passages``, with the call's step recorded and ``reason`` set
        (``answered``, a decline reason, or ``rag_error``).

    Raises:
        ModelOutputError: The call failed and ``on_rag_error`` is ``raise``, or the handler
            answered with something other than a :class:`~selfroute.Generation`.
    """
    cfg = state.config
    step = replace(rag_step(state.question, passages, cfg), timeout_s=state.bound())
    state = state.evolve(passages=passages)
    try:
        answer = yield step
    except CALLER_ERRORS:
        raise
    except Exception as exc:  # includes a ModelOutputError raised by the adapter
        state.check_time(exc, ModelOutputError, "the RAG-step model call")
        if cfg.on_rag_error is OnError.RAISE:
            if isinstance(exc, ModelOutputError):
                raise
            raise ModelOutputError(
                f"RAG-step model call failed: {redact_exception(exc)}", question=state.question
            ) from exc
        failed = failed_step(Stage.RAG, exc, step.prompt, state.counter, k=len(passages))
        warn_escalation("the RAG-step model call failed", exc)
        return state.with_step(
            failed, error=f"rag: {redact_exception(exc)}", reason=Reason.RAG_ERROR
        )
    gen = expect_generation(answer)
    outcome = classify_rag(gen, step, passages, cfg)
    if gen.finish_reason in TRUNCATING:  # cut short: whatever it says is not a verdict
        outcome = replace(outcome, answered=False, reason=Reason.TRUNCATED)
    used = step.structured.prompt if outcome.structured and step.structured else step.prompt
    record = record_step(
        Stage.RAG,
        gen,
        used,
        state.counter,
        # the local count beside the provider's (see _counterfactual); the passages recur across
        # calls, so they are tokenised once each (exact, see count_in_prompt)
        count_in_prompt(state.counter, used, *(p.text.strip() for p in passages)),
        verdict=outcome.verdict.kind.value,
        k=len(passages),
        structured=outcome.structured,
        grounded=outcome.grounding.grounded if outcome.grounding else None,
    )
    return state.with_step(
        record,
        rag_answer=outcome.text,
        reason=Reason.ANSWERED if outcome.answered else outcome.reason,
        grounding=outcome.grounding,
    )


def classify_rag(
    gen: Generation, step: Generate, passages: Sequence[Passage], cfg: RouteConfig
) -> RagVerdict:
    """Classify one RAG-step output (structured or text) and, in grounded mode, check its quotes
    against ``passages``."""
    sentinel = cfg.prompts.sentinel
    question = step.question  # "No, ..." answers a yes/no question; see parse_verdict
    detector = cfg.decline_detector
    quotes: list[str] = []
    structured = gen.structured is not None or gen.structured_error is not None
    if gen.structured is None and gen.structured_error is not None:
        verdict = parse_verdict(
            gen.text or "",
            sentinel=sentinel,
            strict=cfg.strict,
            question=question,
            detector=detector,
        )
        if verdict.answered:  # not the object asked for: garbled, fail safe
            verdict = Verdict(kind=VerdictKind.GARBLED, answer=verdict.answer)
    elif gen.structured is not None:
        verdict = parse_structured_verdict(
            gen.structured,
            sentinel=sentinel,
            strict=cfg.strict,
            question=question,
            detector=detector,
        )
        raw_quotes = gen.structured.get("quotes")
        if isinstance(raw_quotes, (list, tuple)):
            quotes = [q for q in raw_quotes if isinstance(q, str)]
    else:
        text = gen.text or ""
        if step.grounded:
            body, quotes = split_quotes(text)
            verdict = parse_verdict(
                body, sentinel=sentinel, strict=cfg.strict, question=question, detector=detector
            )
        else:
            verdict = parse_verdict(
                text, sentinel=sentinel, strict=cfg.strict, question=question, detector=detector
            )
    if not verdict.answered:
        reason = _REASON_BY_KIND[verdict.kind]
        return RagVerdict(False, verdict.answer, verdict, reason, structured=structured)
    if not step.grounded:
        return RagVerdict(True, verdict.answer, verdict, structured=structured)
    sources = [GroundingSource(p.text, p.doc_id) for p in passages]
    grounding = check_grounding(verdict.answer, quotes, sources)
    if not grounding.grounded:
        return RagVerdict(
            False, verdict.answer, verdict, Reason.UNGROUNDED, grounding, structured=structured
        )
    return RagVerdict(True, verdict.answer, verdict, None, grounding, structured=structured)
