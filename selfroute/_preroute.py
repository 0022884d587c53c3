"""Pre-routing: skip the RAG attempt when it is predictably futile.

Failure-driven fallback pays for a RAG call that declines before paying for the long-context call.
Two cheap signals predict the decline before it happens: *global* questions that no handful of
chunks can answer ("summarise the whole document", "overall", "throughout"), and *weak retrieval
evidence* (the best chunk's score under a threshold). :class:`PreRoute` checks both; the flow sends
a flagged question straight to long context. The threshold is the user's to calibrate on their own
data (``selfroute calibrate`` reads ``selfroute eval`` output and writes it to the config).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from selfroute._errors import ConfigurationError
from selfroute._result import Passage, Reason

__all__ = ["DEFAULT_GLOBAL_PATTERNS", "PreRoute", "is_global_question"]

_UNIT = (
    r"(?:document|text|book|paper|story|novel|meeting|transcript|article|report|discussion|"
    r"conversation|narrative|chapter|call|interview|session|lecture|talk)"
)

#: Regular expressions (case-insensitive) of questions about the document as a whole. Checked
#: against QMSum's queries (``../shared/data/qmsum``): 36 of its 37 general queries match and none
#: of its 244 specific ones ("Summarize the discussion about X" is specific: it names a part).
DEFAULT_GLOBAL_PATTERNS: tuple[str, ...] = (
    # "summarize the (whole) meeting", "a summary of this paper", but not "summarize X about Y"
    rf"\bsummar(?:y|ies|i[sz]e[sd]?|i[sz]ing|i[sz]ation)\b(?:\s+(?:of|for))?\s+"
    rf"(?:the|this|that|our)?\s*(?:(?:whole|entire|full|complete)\s+)?{_UNIT}s?\s*[.?!]*\s*$",
    r"^\s*summar(?:y|i[sz]e)\s*[.?!]*\s*$",
    r"\boverall\b",
    r"\bthroughout\b",
    rf"\b(?:whole|entire|full) {_UNIT}\b",
    r"\bmain (?:idea|theme|topic|point|argument|contribution|finding|message|takeaway)s?\b",
    r"\b(?:key|major|central) (?:theme|idea|point|finding|takeaway|topic)s?\b",
    rf"\b(?:topics?|decisions?|conclusions?|takeaways?)\b[^.?!]*\b(?:in|of|from|during) "
    rf"(?:the|this) {_UNIT}\s*[.?!]*\s*$",
    r"\bgeneral discussion\b",
    rf"\bwhat (?:is|was) (?:the|this) {_UNIT} about\b",
    r"\bhow (?:does|did) (?:the|this) (?:story|plot|narrative|discussion|meeting) (?:end|unfold|"
    r"develop|progress|evolve)\b",
    r"\bover the course of\b",
    r"\bacross (?:the|all)\b",
    r"\bhow many times\b",
    r"\b(?:list|enumerate) all\b",
    r"\ball (?:the )?(?:chapters|sections|characters|participants|speakers|topics)\b",
    r"\bin general\b",
)


def is_global_question(question: str, patterns: Sequence[str] = DEFAULT_GLOBAL_PATTERNS) -> bool:
    """Whether ``question`` asks about the document as a whole.

    Examples:
        >>> is_global_question("Summarize the whole meeting.")
        True
        >>> is_global_question("Who found the gold-bug?")
        False
    """
    return any(re.search(p, question, re.IGNORECASE) for p in patterns)


@dataclass(frozen=True)
class PreRoute:
    """When to skip the RAG step and go straight to long context.

    Args:
        global_questions: Send questions matching ``global_patterns`` straight to long context.
        global_patterns: Case-insensitive regular expressions of global questions.
        min_top_score: Send questions whose best retrieved chunk scores under this straight to
            long context. Scores must be *relevance* (higher is better, as LangChain's
            ``relevance_score`` and LlamaIndex's ``NodeWithScore.score``); passages without a
            score never trigger it. ``None`` (default): off.

    Example:
        >>> PreRoute(min_top_score=0.3).check("Who?", [Passage("x", score=0.1)])
        <Reason.WEAK_RETRIEVAL: 'weak_retrieval'>
    """

    global_questions: bool = True
    global_patterns: tuple[str, ...] = field(default=DEFAULT_GLOBAL_PATTERNS)
    min_top_score: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.global_patterns, str):
            raise ConfigurationError("global_patterns must be a sequence of patterns, not a str")
        object.__setattr__(self, "global_patterns", tuple(self.global_patterns))
        for p in self.global_patterns:
            try:
                re.compile(p)
            except (re.error, TypeError) as exc:
                raise ConfigurationError(
                    f"pre-route global pattern {p!r} is not a valid regular expression: {exc}"
                ) from None
        score = self.min_top_score
        if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
            raise ConfigurationError(f"min_top_score must be a number or None, got {score!r}")

    @cached_property
    def _compiled(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p, re.IGNORECASE) for p in self.global_patterns)

    def top_score(self, passages: Sequence[Passage]) -> float | None:
        """The best score among ``passages`` (``None`` when none has one)."""
        scores = [p.score for p in passages if p.score is not None]
        return max(scores) if scores else None

    def check(self, question: str, passages: Sequence[Passage]) -> Reason | None:
        """The pre-routing reason for ``question`` with ``passages`` retrieved, or ``None`` to
        try the RAG step as usual."""
        if self.global_questions and any(p.search(question) for p in self._compiled):
            return Reason.GLOBAL_QUESTION
        if self.min_top_score is not None:
            top = self.top_score(passages)
            if top is not None and top < self.min_top_score:
                return Reason.WEAK_RETRIEVAL
        return None
