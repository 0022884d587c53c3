"""Verdict parsing: did the model answer from the passages, or decline?

- :mod:`._vocabulary`: every word list the decline rules read;
- :mod:`._rules`: the decline rules, one row each (pattern, guards, trigger words, streaming
  openings, examples), and the trigger and openings derived from them;
- :mod:`._grammar`: the shapes' lookup and what a question asks (:class:`QuestionShape`);
- :mod:`._parse`: the parser (:func:`parse_verdict`) and the streaming hold's test
  (:func:`could_start_decline`).
"""

from __future__ import annotations

from selfroute._verdict._parse import (
    DeclineDetector,
    DeclinePattern,
    Verdict,
    VerdictKind,
    check_detector,
    complete_sentences,
    could_start_decline,
    detector_name,
    parse_verdict,
    says_nothing_yet,
    strip_reasoning,
)

__all__ = [
    "DeclineDetector",
    "DeclinePattern",
    "Verdict",
    "VerdictKind",
    "check_detector",
    "complete_sentences",
    "could_start_decline",
    "detector_name",
    "parse_verdict",
    "says_nothing_yet",
    "strip_reasoning",
]
