"""Verdict parsing: did the model answer from the passages, or decline?

This module only *classifies* what the model wrote. Deciding the route is the flow's job
(:mod:`selfroute._flow`). Empty or garbled output is classified as such; the flow treats it as a
decline (fail safe to long context).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum

from selfroute._errors import ConfigurationError
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


_THINK_OPEN = re.compile(r"<(think|thinking|reasoning|reflection)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning|reflection)>", re.IGNORECASE)
_LABEL = re.compile(
    r"^\s*(?:\*\*|__)?\s*(?:final\s+answer|short\s+answer|answer|response|a)\s*(?:\*\*|__)?\s*[:：]"
    r"\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(r"(\*\*|__|`+|^#+\s*|^>\s*)", re.MULTILINE)
_QUOTES = "\"'“”‘’«»「」`"
_WORD = re.compile(r"[^\W_]")  # a letter or digit in any script


def strip_reasoning(text: str) -> tuple[str, bool]:
    """Remove ``<think>…</think>``-style blocks.

    Returns:
        The text without reasoning blocks, and whether an unterminated block swallowed the rest
        (a reasoning trace cut off before any answer).
    """
    parts: list[str] = []
    pos = 0
    while True:  # one pass: each block is searched for once, so long outputs stay linear
        opening = _THINK_OPEN.search(text, pos)
        if opening is None:
            parts.append(text[pos:])
            break
        parts.append(text[pos : opening.start()])
        close = re.compile(rf"</{opening.group(1)}>", re.IGNORECASE).search(text, opening.end())
        if close is None:
            return "".join(parts), True
        parts.append(" ")
        pos = close.end()
    out = "".join(parts)
    # Some servers strip the opening tag and leave only "...</think> answer".
    stray = _THINK_CLOSE.search(out)
    if stray is not None:
        out = " " + out[stray.end() :]
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


def _norm_lines(text: str) -> str:
    """Like :func:`_norm` but keeps line breaks (one per run of blank lines)."""
    text = text.replace("’", "'").replace("‘", "'").lower()
    text = re.sub(r"[^\S\n]+", " ", text)
    return re.sub(r" *\n[\s]*", "\n", text).strip()


def _norm(text: str) -> str:
    """Lower-case, unify apostrophes, collapse white space."""
    text = text.replace("’", "'").replace("‘", "'").lower()
    return re.sub(r"\s+", " ", text).strip()


# -- sentences ---------------------------------------------------------------------------------
# Sentence ends: terminal punctuation or a semicolon (plus closing quotes/brackets) followed by
# white space, or a line break. A period after a title ("Mrs.") or a mid-text initial ("K.") does
# not end a sentence.
_BREAK = re.compile(r"[.!?;]+[\"'”’)\]]*(?=\s)|\n")
_ABBREVIATION = re.compile(
    r"(?:\b(?i:mr|mrs|ms|dr|st|jr|sr|prof|vs|etc|e\.g|i\.e|fig|sec|vol|no|al|inc|ltd|co|gen|col|"
    r"capt|lt|sgt|rev|hon|mt|ca|cf|approx)|(?<![\w.])[A-HJ-Z])\.$"
)
_MAX_SENTENCES = 60
_MAX_SENTENCE_CHARS = 1000


def _sentences(text: str) -> list[str]:
    """Split ``text`` into sentences that contain at least one word character.

    Only the first ``_MAX_SENTENCES`` sentences and the last one are returned (a decline shows in
    the opening or the conclusion; this bounds the work on very long outputs).
    """
    out: list[str] = []
    start = 0
    last = ""
    for m in _BREAK.finditer(text):
        end = m.end()
        if m.group() != "\n":
            near = text[max(start, end - 12) : end].rstrip("\"'”’)]")
            # "Mrs." or an initial: not a sentence end -- except a leading option letter ("D. ...").
            if _ABBREVIATION.search(near) and not (
                start == 0 and re.fullmatch(r"\s*\(?[A-Ea-e][.)]", text[:end])
            ):
                continue
        piece = text[start : min(end, start + _MAX_SENTENCE_CHARS)]
        if _WORD.search(piece):
            if len(out) < _MAX_SENTENCES:
                out.append(piece.strip())
            else:
                last = piece.strip()
        start = end
    tail = text[start : start + _MAX_SENTENCE_CHARS]
    if _WORD.search(tail):
        last = tail.strip()
    if last:
        out.append(last)
    return out


# -- natural refusals -------------------------------------------------------------------------
# Each sentence of the output is classified:
#   R  declines the question ("The text does not mention ...", "I do not have enough context ...")
#   F  declines a *form* of answer, not the question ("I cannot reproduce copyrighted excerpts",
#      "As an AI I cannot read the book") -- what follows decides
#   Q  asks for more information or offers help ("Please provide ...", "Let me know ...")
#   P  an apology on its own ("I'm sorry.")
#   N  describes what the source covers instead ("The passage focuses on ...", "Perhaps ...")
#   C  anything else: content
# A leading R makes a refusal unless the next informative sentence hedges into an answer
# ("However, it can be inferred that ...") and nothing later declines again. A leading F is a
# refusal unless later content answers. Content first is an answer, unless the closing sentence
# concludes with a decline ("Therefore, I cannot determine ...").

_SRC_WORD = (
    r"(?:text|texts|passage|passages|context|contexts|document|documents|article|articles|"
    r"excerpt|excerpts|chunk|chunks|information|source|sources|material|paper|story|stories|"
    r"book|novel|narrative|transcript|content|snippets?|sections?|summary|chapter|data|details)"
)
_SRC = (
    r"(?:provided |given |above |supplied |retrieved |available |following |these |this |the |"
    r"that |those |its |any )*" + _SRC_WORD
)
_SUBJECT = rf"(?:{_SRC}|it|they|the author|the authors|the writer|the paper's authors)"
_NEG = (
    r"(?:does not|doesn't|do not|don't|did not|didn't|does n't|is not|isn't|are not|aren't|"
    r"fails? to|never|cannot|can't)"
)
_COMM = (
    r"(?:mention|mentions|contain|contains|provide|provides|include|includes|say|says|specify|"
    r"specifies|state|states|discuss|discusses|give|gives|offer|offers|address|addresses|"
    r"indicate|indicates|describe|describes|reveal|reveals|explain|explains|refer|reference|"
    r"identify|tell|answer|clarify|list|name|report|detail|cover|disclose|establish|"
    r"make (?:it )?clear|have|has)"
)
_ADVERB = (
    r"(?:explicitly|directly|clearly|specifically|definitively|actually|really|exactly|precisely)"
)
_PARTICIPLE = (
    r"(?:mentioned|stated|specified|provided|given|named|revealed|described|discussed|indicated|"
    r"identified|explained|reported|listed|addressed|included|detailed|established|disclosed|"
    r"clarified|found|known|available|present|contained|said|covered|shown|recorded)"
)
_INABILITY = (
    r"(?:cannot|can't|can not|could not|couldn't|am unable to|'m unable to|am not able to|"
    r"'m not able to|was unable to|were unable to|are unable to|do not|don't|did not|didn't|"
    r"will not be able to|won't be able to|unable to)"
)

_STRONG_REFUSALS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # "I cannot determine ...", "we could not find ...", "I cannot conclusively state ..."
        rf"\b(?:i|we) {_INABILITY} (?:\w+ ){{0,3}}?(?:determine|answer|find|tell|say|state|"
        r"identify|know|infer|locate|confirm|extract|pinpoint|conclude|ascertain|verify|"
        r"be (?:sure|certain))\b",
        # "I do not have enough context / information / access ..."
        r"\b(?:i|we) (?:do not|don't|did not|didn't) have (?:\w+ ){0,3}?(?:context|information|"
        r"details|data|access|knowledge|answer)\b",
        r"\b(?:i|we) (?:do not|don't) know\b",
        r"\b(?:i'm|i am|we are|we're) not (?:sure|certain)\b",
        r"\b(?:not enough|insufficient|not sufficient|without enough|without sufficient|lack of|"
        r"lacks?|lacking) (?:\w+ ){0,2}?(?:information|context|details?|evidence|data)\b",
        r"\bnot (?:\w+ )?(?:sufficient|enough|adequate) to (?:\w+ ){0,2}?(?:state|determine|"
        r"answer|confirm|say|tell|identify|know|conclude)\b",
        # "The text does not mention ...", "the passages do not provide ..."
        rf"\b{_SUBJECT} {_NEG} (?:\w+ ){{0,2}}?{_COMM}\b",
        # "does not contain any information", "does not appear to include an answer"
        r"\b(?:does not|doesn't|do not|don't|did not|didn't)(?: appear to| seem to)? "
        r"(?:have|contain|include|provide|give|offer) (?:any |enough |sufficient |specific |"
        r"clear |much |a |an |the )?(?:\w+ )?(?:information|details?|mention|specifics|data|"
        r"answer|indication|description|explanation)\b",
        # "there is no mention / information / details ...", "there's no clear answer"
        r"\bthere(?: is| are| was| were|'s) (?:no|not any|not enough|little|insufficient) "
        r"(?:\w+ ){0,3}?(?:information|mention|details?|specifics|data|answer|reference|context|"
        r"explanation|description|record|indication of|evidence of|way to)\b",
        # "no name is given", "no details are provided"
        rf"\bno (?:\w+ ){{0,2}}?(?:is|are|was|were) (?:\w+ )?{_PARTICIPLE}\b",
        # "X is not mentioned.", "X is not specified in the passage", "X is not given, so ..."
        rf"\b(?:(?:is|are|was|were|has been|have been) (?:not|never)|isn't|aren't|wasn't|"
        rf"weren't|hasn't been|haven't been|'s not) (?:{_ADVERB} )?{_PARTICIPLE}"
        rf"(?= *(?:$|[,;:.!?)]| (?:anywhere|at all|here)\b| (?:{_ADVERB} )?(?:in|within|by|"
        rf"from|throughout|based on) (?:any of )?(?:\w+ ){{0,2}}?{_SRC_WORD}\b))",
        # "It is not mentioned who ...", "it's not specified how ..."
        rf"\b(?:it|this|that)(?: is|'s| was) (?:not|n't) (?:{_ADVERB} )?(?:{_PARTICIPLE}|clear)\b",
        # "it is not possible to determine", "it is unclear from the text", "difficult to say"
        r"\b(?:it|this|that)(?: is|'s| was| would be| remains) (?:not (?:\w+ )?(?:possible|clear)|"
        r"impossible|unclear|uncertain)(?: (?:to|from|based|in|whether|what|who|which|where|"
        r"when|why|how|if)\b| *[.!]?$)",
        r"\b(?:difficult|hard|impossible) to (?:\w+ ){0,2}?(?:say|determine|tell|pinpoint|know|"
        r"answer|identify|encapsulate|summari[sz]e|conclude|infer)\b",
        r"\b(?:cannot|can't|can not|could not|couldn't) be (?:\w+ )?(?:determined|answered|found|"
        r"inferred|known|identified|established|confirmed|ascertained|deduced)\b",
        r"\b(?:the )?(?:answer|question) (?:is|remains) (?:not (?:\w+ )?(?:available|provided|"
        r"given|known|clear|answerable|found)|unknown|unclear)\b",
        r"\b(?:the )?(?:answer|question) (?:cannot|can't|can not) be\b",
        r"\bno (?:clear|definitive|definite|direct|specific) answer\b",
        r"\bwithout (?:more|additional|further|any|the full|enough|sufficient|more specific) "
        r"(?:\w+ ){0,2}?(?:context|details?|information|text|excerpts?)\b",
        rf"\b(?:but|and|yet) (?:{_NEG}) (?:\w+ ){{0,2}}?{_COMM}\b",
        r"\b(?:would|will) (?:need|require) (?:more|additional|further) (?:\w+ ){0,2}?"
        r"(?:context|details?|information)\b",
        # terse declines as the whole sentence
        r"^(?:not (?:mentioned|specified|stated|provided|given|available|found|answerable|"
        r"discussed|known|applicable)|no answer|unknown|n/?a|none given|cannot be determined|"
        r"insufficient information|not enough information|no information|no idea)\b",
        r"^(?:unanswerable|not answerable)\b(?! +(?:questions?|queries|query|ones|cases|examples|"
        r"instances|samples|items|prompts)\b)",
    )
)
# "I cannot provide a summary / an answer ...": a decline unless it is about the form (copyright).
_WEAK_REFUSAL = re.compile(
    rf"\b(?:i|we) {_INABILITY} (?:\w+ ){{0,2}}?(?:provide|give|offer|make|choose|select|"
    r"summari[sz]e|answer|access|read|help)\b"
)
# "Unfortunately, Felicity does not state his age": any subject after "unfortunately".
_UNFORTUNATELY = re.compile(
    rf"^unfortunately,? (?:[\w'’.-]+ ){{1,6}}?(?:does not|doesn't|do not|don't|did not|"
    rf"didn't) (?:\w+ )?{_COMM}\b"
)
_FORM = re.compile(
    r"\bcopyright(?:ed)? (?:material|materials|content|text|texts|restrictions?|issues?|"
    r"infringement|concerns?|books?|works?|story|novel|lyrics|reasons|law)\b|"
    r"\b(?:due to|because of|avoid|avoiding|risk|risking|respect|respecting) (?:\w+ ){0,2}?"
    r"copyright|\bverbatim\b|\bas an ai\b|\bi am an ai\b|\bi'm an ai\b|\bai language model\b|"
    r"\bphysically read|"
    rf"\b{_INABILITY} (?:\w+ ){{0,3}}?(?:reproduce|quote|paraphrase|cite)\b|"
    rf"\b{_INABILITY} (?:\w+ ){{0,3}}?(?:provide|give|share|summari[sz]e|read|access|include|"
    r"offer|analy[sz]e) (?:\w+ ){0,4}?(?:excerpts?|quotes?|quotations?|passages?|summary|"
    r"summaries|books?|texts?|content|sources?|novels?|files?|documents?|links?|sections?)\b"
)
_REQUEST = re.compile(
    r"^(?:please|kindly|let me know|feel free|i(?:'d| would) be (?:happy|glad)|i hope|thank you|"
    r"thanks|perhaps rephrasing|could you|can you|would you)\b|\bif you (?:can |could |would )?"
    r"(?:provide|share|give|clarify|rephrase|specify|tell me)\b|\bplease (?:provide|share|"
    r"clarify|let|feel|rephrase|check)\b"
)
_APOLOGY = re.compile(r"^(?:i'm sorry|i am sorry|i apologi[sz]e|sorry|apologies|my apologies)\b")
_COVERS_INSTEAD = re.compile(
    rf"^(?:{_SRC}|it|they) (?:only |mainly |mostly |primarily |instead |rather )?"
    r"(?:focus(?:es)?|discuss(?:es)?|covers?|deals? with|talks? about|centers? on|is about|"
    r"are about|provides? (?:\w+ )?(?:details|information) about|describes? other|"
    r"mentions? other|ends?)\b|^(?:perhaps|maybe|possibly)\b"
)
_HEDGE = re.compile(
    r"^(?:however|but|although|though|still|that said|nonetheless|nevertheless|based on|"
    r"according to|judging by|from the context)\b|^(?:it|they|the (?:\w+ ){0,2}?\w+) "
    r"(?:only |simply |just |does |merely )?(?:says|said|states|mentions|notes|suggests|implies|"
    r"indicates|refers|reads|shows)\b|\b(?:it seems|it appears|seems to|appears to|"
    r"can be inferred|can infer|is suggested|is implied|best (?:inference|guess)|most likely|"
    r"likely|probably|in summary|in short|to answer)\b"
)
_CONCLUSION = re.compile(
    r"^(?:therefore|so|thus|hence|consequently|as a result|as such|in conclusion|overall)\b"
)
_LEAD = re.compile(
    r"^(?:(?:unfortunately|however|but|sorry|regrettably|so|therefore|thus|hence|also|overall|"
    r"in short|in summary|in conclusion|as an ai(?: language model| assistant)?)\s*[,:]?\s+|"
    r"(?:after (?:reading|reviewing|checking)|based (?:solely |only )?on|according to|"
    r"(?:in|from|within) (?:the|this|these)) [^,;:]{1,80}?[,:]\s+)+"
)


_WORD_RUN = re.compile(r"[^\W_]+")


def _lead_stripped(sentence: str) -> str:
    """``sentence`` without lead-ins such as "Unfortunately," or "Based on the passage,"."""
    return _LEAD.sub("", sentence, count=1)


def _refusal_match(sentence: str) -> str | None:
    """The phrase by which ``sentence`` declines the question, if any."""
    core = _lead_stripped(sentence)
    for pat in _STRONG_REFUSALS:
        m = pat.search(core)
        if m:
            return m.group(0)
    m = _UNFORTUNATELY.search(sentence)
    return m.group(0) if m else None


def _kind(sentence: str) -> str:
    """Classify one normalised sentence (see the table above)."""
    if _refusal_match(sentence):
        return "R"
    if _FORM.search(sentence):
        return "F"
    if _WEAK_REFUSAL.search(_lead_stripped(sentence)):
        return "R"
    if _REQUEST.search(sentence):
        return "Q"
    if _APOLOGY.search(sentence):
        return "P"
    core = _lead_stripped(sentence)
    if len(_WORD_RUN.findall(core)) == 0 or _COVERS_INSTEAD.search(core):
        return "N"
    return "C"


_BUT = re.compile(r"[,;:]\s*(?:but|however|though|yet)\b,?\s*|\s+but\s+(?=\w)")
# "He died in 1972, although the cause is not mentioned": a decline conceded after an answer.
_CONCESSION = re.compile(r",\s*(?:although|though|whereas|while|except that|even though)\b")


def _commits(sentence: str) -> bool:
    """Whether ``sentence`` is content of at least a few words."""
    return _kind(sentence) == "C" and len(_WORD_RUN.findall(_lead_stripped(sentence))) >= 3


def _hedges_into_answer(sentence: str) -> bool:
    """Whether ``sentence`` commits to an answer after a decline ("However, it seems ...")."""
    return _commits(sentence) and bool(_HEDGE.search(sentence))


def _refusal_verdict(cleaned: str) -> str | None:
    """Return the phrase that makes ``cleaned`` a natural-language decline, or ``None``."""
    sentences = [_norm(s) for s in _sentences(cleaned)]
    if not sentences:
        return None
    kinds = [_kind(s) for s in sentences]
    first = next((i for i, k in enumerate(kinds) if k != "P"), None)
    if first is None:  # only apologies
        return sentences[0]
    kind = kinds[first]
    head = sentences[first]
    if kind == "R":
        clauses = _CONCESSION.split(head, maxsplit=1)
        if len(clauses) == 2 and _commits(clauses[0]):
            kind = "C"
    if kind == "Q":
        return head
    if kind == "R":
        # "The text does not specify X, but it seems Y": the decline is a hedge before an answer.
        parts = _BUT.split(head, maxsplit=1)
        hedged = len(parts) == 2 and _kind(parts[0]) == "R" and _commits(parts[1])
        rest = first + 1
        if not hedged:
            nxt = next((i for i in range(first + 1, len(kinds)) if kinds[i] not in "NP"), None)
            if nxt is None or not _hedges_into_answer(sentences[nxt]):
                return _refusal_match(head) or head
            rest = nxt + 1
        later = next((sentences[i] for i in range(rest, len(kinds)) if kinds[i] == "R"), None)
        return None if later is None else (_refusal_match(later) or later)
    if kind == "F":
        # "I cannot reproduce copyrighted excerpts. However, ... X." answers; with no content, or a
        # decline later, it is a refusal.
        later = next((sentences[i] for i in range(first + 1, len(kinds)) if kinds[i] == "R"), None)
        if later is not None:
            return _refusal_match(later) or later
        parts = _BUT.split(head, maxsplit=1)
        if "C" in kinds[first + 1 :] or (len(parts) == 2 and _kind(parts[1]) == "C"):
            return None
        return head
    # Content first: an answer, unless the closing sentence concludes with a decline.
    last = sentences[-1]
    if len(sentences) > first + 1 and kinds[-1] == "R" and _CONCLUSION.search(last):
        return _refusal_match(last) or last
    return None


# -- the sentinel -------------------------------------------------------------------------------
_PREDICATE = re.compile(
    r"(?:\b(?:is|are|be|was|were|remains?|seems?|appears?|considered|deemed|marked|as)|[:=]|"
    r"\b(?:therefore|thus|so|hence))\s*[\"'“”‘’(\[]*\s*$"
)
# "unanswerable questions are ...": the sentinel as an attribute of a noun, in a sentence.
_ATTRIBUTIVE = re.compile(
    r" +(?:questions?|queries|query|ones|cases|examples|instances|samples|items|prompts) "
    r"+[a-z]+ +[a-z]+"
)
_NEGATED = re.compile(r"\b(?:not|n't|never|no longer)\s*[\"'“”‘’]*\s*$")


def _sentinel_verdict(cleaned: str, sentinel: str) -> str | None:
    """Return the sentinel when the text declines with it (not when it merely mentions it).

    The sentinel declines when it stands as the answer: alone, at the start of the output, at the
    start or end of a line or sentence ("... Unanswerable."), or as a predicate ("the answer is
    unanswerable because ...", "Answer: unanswerable"). It is only mentioned when used as an
    attribute mid-sentence ("handles unanswerable questions"), negated ("not unanswerable"), or as
    the label of a follow-up question after an answer ("Unanswerable: what is the size?").
    """
    text = _norm_lines(cleaned)
    first_word = _WORD.search(text)
    if first_word is None:
        return None
    soft = "\"'“”‘’*_`()[]{}<>"
    for m in _sentinel_re(sentinel).finditer(text):
        after = text[m.end() : m.end() + 400].lstrip(soft + " ")
        if _ATTRIBUTIVE.match(text, m.end()):
            continue  # "Unanswerable questions are ...": the word names a thing
        if m.start() <= first_word.start():
            return sentinel  # the sentinel opens the output
        window = text[max(0, m.start() - 120) : m.start()]
        if _NEGATED.search(window):
            continue  # "not unanswerable"
        before = window.rstrip(" \t" + soft)
        if before.endswith("\n"):
            rest_of_line = after[1:].split("\n", 1)[0].strip() if after.startswith(":") else ""
            if rest_of_line.endswith("?"):
                continue  # "Unanswerable: <a follow-up question>?" after an answer
            return sentinel  # the sentinel opens a line
        if re.search(r"[.!?]$", before):
            return sentinel  # ... or a sentence
        if not after or re.match(r"[.!?;,)\]]*\s*(?:$|\n)|[.!?]", after):
            return sentinel  # it ends the text, a line or a sentence
        if _PREDICATE.search(window):
            return sentinel  # "the answer is unanswerable because ...", "approach: unanswerable"
    return None


@functools.lru_cache(maxsize=32)
def _sentinel_re(sentinel: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(_norm(sentinel))}(?![\w-])", re.IGNORECASE)


def _check_sentinel(sentinel: object) -> None:
    if not isinstance(sentinel, str) or not sentinel.strip():
        raise ConfigurationError(f"sentinel must be a non-empty string, got {sentinel!r}")


def parse_verdict(
    text: str | None, *, sentinel: str = DEFAULT_SENTINEL, strict: bool = False
) -> Verdict:
    """Classify a RAG-step output.

    Args:
        text: What the model wrote (``None`` is treated as empty).
        sentinel: The decline word the prompt asked for (a non-empty string).
        strict: If true, only the sentinel counts as a decline; natural-language refusals are taken
            as answers. Empty output still counts as declined.

    Returns:
        A :class:`Verdict`. ``verdict.declined`` is true for the sentinel, natural refusals (unless
        ``strict``), empty and garbled output.

    Raises:
        ConfigurationError: ``sentinel`` is empty or not a string.

    The sentinel declines when it stands as the answer (alone, opening the output, opening or
    closing a line or sentence, or as a predicate: "the answer is unanswerable because ..."), not
    when it is merely mentioned ("handles unanswerable questions"). A natural refusal must *open*
    the answer ("The text does not mention ...", "I do not have enough context ...", "As an AI I
    cannot read the book. Please provide ...") or *conclude* it ("Therefore, I cannot determine
    ..."); an answer that merely contains such words elsewhere, or that hedges and then commits
    ("The text does not say, but it seems he is a writer."), is an answer. See ``docs/verdict.md``
    for the measured precision and recall on real model outputs.

    Examples:
        >>> parse_verdict("**Unanswerable.**").kind
        <VerdictKind.SENTINEL: 'sentinel'>
        >>> parse_verdict("The text does not mention his age.").declined
        True
        >>> parse_verdict("Answer: Paris").answer
        'Paris'
    """
    _check_sentinel(sentinel)
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
    "the answer is not",
    "the answer cannot",
    "the question cannot",
    "the question is",
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
    "i don't have",
    "i do not have",
    "as an ai",
    "i am an ai",
    "i'm an ai",
    "sorry",
    "unfortunately",
    "it is not",
    "it isn't",
    "it does not",
    "it doesn't",
    "it's not",
    "it is unclear",
    "it's unclear",
    "it cannot",
    "this is not",
    "this cannot",
    "unknown",
    "n/a",
    "cannot be determined",
)


# "The provided passages do not ...": a source, then a negation. Streamed text is held while it
# can still grow into this shape, and released as soon as a word leaves it ("The text was written").
_SOURCE_WORDS = frozenset(
    [
        "text",
        "texts",
        "passage",
        "passages",
        "context",
        "contexts",
        "document",
        "documents",
        "article",
        "articles",
        "excerpt",
        "excerpts",
        "chunk",
        "chunks",
        "information",
        "source",
        "sources",
        "material",
        "paper",
        "story",
        "book",
        "novel",
        "narrative",
        "transcript",
        "content",
        "snippet",
        "snippets",
        "section",
        "sections",
        "summary",
        "chapter",
        "details",
        "data",
        "author",
        "authors",
        "writer",
    ]
)
_SOURCE_MODIFIERS = frozenset(
    [
        "the",
        "these",
        "this",
        "that",
        "those",
        "provided",
        "given",
        "above",
        "retrieved",
        "supplied",
        "available",
        "following",
        "excerpted",
        "short",
        "full",
    ]
)
_SOURCE_ADVERBS = frozenset(
    ["explicitly", "clearly", "directly", "specifically", "actually", "even"]
)
#: Verbs opening a negation, and the word that must follow them (``None``: nothing needed).
_SOURCE_NEGATIONS: dict[str, str | None] = {
    **dict.fromkeys(["does", "do", "did", "is", "are", "was", "were", "can", "could"], "not"),
    **dict.fromkeys(["has", "have", "makes", "provides", "contains", "gives", "offers"], "no"),
    **dict.fromkeys(["doesn't", "don't", "didn't", "isn't", "aren't", "wasn't", "weren't"], None),
    **dict.fromkeys(["cannot", "can't", "never", "lacks", "fails", "hasn't", "haven't"], None),
}


def _could_be_source_negation(norm: str) -> bool:
    """Whether ``norm`` is, or could still grow into, "<source> <negation> ..."."""
    words = norm.split(" ")
    state = "start"  # start -> modifiers -> source -> verb -> (needs a word) -> done
    needed: str | None = None
    for i, word in enumerate(words):
        last = i == len(words) - 1

        def fits(options: Iterable[str], word: str = word, last: bool = last) -> bool:
            return any(o == word or (last and o.startswith(word)) for o in options)

        if state in ("start", "modifiers"):
            if fits(_SOURCE_WORDS) and not (last and fits(_SOURCE_MODIFIERS)):
                state = "source"
            elif fits(_SOURCE_MODIFIERS) or fits(_SOURCE_WORDS):
                state = "modifiers"
            else:
                return False
        elif state == "source":
            if fits(_SOURCE_ADVERBS):
                continue
            if not fits(_SOURCE_NEGATIONS):
                return False
            if last:
                return True
            needed = _SOURCE_NEGATIONS.get(word)
            state = "verb" if needed else "done"
        elif state == "verb":
            if not fits([needed or ""]):
                return False
            state = "done"
        else:  # "<source> does not ...": a decline is under way
            return True
    return True  # every word so far fits the shape


#: Lead-ins after which a decline may still follow ("Based on the passage, there is no ...").
_STREAM_LEAD_INS = (
    "based on ",
    "according to ",
    "after reading ",
    "after reviewing ",
    "in the provided ",
    "in the given ",
    "from the provided ",
    "from the given ",
)


def could_start_decline(
    prefix: str, *, sentinel: str = DEFAULT_SENTINEL, strict: bool = False
) -> bool:
    """Whether streamed text so far could still turn out to be a decline.

    Used by the streaming sniffer: text is held back while this is true, and released as soon as
    it is false. ``prefix`` is the cleaned text so far (reasoning blocks and labels removed).
    A lead-in such as "Based on the passage," is held until it ends; then what follows decides.
    """
    _check_sentinel(sentinel)
    norm = _norm(_clean(prefix)).lstrip(_QUOTES + "*_#>([ ")
    if not norm:
        return True
    sent = _norm(sentinel)
    candidates = [sent] if strict else [sent, *_DECLINE_OPENINGS]

    def opens(text: str) -> bool:
        if any(c.startswith(text) or text.startswith(c) for c in candidates):
            return True
        return not strict and _could_be_source_negation(text)

    if opens(norm):
        return True
    if strict:
        return False
    for lead in _STREAM_LEAD_INS:
        if lead.startswith(norm):
            return True  # the lead-in is still being written
        if norm.startswith(lead):
            if not re.search(r"[,:]", norm):
                return True  # "Based on the passage" -- the comma has not come yet
            core = _lead_stripped(norm)
            return core == "" or (core != norm and opens(core))
    return False
