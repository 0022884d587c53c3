"""Verdict parsing: did the model answer from the passages, or decline?

This module only *classifies* what the model wrote. Deciding the route is the flow's job
(:mod:`selfroute._flow`). Empty or garbled output is classified as such; the flow treats it as a
decline (fail safe to long context).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from selfroute._prompts import DEFAULT_SENTINEL

__all__ = ["Verdict", "VerdictKind", "could_start_decline", "parse_verdict", "strip_reasoning"]


class VerdictKind(str, Enum):
    """What the RAG-step output was."""

    ANSWERED = "answered"
    """The model answered from the passages."""
    SENTINEL = "sentinel"
    """The model wrote the sentinel (possibly with punctuation, markdown or an explanation)."""
    REFUSAL = "refusal"
    """The model declined in its own words ("The text does not mention ...")."""
    EMPTY = "empty"
    """Nothing (or only whitespace / a reasoning block) was written."""
    GARBLED = "garbled"
    """Output with no usable text (only punctuation, an unterminated reasoning block)."""


@dataclass(frozen=True)
class Verdict:
    """The classification of one RAG-step output.

    Attributes:
        kind: What the model wrote.
        answer: The cleaned answer (reasoning blocks, ``Answer:`` labels, markdown and wrapping
            quotes removed). For declines, the cleaned text of the decline.
        matched: The phrase that made this a decline, if any.
    """

    kind: VerdictKind
    answer: str
    matched: str | None = None

    @property
    def declined(self) -> bool:
        """True unless the model answered. Empty and garbled outputs count as declined."""
        return self.kind is not VerdictKind.ANSWERED

    @property
    def answered(self) -> bool:
        """True when the model answered from the passages."""
        return self.kind is VerdictKind.ANSWERED


_THINK_BLOCK = re.compile(
    r"<(think|thinking|reasoning|reflection)>.*?</\1>", re.IGNORECASE | re.DOTALL
)
_THINK_OPEN = re.compile(r"<(think|thinking|reasoning|reflection)>", re.IGNORECASE)
_THINK_CLOSE_ONLY = re.compile(r"^.*?</(think|thinking|reasoning|reflection)>", re.I | re.DOTALL)
_LABEL = re.compile(
    r"^\s*(?:\*\*|__)?\s*(?:final\s+answer|short\s+answer|answer|response|a)\s*(?:\*\*|__)?\s*[:：]"
    r"\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(r"(\*\*|__|`+|^#+\s*|^>\s*)", re.MULTILINE)
_QUOTES = "\"'“”‘’«»「」`"
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\uffff]")


def strip_reasoning(text: str) -> tuple[str, bool]:
    """Remove ``<think>…</think>``-style blocks.

    Returns:
        The text without reasoning blocks, and whether an unterminated block swallowed the rest
        (a reasoning trace cut off before any answer).
    """
    out = _THINK_BLOCK.sub(" ", text)
    # Some servers strip the opening tag and leave only "...</think> answer".
    if re.search(r"</(think|thinking|reasoning|reflection)>", out, re.I) and not _THINK_OPEN.search(
        out
    ):
        out = _THINK_CLOSE_ONLY.sub(" ", out, count=1)
    m = _THINK_OPEN.search(out)
    if m:
        return out[: m.start()], True
    return out, False


def _clean(text: str) -> str:
    text = text.strip()
    # Repeatedly strip labels, markdown and wrapping quotes.
    for _ in range(3):
        before = text
        text = _LABEL.sub("", text).strip()
        text = _MARKDOWN.sub("", text).strip()
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
            text = text[1:-1].strip()
        if text == before:
            break
    return text


def _norm(text: str) -> str:
    """Lower-case, unify apostrophes, collapse white space."""
    text = text.replace("’", "'").replace("‘", "'").lower()
    return re.sub(r"\s+", " ", text).strip()


# -- natural refusals -------------------------------------------------------------------------
_SRC = (
    r"(?:provided |given |above |supplied |retrieved |available |following |these |this |the )*"
    r"(?:text|texts|passage|passages|context|contexts|document|documents|article|articles|"
    r"excerpt|excerpts|chunk|chunks|information|source|sources|material|paper|story|book|"
    r"transcript|content|snippets?|sections?)"
)
_NEG = r"(?:does not|doesn't|do not|don't|did not|didn't|does n't|is not|isn't|are not|aren't|fails? to|never)"
_VERB = (
    r"(?:mention|mentions|contain|contains|provide|provides|include|includes|say|says|specify|"
    r"specifies|state|states|discuss|discusses|give|gives|offer|offers|address|addresses|"
    r"indicate|indicates|describe|describes|reveal|reveals|explain|explains|refer|identify|"
    r"tell|answer|clarify|list|name|report|detail|cover|explicitly|directly|clearly|specifically|"
    r"have|has|seem|appear)"
)
_REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        # "The text does not mention ...", "The passages do not provide ..."
        rf"^(?:unfortunately,? |sorry,? |however,? |based on (?:the )?{_SRC},? )?"
        rf"(?:the |these |this |provided |given )*{_SRC} {_NEG} (?:\w+ ){{0,2}}?{_VERB}\b",
        # "There is no (information|mention) ...", "No information is provided ..."
        r"^(?:unfortunately,? |sorry,? )?(?:there is|there's|there are) (?:no|not enough|"
        r"insufficient) (?:\w+ ){0,3}?(?:information|mention|indication|details?|data|evidence|"
        r"answer|reference|context)\b",
        r"^(?:unfortunately,? )?(?:no|not enough|insufficient) (?:specific |relevant |such |"
        r"explicit )?(?:information|mention|details?|evidence|answer)\b.{0,80}?"
        r"\b(?:provided|given|available|mentioned|found|in the|about|to (?:answer|determine))",
        # "I cannot determine ... from the passage", "I'm sorry, but I can't answer"
        r"^(?:i'm sorry|i am sorry|sorry|unfortunately|apologies)?,?\s*(?:but )?(?:i|we) "
        r"(?:cannot|can't|can not|could not|couldn't|am unable to|'m unable to|am not able to|"
        r"'m not able to|was unable to|do not|don't) (?:\w+ ){0,2}?(?:determine|answer|find|"
        r"tell|say|provide|identify|know|infer|locate|confirm|see|extract|give|access)\b",
        r"^(?:i'm sorry|i am sorry|i apologi[sz]e)\b",
        # "It is not (mentioned|specified|possible to determine) ..."
        r"^(?:it|this) (?:is|was) (?:not|n't) (?:\w+ ){0,1}?(?:mentioned|specified|stated|"
        r"provided|given|clear|possible to (?:determine|answer|tell|know|say)|known|discussed|"
        r"indicated|explained|described)\b",
        r"^(?:it|this) (?:cannot|can't|can not) be (?:determined|answered|found|inferred|known)\b",
        r"^(?:the )?(?:answer|question) (?:is|cannot|can't|can not) (?:not )?(?:be )?"
        r"(?:answerable|answered|determined|found|available|provided|given|known)\b",
        r"^(?:not (?:mentioned|specified|stated|provided|given|available|found|enough information|"
        r"answerable|discussed|known)|no answer|unknown|n/a|none given|cannot be determined|"
        r"insufficient information|not enough information|i don't know|i do not know)\b",
    )
)

# "X is not mentioned in the provided chunks" -- the negation comes after a subject.
_TRAILING_REFUSAL = re.compile(
    rf"\b(?:is|are|was|were) (?:not|n't|never) (?:\w+ ){{0,2}}?(?:mentioned|specified|stated|"
    rf"provided|given|discussed|described|found|included|addressed|identified|explained|"
    rf"named|listed|reported|revealed|indicated|available|present|contained)"
    rf"(?: (?:anywhere|explicitly|directly|specifically))? (?:in|within|by|from) (?:any of )?{_SRC}",
    re.IGNORECASE,
)
_TRAILING_CANNOT = re.compile(
    rf"\b(?:cannot|can't|can not|could not) be (?:determined|answered|found|inferred|identified|"
    rf"established)(?: \w+){{0,3}}? (?:from|in|based on|with) (?:the )?(?:\w+ ){{0,2}}?{_SRC}",
    re.IGNORECASE,
)

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _first_sentence(text: str) -> str:
    parts = _SENTENCE_END.split(text.strip(), maxsplit=1)
    return parts[0] if parts else ""


def _sentinel_re(sentinel: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(_norm(sentinel))}(?![\w-])", re.IGNORECASE)


def _strip_punct(text: str) -> str:
    return text.strip().strip(_QUOTES + ".,;:!?()[]{}*_-–—  \t\n").strip()


def _sentinel_verdict(cleaned: str, sentinel: str) -> str | None:
    """Return the matched sentinel phrase when the text declines with the sentinel."""
    norm = _norm(cleaned)
    sent = _norm(sentinel)
    bare = _strip_punct(norm)
    pat = _sentinel_re(sentinel)
    if bare == sent:
        return sentinel
    # "Unanswerable. The passage does not ..." / "Unanswerable based on the article" /
    # "unanswerable - the text only covers ...": the sentinel opens the answer.
    if re.match(rf"^[\W_]*{re.escape(sent)}(?![\w-])", norm):
        return sentinel
    # "The answer is unanswerable", "Answer: unanswerable" after other lines, "Therefore,
    # unanswerable." -- the sentinel is the last thing said.
    lines = [ln for ln in (_clean(x) for x in cleaned.splitlines()) if _strip_punct(ln)]
    if lines:
        last = _norm(lines[-1])
        last_bare = _strip_punct(last)
        if last_bare == sent:
            return sentinel
        last_sentences = [s for s in _SENTENCE_END.split(last) if _strip_punct(s)]
        tail = _strip_punct(last_sentences[-1]) if last_sentences else ""
        if re.search(
            rf"(?:^|\b(?:answer|question|it) (?:is|is therefore|would be|remains)|"
            rf"\b(?:therefore|thus|so|hence|final answer)[,:]?)\s*[\"'“”]?{re.escape(sent)}[\"'”]?$",
            tail,
        ):
            return sentinel
        if tail.endswith(f": {sent}") or tail.endswith(f":{sent}"):
            return sentinel
    # "GhostVLAD approach : unanswerable" style one-liners.
    if len(norm) <= 200 and re.search(rf":\s*[\"'“]?{re.escape(sent)}[\"'”]?\W*$", norm):
        return sentinel
    if pat.search(norm) and len(bare.split()) <= 3:
        return sentinel
    return None


def _refusal_verdict(cleaned: str) -> str | None:
    norm = _norm(cleaned)
    first = _first_sentence(norm)
    for pat in _REFUSAL_PATTERNS:
        m = pat.search(first)
        if m:
            return m.group(0)
    m2 = _TRAILING_REFUSAL.search(first) or _TRAILING_CANNOT.search(first)
    if m2:
        return m2.group(0)
    return None


def parse_verdict(
    text: str | None, *, sentinel: str = DEFAULT_SENTINEL, strict: bool = False
) -> Verdict:
    """Classify a RAG-step output.

    Args:
        text: What the model wrote (``None`` is treated as empty).
        sentinel: The decline word the prompt asked for.
        strict: If true, only the sentinel counts as a decline; natural-language refusals are taken
            as answers. Empty output still counts as declined.

    Returns:
        A :class:`Verdict`. ``verdict.declined`` is true for the sentinel, natural refusals (unless
        ``strict``), empty and garbled output.

    Examples:
        >>> parse_verdict("**Unanswerable.**").kind
        <VerdictKind.SENTINEL: 'sentinel'>
        >>> parse_verdict("The text does not mention his age.").declined
        True
        >>> parse_verdict("Answer: Paris").answer
        'Paris'
    """
    if text is None:
        text = ""
    if not isinstance(text, str):
        text = str(text)
    body, cut_off = strip_reasoning(text)
    cleaned = _clean(body)
    if not cleaned:
        kind = VerdictKind.GARBLED if cut_off else VerdictKind.EMPTY
        return Verdict(kind=kind, answer="")
    if not _WORD.search(cleaned):
        return Verdict(kind=VerdictKind.GARBLED, answer=cleaned)
    matched = _sentinel_verdict(cleaned, sentinel)
    if matched is not None:
        return Verdict(kind=VerdictKind.SENTINEL, answer=cleaned, matched=matched)
    if not strict:
        phrase = _refusal_verdict(cleaned)
        if phrase is not None:
            return Verdict(kind=VerdictKind.REFUSAL, answer=cleaned, matched=phrase)
    return Verdict(kind=VerdictKind.ANSWERED, answer=cleaned)


# -- streaming support ------------------------------------------------------------------------
_DECLINE_OPENINGS = (
    "the text",
    "the texts",
    "the passage",
    "the passages",
    "the provided",
    "the given",
    "the context",
    "the document",
    "the documents",
    "the article",
    "the excerpt",
    "the retrieved",
    "the information",
    "the answer is not",
    "the answer cannot",
    "the question cannot",
    "the question is",
    "based on the",
    "there is no",
    "there's no",
    "there are no",
    "there is not",
    "no information",
    "no mention",
    "not enough",
    "not mentioned",
    "not specified",
    "not stated",
    "not provided",
    "not available",
    "not given",
    "insufficient",
    "i cannot",
    "i can't",
    "i can not",
    "i could not",
    "i couldn't",
    "i am unable",
    "i'm unable",
    "i am not able",
    "i'm not able",
    "i'm sorry",
    "i am sorry",
    "i apologize",
    "i apologise",
    "i don't know",
    "i do not know",
    "sorry",
    "unfortunately",
    "it is not",
    "it isn't",
    "it cannot",
    "this is not",
    "this cannot",
    "unknown",
    "n/a",
    "cannot be determined",
    "these passages",
    "this passage",
    "this text",
)


def could_start_decline(
    prefix: str, *, sentinel: str = DEFAULT_SENTINEL, strict: bool = False
) -> bool:
    """Whether streamed text so far could still turn out to be a decline.

    Used by the streaming sniffer: text is held back while this is true, and released as soon as
    it is false. ``prefix`` is the cleaned text so far (reasoning blocks and labels removed).
    """
    norm = _norm(_clean(prefix)).lstrip(_QUOTES + "*_#>([ ")
    if not norm:
        return True
    sent = _norm(sentinel)
    candidates = [sent] if strict else [sent, *_DECLINE_OPENINGS]
    return any(c.startswith(norm) or norm.startswith(c) for c in candidates)
