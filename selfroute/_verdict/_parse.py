"""Verdict parsing: did the model answer from the passages, or decline?

This module only *classifies* what the model wrote. Deciding the route is the flow's job
(:mod:`selfroute._flow`). Empty or garbled output is classified as such; the flow treats it as a
decline (fail safe to long context).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum

from selfroute._errors import ConfigurationError, SelfRouteError
from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict._grammar import (
    COVERS_INSTEAD,
    FUNCTION_WORDS,
    NEGATED_INFO,
    NEGATED_VERB,
    POINTER,
    QuestionShape,
    content_stems,
    decline_shape,
)
from selfroute._verdict._rules import (
    ASKED_GUARDS,
    DECLINE_OPENINGS,
    TRIGGER,
    RuleKind,
    rule,
    rules,
)
from selfroute._verdict._vocabulary import (
    ADVERBS,
    ADVS,
    BASE,
    INSTRUMENT_HEADS,
    NEGATION,
    PAST,
    SOURCE_DETERMINERS,
    SOURCE_HEADS,
    SOURCE_MODIFIERS,
    THIRD,
)

__all__ = [
    "DeclineDetector",
    "DeclinePattern",
    "Verdict",
    "VerdictKind",
    "could_start_decline",
    "parse_verdict",
    "strip_reasoning",
]

DeclineDetector = Callable[[str, str | None], bool | None]
"""Your own decline detection, beside selfroute's rules: ``detector(text, question)``.

It is asked about each output the rules read as an answer. ``text`` is the output as it would be
served (reasoning blocks, ``Answer:`` labels, markdown and wrapping quotes removed; never empty),
``question`` the question when known. Return ``True`` when the output declines (it escalates),
``False`` or ``None`` when it does not (the answer stands). A detector adds declines and never
removes one; with ``strict=True`` the rules keep only the sentinel, so the sentinel and your
detector decide alone. Empty and garbled outputs never reach it: they always fail safe to long
context. It runs inline (on the event loop in async calls): keep it to CPU work.
"""


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
    r"^\s*(?:(?:\*\*|__)\s*)?(?:final\s+answer|short\s+answer|answer|response|a)\s*(?:(?:\*\*|__)\s*)?[:：]"
    r"\s*(?:(?:\*\*|__)\s*)?",
    re.IGNORECASE,
)
# The look-ahead names the first character of every alternative: the scan skips other text fast.
_MARKDOWN = re.compile(r"(?=[*_`#>])(\*\*|__|`+|^#+\s*|^>\s*)", re.MULTILINE)
_QUOTES = "\"'“”‘’«»「」`"
_OPEN_QUOTES = frozenset('"“«「')
_CLOSE_QUOTES = frozenset('"”»」')
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
    # ``str.split()`` splits on exactly the characters ``\s`` matches (``str.isspace``) and drops
    # them at both ends: the same result as a regex substitution and a strip, several times faster.
    return " ".join(text.replace("’", "'").replace("‘", "'").lower().split())


# -- sentences ---------------------------------------------------------------------------------
# Sentence ends: terminal punctuation or a semicolon (plus closing quotes/brackets) followed by
# white space, or a line break. A period after a title ("Mrs.") or a mid-text initial ("K.") does
# not end a sentence.
_BREAK = re.compile(r"(?=[.!?;\n])(?:[.!?;]+[\"'”’)\]]*(?=\s)|\n)")
_ABBREVIATION = re.compile(
    r"(?:\b(?i:mr|mrs|ms|dr|st|jr|sr|prof|vs|etc|e\.g|i\.e|fig|sec|vol|no|al|inc|ltd|co|gen|col|"
    r"capt|lt|sgt|rev|hon|mt|ca|cf|approx)|(?<![\w.])[A-HJ-Z])\.$"
)
_MAX_SENTENCES = 60
#: Closing quotes: a question quoted inside a sentence ends with "?" and one of these.
_QUOTED_END = frozenset("\"'”’")
_MAX_SENTENCE_CHARS = 1000


def _sentence_ends(text: str) -> Iterator[int]:
    """The offsets in ``text`` at which a sentence ends (after its punctuation, or a line break)."""
    start = 0
    for m in _BREAK.finditer(text):
        end = m.end()
        if m.group() != "\n":
            if (
                m.group()[-1] in _QUOTED_END
                and m.group()[0] in "?!"
                and text[end + 1 : end + 2].islower()
                and text[end : end + 1] == " "
            ):
                continue  # 'the answer to the question "How often ...?" is: ...': one sentence
            near = text[max(start, end - 12) : end].rstrip("\"'”’)]")
            # "Mrs." or an initial: not a sentence end -- except a leading option letter ("D. ...").
            # (Both end in a letter and a period: the search is skipped for any other ending.)
            # A match ends the text and is at most 7 characters long ("approx."): the search starts
            # there (``\b`` and the look-behind still see the characters before).
            if (
                near[-2:-1].isalpha()
                and near[-1] == "."
                and _ABBREVIATION.search(near, max(0, len(near) - 7))
            ) and not (start == 0 and re.fullmatch(r"\s*\(?[A-Ea-e][.)]", text[:end])):
                continue
        yield end
        start = end


def says_nothing_yet(text: str) -> bool:
    """Whether every sentence of ``text`` only restates, describes the source or prefaces.

    "You asked about the CEO's salary." or "The report covers the company's finances." decides
    nothing: the next sentence makes it a decline or an answer (the streaming hold waits for it).
    """
    body = strip_reasoning(text)[0]
    cleaned = _clean(body)
    sentences = _Sentences(cleaned, _norm(cleaned))
    titled = _titled(body)
    return all(
        sentences.kind(i) in "NP" or (titled and i == 0 and sentences.kind(i) == "C")
        for i in range(len(sentences))
    )


def complete_sentences(text: str) -> str:
    """The opening of ``text`` that ends with a complete sentence (``""`` if none has ended yet).

    The streaming sniffer classifies this, the way :func:`parse_verdict` would split it.
    """
    end = 0
    for end in _sentence_ends(text):  # noqa: B007 -- the last one is wanted
        pass
    return text[:end]


def _sentences(text: str) -> list[str]:
    """Split ``text`` into sentences that contain at least one word character.

    Only the first ``_MAX_SENTENCES`` sentences and the last one are returned (a decline shows in
    the opening or the conclusion; this bounds the work on very long outputs).
    """
    out: list[str] = []
    start = 0
    last = ""
    for end in _sentence_ends(text):
        piece = text[start : min(end, start + _MAX_SENTENCE_CHARS)].strip()
        # ``[^\W_]`` is ``str.isalnum``: most sentences start with a letter or digit
        if piece[:1].isalnum() or _WORD.search(piece):
            if len(out) < _MAX_SENTENCES:
                out.append(piece)
            else:
                last = piece
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
#   X  points elsewhere ("You may need to consult other reports"): after a decline it keeps the
#      decline; opening the answer it is an instruction (content)
#   P  an apology or a preamble on its own ("I'm sorry.", "Sure!")
#   N  describes what the source covers instead ("The passage focuses on ...", "Perhaps ...")
#   C  anything else: content
# R sentences are recognised by the rows of the rule table (selfroute._verdict._rules).
# A leading R makes a refusal unless the next informative sentence hedges into an answer
# ("However, it can be inferred that ...") and nothing later declines again. A leading F is a
# refusal unless later content answers. Content first is an answer, unless the closing sentence
# concludes with a decline ("Therefore, I cannot determine ..."), a later sentence gives up on the
# question ("Unable to answer based on given passages."), or -- the question known -- a later
# sentence declares the asked-for item absent (a partial answer escalates).

#: The decline rules of the table (:mod:`selfroute._verdict._rules`), by what the parser does with
#: them: the phrases (tried first, each with its guards), and the single rows.
_STRONG = tuple((re.compile(r.pattern), r.guards) for r in rules(RuleKind.PHRASE))
_WEAK_REFUSAL = re.compile(rule("cannot-provide").pattern)
_UNFORTUNATELY = re.compile(rule("unfortunately-subject").pattern)
_FORM = re.compile(rule("form").pattern)
_REQUEST = re.compile(rule("request").pattern)
_APOLOGY = re.compile(rule("apology").pattern)
_RESTATEMENT = re.compile(rule("restatement").pattern)
_HEDGE = re.compile(rule("hedge").pattern)
_GIVES_UP = re.compile(rule("gives-up").pattern)
_CONCLUSION = re.compile(
    r"^(?:therefore|so|thus|hence|consequently|as a result|as such|in conclusion|overall)\b"
)
_LEAD = re.compile(
    r"^(?:(?:unfortunately|however|but|sorry|regrettably|so|therefore|thus|hence|also|overall|"
    r"in short|in summary|in conclusion|as an ai(?: language model| assistant)?|"
    r"(?:however,? )?(?:i must|i have to|i need to|i should|i'd like to|i would like to|let me) "
    r"(?:\w+ ){0,2}?(?:inform|point out|note|clarify|mention|say|tell|admit|state)(?: you)? that|"
    r"please note(?: that)?|note that|it (?:is|'s) (?:important|worth) (?:to note|noting|"
    r"mentioning)(?: that)?|here(?:'s| is) (?:the |my |an )?(?:answer|response)[^:]{0,80}?:|"
    r"(?:i'm|i am) (?:sorry|afraid)|i apologi[sz]e(?: for (?:any|the) (?:confusion|"
    r"inconvenience))?|my apologies|apologies|sadly|alas|again|upon (?:careful )?review|"
    r"unfortunately for you|to be (?:honest|clear|precise)|i see|hmm|well|okay|ok|"
    r"(?:note|n\.?b\.?|important|disclaimer|caveat|update|edit|p\.?s\.?) *:)"
    r"(?:\s*[,:]?\s+but)?\s*[,:]?\s+|"
    r"(?:after (?:carefully )?(?:reading|reviewing|checking|examining|analy[sz]ing|going "
    r"through|looking (?:at|through|over)|searching|scanning)|upon (?:carefully )?(?:reading|"
    r"reviewing|checking|examining|analy[sz]ing)|based (?:solely |only |purely |entirely )?on|"
    r"according to|judging (?:from|by)|looking at|from what i can (?:see|tell)|"
    r"(?:in|from|within) (?:the|this|these|any of the)) [^,;:]{1,80}?[,:]\s+(?:but\s+)?)+"
)


_WORD_RUN = re.compile(r"[^\W_]+")
#: First letters-or-words a lead-in can start with (a cheap test before the regex).
_LEAD_STARTS = (
    "unfortunately", "however", "but", "sorry", "regrettably", "so", "therefore", "thus",
    "hence", "also", "overall", "in ", "as an ai", "i'm", "i am", "i apolog", "my apolog",
    "apolog", "sadly", "alas", "again", "upon", "to be", "i see", "hmm", "well", "ok", "i must",
    "i have to", "i need to", "i should", "i'd like", "i would like", "let me", "please note",
    "note that", "it is important", "it's important", "it is worth", "it's worth", "here",
    "after", "based", "according", "judging", "looking", "from ", "within ", "note", "n.b", "nb",
    "important", "disclaimer", "caveat", "update", "edit", "p.s", "ps",
)  # fmt: skip


def _lead_stripped(sentence: str) -> str:
    """``sentence`` without lead-ins such as "Unfortunately," or "Based on the passage,"."""
    if not sentence.startswith(_LEAD_STARTS):
        return sentence
    return _LEAD.sub("", sentence, count=1)


#: Every decline needs one of these words (derived from the rows' triggers).
_TRIGGER = TRIGGER


#: A decline reported in quotes: 'I must reply with: "Unable to answer based on given passages."'.
_REPORTED_DECLINE = re.compile(rule("reported-decline").pattern)


def _contains(text: str, words: tuple[str, ...]) -> bool:
    """Whether ``text`` contains any of ``words`` (a guard: ``in`` costs far less than a search)."""
    for word in words:  # noqa: SIM110 -- a loop costs half what any() over a generator costs
        if word in text:
            return True
    return False


#: ``_REPORTED_DECLINE`` needs an opening quote.
_QUOTE_MARKS = rule("reported-decline").guards


def _refusal_match(sentence: str) -> str | None:
    """The phrase by which ``sentence`` declines the question, if any."""
    if not _TRIGGER.search(sentence):
        return None
    return _refusal_phrase(sentence)


def _refusal_phrase(sentence: str) -> str | None:
    """:func:`_refusal_match` of a sentence known to contain a decline word (``_TRIGGER``)."""
    core = _lead_stripped(sentence)
    for pat, guards in _STRONG:
        if guards and not _contains(core, guards):
            continue
        m = pat.search(core)
        if m:
            return m.group(0)
    shape = decline_shape(core)
    if shape is not None:
        return shape[1]
    quoted = _REPORTED_DECLINE.search(core) if _contains(core, _QUOTE_MARKS) else None
    if quoted is not None:
        inner = _norm(quoted.group(1))
        if inner and inner != core:
            return _refusal_match(inner)
    m = _UNFORTUNATELY.search(sentence)
    if m:
        return m.group(0)
    # "Salary: not specified.", "- **Bonus:** None mentioned.": the value of a short label
    label, colon, _ = core[:_LABEL_CHARS].partition(": ")
    if colon and len(label.split()) <= 5:
        return _refusal_match(core[len(label) + 2 :])
    return None


_LABEL_CHARS = 60


#: Substrings without which a pattern cannot match (cheap guards before the searches).
_FORM_GUARDS = rule("form").guards
_REQUEST_GUARDS = rule("request").guards
_POINTER_GUARDS = rule("pointer").guards


def _is_form(sentence: str) -> bool:
    """Whether ``sentence`` declines a *form* of answer (copyright, "as an AI ...")."""
    return _contains(sentence, _FORM_GUARDS) and _FORM.search(sentence) is not None


def _is_refusal(sentence: str, triggered: bool | None = None) -> bool:
    """``_kind(sentence) == "R"``, without classifying non-declines any further.

    ``triggered``: whether ``sentence`` contains a decline word (``_TRIGGER``), when known.
    """
    if triggered is None:
        triggered = _TRIGGER.search(sentence) is not None
    if not triggered:
        return False
    if _refusal_phrase(sentence):
        return True
    return not _is_form(sentence) and _WEAK_REFUSAL.search(_lead_stripped(sentence)) is not None


def _kind(sentence: str, triggered: bool | None = None) -> str:
    """Classify one normalised sentence (see the table above).

    ``triggered``: whether ``sentence`` contains a decline word (``_TRIGGER``), when known.
    """
    if triggered is None:
        triggered = _TRIGGER.search(sentence) is not None
    if triggered and _refusal_phrase(sentence):
        return "R"
    if _is_form(sentence):
        return "F"
    if triggered and _WEAK_REFUSAL.search(_lead_stripped(sentence)):
        return "R"
    if _APOLOGY.search(sentence):
        return "P"
    if _contains(sentence, _REQUEST_GUARDS) and _REQUEST.search(sentence):
        return "Q"
    if _contains(sentence, _POINTER_GUARDS) and POINTER.search(sentence):
        return "X"
    core = _lead_stripped(sentence)
    if _WORD.search(core) is None or COVERS_INSTEAD.search(core) or _RESTATEMENT.search(core):
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


_POLAR_ANSWER = re.compile(
    r"^(?:no|nope|yes|yeah|yep|correct|incorrect|true|false)(?:[,.!;:]| *$| +[-–—])"
)
#: Shapes in which the source is the subject ("The paper does not mention X"): they answer a
#: polar question about what the source says ("Does the paper mention X?").
_SOURCE_SUBJECT = re.compile(
    r"^(?:it|they|(?:the |these |this |those |its )?(?:[\w-]+ ){0,3}?"
    r"(?:text|passages?|context|documents?|articles?|paper|papers|report|study|authors?|"
    r"chunks?|excerpts?|book|story|transcript|filing|statement)s?)\b"
)


_ONE_SOURCE = re.compile(
    r"\b(?:passage|chunk|excerpt|snippet|document|source|paragraph|section|paper|article) "
    r"(?:\d+|[ivx]+|\[\d+\]|#\d+)\b|\b(?:passages|chunks|excerpts|documents|sources|paragraphs|"
    r"sections) \d+(?:,? (?:and|&|or) \d+|, \d+)+\b|\b(?:first|second|third|fourth|fifth|other|last|another) "
    r"(?:passage|chunk|excerpt|snippet|document|source|paragraph|section|paper|article)\b|"
    r"^(?:however, )?(?:this|that|the latter|the former)(?: (?:passage|chunk|excerpt|snippet|"
    r"document|source|paragraph|section|one))? (?:does|did|do|is|was)\b"
)


#: After "No,": the question left open ("it is not clear whether ...", "do not say if ...").
_UNDECIDED = re.compile(
    r"\b(?:whether|if)\b|\b(?:not (?:\w+ )?(?:clear|possible|certain|sure|known|determinable)|"
    r"unclear|uncertain|impossible|unable|(?:cannot|can't|can not|could not|couldn't) (?:\w+ )?"
    r"(?:determine|tell|say|confirm|answer|know)|no (?:\w+ )?(?:information|mention|details|data)|"
    r"(?:don't|do not) know)\b"
)


_NO_EVIDENCE = re.compile(
    r"^there (?:is|was|'s) (?:no|not any) (?:\w+ )?(?:evidence|indication|proof|sign|suggestion)\b"
)


def _polar_kind(sentence: str, kind: str, shape: QuestionShape) -> str:
    """Re-read the opening sentence of an answer to a yes/no question.

    "No, the paper does not use BERT" answers "Does the paper use BERT?"; so does "The paper does
    not mention BERT" when the question asks what the paper mentions.
    """
    core = _lead_stripped(sentence)
    m = _POLAR_ANSWER.search(core)
    if m:
        if kind == "R" and core.startswith("no") and _UNDECIDED.search(core, m.end()):
            return kind  # "No, it is not clear whether he left": no verdict on the question
        return "C"
    if kind == "R" and shape.about_source and _SOURCE_SUBJECT.search(core):
        return "C"
    if kind == "R" and _NO_EVIDENCE.search(core) and not _UNDECIDED.search(core):
        return "C"  # "There is no evidence (in the text) that he was present": the answer "no"
    return kind


def _asks_for_absent(sentence: str, shape: QuestionShape, *, named: bool = False) -> bool:
    """Whether the decline ``sentence`` says the question's own item is missing.

    With ``named``, the sentence must name that item: a decline with no content word left once
    its phrase is removed ("Unknown.", "I cannot give medical advice.") names nothing to compare.
    """
    phrase = _refusal_match(sentence) or ""
    core = _lead_stripped(sentence)
    if _ONE_SOURCE.search(core):
        return False  # "Passage 3 does not mention it": another passage may have answered
    absent = core.replace(phrase, " ")
    if named and not content_stems(absent):
        return False
    return shape.asks_for(absent)


#: A heading that names one source ("Passage 3:", "**Chunk 2:**").
_ONE_SOURCE_HEADING = re.compile(
    r"^(?:passage|chunk|excerpt|snippet|document|source|paragraph|section|paper|article) "
    r"(?:\d+|[ivx]+|\[\d+\]|#\d+) *:$"
)


def _under_one_source_heading(sentences: _Sentences, i: int) -> bool:
    """Whether declining sentence ``i`` opens the section of one source ("Passage 3:").

    "Passage 1: <steps> Passage 2: <steps> Passage 3: Unable to answer based on given passages.":
    the give-up (and the declines right after it) is about passage 3; the others answered.
    """
    j = i - 1
    while j >= 0 and sentences.refuses(j):
        j -= 1
    return j >= 0 and _ONE_SOURCE_HEADING.match(sentences[j].rstrip(" *_")) is not None


#: A pronoun subject that can stand for the source named in the sentence before.
_PRONOUN_SUBJECT = re.compile(r"^(?:however,? |but |yet )?(?:it|this|they)\b")


def _about_one_source(sentences: _Sentences, i: int) -> bool:
    """Whether sentence ``i``'s subject is a pronoun for the one source the sentence before names.

    "Passage 2 gives an overview. However, it does not give the steps.": like "Passage 2 does not
    give the steps", another passage may have answered.
    """
    if i == 0 or _PRONOUN_SUBJECT.match(_lead_stripped(sentences[i])) is None:
        return False
    before = _lead_stripped(sentences[i - 1])
    return _ONE_SOURCE.match(before, 4 if before.startswith("the ") else 0) is not None


#: A list item's marker: "- ", "* ", "• ", "3. ", "2) ".
_BULLET = re.compile(r"^(?:[-*•+]|\d{1,2}[.)])\s+")
_BULLET_STARTS = frozenset("-*•+0123456789")


class _Sentences:
    """The sentences of one output, normalised and classified only when the verdict asks.

    Most outputs are answers whose verdict needs the kind of the opening sentence and, of the
    others, only whether they decline: classifying every sentence fully (as the table above
    describes) would give the same verdict at several times the cost.
    """

    __slots__ = ("_flat", "_kinds", "_may_give_up", "_norms", "_raw", "_refusals", "_triggers")

    def __init__(self, cleaned: str, flat: str) -> None:
        self._raw = _sentences(cleaned)
        self._norms: list[str | None] = [None] * len(self._raw)
        self._kinds: list[str | None] = [None] * len(self._raw)
        # No decline word anywhere (see _cannot_decline): no sentence declines.
        maybe = len(cleaned) > _MAX_SENTENCE_CHARS or _TRIGGER.search(flat) is not None
        self._triggers: list[bool | None] = [None if maybe else False] * len(self._raw)
        self._refusals: list[bool | None] = [None if maybe else False] * len(self._raw)
        self._flat = flat
        self._may_give_up: bool | None = None

    @property
    def may_give_up(self) -> bool:
        """Whether any sentence can give up on the question (``_GIVES_UP`` needs these words)."""
        may = self._may_give_up
        if may is None:
            flat = self._flat
            may = self._may_give_up = (
                ("answer" in flat and ("able" in flat or "question" in flat))
                or ("n't" in flat and " answer " in flat)
                or ("not" in flat and " answer " in flat)
                or ("respond" in flat and "question" in flat)
                or ("question" in flat and ("address" in flat or "part" in flat))
                or "it is unable" in flat
                or "it was unable" in flat
            )
        return may

    def __len__(self) -> int:
        return len(self._raw)

    def __getitem__(self, i: int) -> str:
        norm = self._norms[i]
        if norm is None:
            norm = _norm(self._raw[i])
            if norm[:1] in _BULLET_STARTS:  # "- not specified.", "2. the passages do not ..."
                norm = _BULLET.sub("", norm, count=1) or norm
            if norm[:1] in _OPEN_QUOTES and norm.rstrip(" .!")[-1:] in _CLOSE_QUOTES:
                # '... the answer is: "Unable to answer based on given passages."': a whole
                # sentence in quotes says what it says
                norm = norm.strip(_QUOTES + " ") or norm
            elif norm[:1] == "(" and norm.rstrip(" .!")[-1:] == ")":
                norm = norm.strip("() .") or norm  # "(Unable to answer ...)": the same
            self._norms[i] = norm
        return norm

    def raw(self, i: int) -> str:
        """Sentence ``i`` as written."""
        return self._raw[i]

    def triggered(self, i: int) -> bool:
        """Whether sentence ``i`` contains a decline word (``_TRIGGER``)."""
        triggered = self._triggers[i]
        if triggered is None:
            triggered = self._triggers[i] = _TRIGGER.search(self[i]) is not None
        return triggered

    def kind(self, i: int) -> str:
        """``_kind`` of sentence ``i``."""
        kind = self._kinds[i]
        if kind is None:
            kind = self._kinds[i] = _kind(self[i], self.triggered(i))
        return kind

    def phrase(self, i: int) -> str:
        """The phrase by which declining sentence ``i`` declines (the sentence, failing one)."""
        return (_refusal_phrase(self[i]) if self.triggered(i) else None) or self[i]

    def refuses(self, i: int) -> bool:
        """Whether sentence ``i`` is a decline (``kind(i) == "R"``)."""
        refusal = self._refusals[i]
        if refusal is None:
            kind = self._kinds[i]
            refusal = kind == "R" if kind is not None else _is_refusal(self[i], self.triggered(i))
            self._refusals[i] = refusal
        return refusal

    def first_refusal(self, start: int) -> str | None:
        """The first declining sentence from ``start`` on."""
        return next((self[i] for i in range(start, len(self)) if self.refuses(i)), None)


#: Substrings one of which an apology or preamble sentence (``_APOLOGY``) needs.
_APOLOGY_GUARDS = rule("apology").guards
_CANNOT_DECLINE_GUARDS = (*_FORM_GUARDS, *_REQUEST_GUARDS, *_APOLOGY_GUARDS)


def _cannot_decline(flat: str, length: int) -> bool:
    """Whether the whole normalised output ``flat`` shows that no sentence of it can decline.

    Every sentence is a piece of the output, so its normalised text is a piece of ``flat`` with a
    word boundary at both ends: a pattern that finds nothing in ``flat`` finds nothing in any
    sentence. (Not so for a sentence cut at ``_MAX_SENTENCE_CHARS``, which can end mid-word: a
    longer output is split as usual.) With no decline word, no refusal of form, no request and no
    apology anywhere, the opening sentence is content and nothing later declines.
    """
    return (
        length <= _MAX_SENTENCE_CHARS
        and _TRIGGER.search(flat) is None
        and not _contains(flat, _CANNOT_DECLINE_GUARDS)
    )


#: An opening markdown heading of a few words on its own line ("## Uptime SLA").
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}[ \t]+[^\n#]{1,100}?[ \t#]*(?:\n|\Z)")
_HEADING_WORDS = 12


def _titled(body: str, question: str | None = None) -> bool:
    """Whether ``body`` (before :func:`_clean`) opens with a markdown heading of a few words.

    A heading names the topic ("# Scope 3 emissions, 2022"): it decides nothing, so a decline
    right after it opens the answer. A bold line is one only when every word of it is the
    ``question``'s ("**Boiler capacity**" for "What's the boiler capacity?"): otherwise it is
    often the answer ("**1972**").
    """
    text = body.lstrip("\n\r\t ")
    if text[:1] != "#":
        return question is not None and _bold_title_of(text, question)
    m = _HEADING.match(text)
    return m is not None and len(_WORD_RUN.findall(m.group())) <= _HEADING_WORDS


#: An opening bold line on its own ("**Boiler capacity**", "__Peak toll__").
_BOLD_LINE = re.compile(r"(\*\*|__)([^*_\n]{1,80}?)\1[ \t]*:?[ \t]*\n")


def _bold_title_of(text: str, question: str) -> bool:
    """Whether ``text`` opens with a bold line all of whose words are ``question``'s."""
    m = _BOLD_LINE.match(text)
    if m is None:
        return False
    words = _WORD_RUN.findall(m.group(2).lower())
    asked = set(_WORD_RUN.findall(question.lower()))
    return 0 < len(words) <= _HEADING_WORDS and all(w in asked for w in words)


def _commits_after_concession(sentence: str) -> bool:
    """Whether declining ``sentence`` opens with a conceded decline and then commits.

    "Although the text does not name its author, the pamphlet's main argument is clear: ...":
    the decline is conceded in passing; the main clause answers.
    """
    core = _lead_stripped(sentence)
    m = _LEADING_CONCESSION.match(core)
    return m is not None and _is_refusal(m.group(1)) and _commits(core[m.end() :])


def _refusal_verdict(
    cleaned: str,
    shape: QuestionShape | None = None,
    flat: str | None = None,
    *,
    titled: bool = False,
) -> str | None:
    """Return the phrase that makes ``cleaned`` a natural-language decline, or ``None``.

    With the question's ``shape``: an opening "No, ..." answers a yes/no question, and an answer
    that later declares the asked-for item absent is a (partial) decline. ``flat`` is
    ``_norm(cleaned)``, when the caller has it. ``titled``: the output opens with a markdown
    heading (:func:`_titled`), which names the topic and decides nothing, like a restatement.
    """
    if flat is None:
        flat = _norm(cleaned)
    if _cannot_decline(flat, len(cleaned)):
        return None
    sentences = _Sentences(cleaned, flat)
    count = len(sentences)
    if not count:
        return None
    first = next((i for i in range(count) if sentences.kind(i) != "P"), None)
    if first is None:  # only apologies
        return sentences[0]
    kind = sentences.kind(first)
    if kind == "X":
        kind = "C"  # "To prepare, you should consult your doctor ...": an instruction
    if titled and first == 0 and kind == "C":
        kind = "N"  # "# Uptime SLA\n\nThe agreement does not define an uptime SLA. ...": a title
    if kind == "R" and _commits_after_concession(sentences[first]):
        kind = "C"  # "Although the text does not name its author, its argument is clear: ..."
    if kind == "N":  # "The report covers the company's finances. It does not give the salary."
        nxt = next((i for i in range(first + 1, count) if sentences.kind(i) not in "NP"), None)
        if (
            nxt is not None
            and sentences.kind(nxt) == "R"
            and (
                # "Passage 1 discusses the cost, $5,000. Passage 3 does not mention it." answers;
                # after a mere restatement ("You asked about X.") a per-passage decline declines
                not _ONE_SOURCE.search(_lead_stripped(sentences[nxt]))
                or all(_RESTATEMENT.search(_lead_stripped(sentences[i])) for i in range(first, nxt))
            )
        ):
            return _opening_decline(sentences, nxt)
    head = sentences[first]
    if shape is not None and shape.yes_no:
        kind = _polar_kind(head, kind, shape)
    if kind == "R":
        clauses = _CONCESSION.split(head, maxsplit=1)
        if len(clauses) == 2 and _commits(clauses[0]):
            kind = "C"
    if kind == "R" and shape is not None and not shape.yes_no:
        # "The document says it took place on March 3, but doesn't say where." answers "When?"
        parts = _BUT.split(head, maxsplit=1)
        if len(parts) == 2 and not parts[0].startswith(("i ", "we ")) and _commits(parts[0]):
            negated = NEGATED_VERB.match(parts[1])
            if negated is not None:
                asked = shape.asks_for(parts[1][negated.end() :])
            else:
                asked = _refusal_match(parts[1]) is None or _asks_for_absent(parts[1], shape)
            if not asked:
                kind = "C"
    if kind == "Q":
        return head
    if kind == "R":
        return _opening_decline(sentences, first)
    if kind == "F":
        # "I cannot reproduce copyrighted excerpts. However, ... X." answers; with no content, or a
        # decline later, it is a refusal.
        later = sentences.first_refusal(first + 1)
        if later is not None:
            return _refusal_match(later) or later
        parts = _BUT.split(head, maxsplit=1)
        if any(sentences.kind(i) == "C" for i in range(first + 1, count)) or (
            len(parts) == 2 and _kind(parts[1]) == "C"
        ):
            return None
        return head
    return _closing_decline(sentences, first, shape)


def _closing_decline(sentences: _Sentences, first: int, shape: QuestionShape | None) -> str | None:
    """Content first: an answer, unless the closing sentence concludes with a decline, a later
    sentence gives up on the question, or (the question known, not a yes/no one) a later sentence
    says the asked-for item is missing."""
    count = len(sentences)
    if count > first + 1:
        last = sentences[count - 1]
        if (
            _CONCLUSION.search(last)
            and sentences.refuses(count - 1)
            and not _NO_FURTHER.search(last)
            and not _one_source_give_up(last, _GIVES_UP.search(last))
            and not _ONE_SOURCE_BASED.search(last)
        ):
            return sentences.phrase(count - 1)
    # "<reasoning> ... Final answer: not specified in the document.": the labelled verdict decides
    labelled = next(
        (
            i
            for i in range(count - 1, first, -1)
            if sentences[i].startswith(_ANSWER_STARTS) and _ANSWER_LABEL.match(sentences[i])
        ),
        None,
    )
    if (
        labelled is not None
        and sentences.refuses(labelled)
        # not the answer to a question the model went on to invent ("Question: ...? Answer: ...")
        and not sentences[labelled - 1].rstrip().endswith("?")
        and not any(_QUESTION_LABEL.match(sentences[i]) for i in range(first, labelled))
    ):
        return sentences.phrase(labelled)
    if sentences.may_give_up:  # "... Unable to answer based on given passages."
        for i in range(first + 1, count):
            if _gives_up(sentences, i, shape):
                return sentences.phrase(i)
    asked = _gives_up_what_was_asked(sentences, first)
    if asked is not None:
        return asked
    if shape is not None and not shape.yes_no:
        for i in range(first + 1, count):
            if (
                sentences.refuses(i)
                and not _about_one_source(sentences, i)
                and not _under_one_source_heading(sentences, i)
                and _asks_for_absent(sentences[i], shape, named=True)
            ):
                if _resumes_answer(sentences, i) or any(
                    _concludes(sentences[j]) for j in range(i + 1, count)
                ):
                    return None  # "... Therefore, X is Y.": the final verdict commits
                return sentences.phrase(i)
    return None


#: "... so I can't give you the figure you asked for" (see :func:`_gives_up_what_was_asked`).
_GIVES_UP_ASKED = re.compile(rule("gives-up-what-was-asked").pattern)
#: How many closing sentences are read for it.
_ASKED_TAIL = 3


def _gives_up_what_was_asked(sentences: _Sentences, first: int) -> str | None:
    """The closing sentence after content that names what was asked as not given, if any.

    "That tells you the funding, so I can't give you the figure you asked for.", "I can tell you
    the gram-negative values, but not the MRSA figure you're asking about.": only requests,
    pointers and apologies may follow it. Searched only in the last few sentences.
    """
    count = len(sentences)
    for i in range(count - 1, max(first, count - 1 - _ASKED_TAIL), -1):
        sentence = sentences[i]
        if _contains(sentence, ASKED_GUARDS):
            core = _lead_stripped(sentence)
            m = _GIVES_UP_ASKED.search(core)
            if (
                m is not None
                and not _HYPOTHETICAL.search(core, 0, m.start())
                and not _one_source_give_up(core, m)
                and all(sentences.kind(j) in "QXP" for j in range(i + 1, count))
            ):
                return m.group(0)
    return None


#: ``_GIVES_UP`` needs one of these.
_GIVES_UP_GUARDS = rule("gives-up").guards


#: A label that states the verdict after reasoning ("Final answer:", "Answer:").
#: "The answer to the question "How ...?" is: ..." labels it too (the quoted question kept whole).
_ANSWER_LABEL = re.compile(
    r"^(?:final |short |my |the )?(?:answer|verdict|conclusion)(?: to (?:the|this|your) "
    r"(?:question|query)(?: [\"“'][^\"”]{1,200}[\"”'])?)?(?: is *:?| *:)"
)
_QUESTION_LABEL = re.compile(r"^(?:question|q)(?: \d+)? *:")
_ANSWER_STARTS = ("final", "short", "my", "the", "answer", "verdict", "conclusion")


def _gives_up(sentences: _Sentences, i: int, shape: QuestionShape | None) -> bool:
    """Whether sentence ``i``, after content, gives up on the question itself.

    "Unable to answer based on given passages." does; so does a give-up scoped to the asked-for
    item ("... whether X", "... about X", or a colon and a list of X), the question known. A
    give-up scoped to something else (without the question: scoped at all) leaves the answer
    before it standing, and so does one that only qualifies it ("... in detail") or a
    hypothetical ("If the passages do not contain ..., my response would be ..."), and so does a
    give-up about one passage ("Passage 2 does not give enough to answer the question").
    """
    sentence = sentences[i]
    if not _contains(sentence, _GIVES_UP_GUARDS):
        return False
    core = _lead_stripped(sentence)
    m = _GIVES_UP.search(core)
    if m is None or not sentences.refuses(i) or _HYPOTHETICAL.search(core, 0, m.start()):
        return False
    if (
        _one_source_give_up(core, m)
        or _under_one_source_heading(sentences, i)
        or _resumes_answer(sentences, i)
    ):
        return False
    scope = _gives_up_scope(sentences, i, core[m.end() :], shape)
    if scope is None:
        # "Unable to answer ... There is no mention of X in passages 2 and 4.": scoped to passages
        return not _scoped_to_passages(sentences, i)
    return (
        bool(scope) and shape is not None and not shape.yes_no and _scope_asked(scope, core, shape)
    )


#: What a give-up is "based on": not its scope.
_SCOPE_BASIS = re.compile(
    r"^[\s,]*(?:(?:based|solely|only|purely|entirely|just) )*(?:on|from|with|using|in|given) (?:the "
    r"|these |this |any )?(?:(?:information|details?) )?(?:\w+ ){0,2}?(?:passages?|context|text|"
    r"documents?|excerpts?|information|sources?|chunks?|data|material)\b(?: (?:provided|"
    r"given|alone|above|available))?|^[\s,]*(?:alone|here|at this time|at the moment)\b"
)
#: A basis that is one passage ("based on this passage alone", "from passage 3").
_ONE_SOURCE_BASIS = re.compile(
    r"[\s,]*(?:(?:the|this|your|that) question )?(?:(?:based|solely|only|purely|just) )*"
    r"(?:on|from|in|using|with) (?:(?:this|that) (?:passage|chunk|excerpt|snippet|paragraph|"
    r"section|source)|(?:passage|chunk|excerpt|snippet|paragraph|section|source) (?:\d+|[ivx]+))\b"
)
#: A basis that is one passage, anywhere ("Therefore, I cannot provide an answer based on this
#: passage alone", "... more detailed instructions based on this passage").
_ONE_SOURCE_BASED = re.compile(
    r"\b(?:based|solely|only|purely|just) (?:on|from|in|using) (?:(?:this|that) (?:passage|chunk|"
    r"excerpt|snippet|paragraph|section|source)|(?:passage|chunk|excerpt|snippet|paragraph|section|"
    r"source) (?:\d+|[ivx]+))\b"
)
_SCOPE_END = re.compile(r"[,;:(]\s*(?:so|as|because|since|which|and|but|therefore|thus)\b|[.!?;]")
#: A give-up that qualifies the answer given ("cannot answer the question in detail").
_DEGREE = re.compile(
    r"^[\s,]*(?:in (?:more |greater |full |further )?detail|in full|fully|completely|"
    r"comprehensively|definitively|exhaustively|precisely|exactly|more (?:specifically|precisely|"
    r"fully|accurately)|with (?:certainty|precision|more detail|complete accuracy)|any further|"
    r"beyond (?:this|that|what))\b"
)
_SCOPE_START = re.compile(
    r"^[\s,:]*(?:whether|if|about|regarding|concerning|on|for|as to|in regard to|with regard to|"
    r"related to|how|what|why|when|where|who|which)\b"
)
#: A colon, then the gerund of a verb of information: what the give-up could not do.
_COLON_SCOPE = re.compile(
    r"^\s*:\s*(?:provid|giv|list|explain|specify|describ|detail|identify|stat|offer|nam|"
    r"determin|answer)ing\b"
)
#: A conditional: "If the passages did not contain X, my response would be ...".
_HYPOTHETICAL = re.compile(r"\b(?:if|unless|in case|otherwise)\b")


def _scope_asked(scope: str, core: str, shape: QuestionShape) -> bool:
    """Whether the give-up in ``core``, scoped to ``scope``, is scoped to what was asked.

    A scope the give-up sentence itself names ("... whether X", "... regarding X") is the asked
    thing when most of its content words are the question's: its own words restate the question
    ("regarding the specific impact of hearing loss on eating habits" for "how does hearing loss
    affect sleeping and eating"). A missing thing named only in the next sentence must name
    nothing beyond the question (:func:`_sub_case_named` already found it a narrower case).
    """
    if shape.asks_for(scope):
        return True
    return scope in core and shape.share(scope) >= _ASKED_SHARE


#: The share of a named scope's content words that must be the question's for it to be asked.
_ASKED_SHARE = 0.5


def _one_source_give_up(core: str, m: re.Match[str] | None) -> bool:
    """Whether the give-up ``m`` in ``core`` is about one passage, not the question.

    "Passage 2 does not give enough to answer the question", "... I am unable to answer the
    question based on this passage alone": another passage may have answered.
    """
    return m is not None and (
        _ONE_SOURCE.search(core, 0, m.start()) is not None
        or _ONE_SOURCE_BASIS.match(core, m.end()) is not None
    )


def _gives_up_scope(
    sentences: _Sentences, i: int, rest: str, shape: QuestionShape | None = None
) -> str | None:
    """What the give-up sentence ``i`` is scoped to (``rest``: its text after the give-up).

    Returns ``None`` when it gives up on the question as a whole, ``""`` when it only qualifies
    the answer ("... in detail"), else the text naming what could not be answered: a clause
    after the give-up, or the items listed after a colon.
    """
    rest = _SCOPE_BASIS.sub("", rest, count=1)
    if _DEGREE.match(rest):
        return ""
    colon = _COLON_SCOPE.match(rest)
    if colon is not None:  # "...: Providing detailed information on X, as ...": X
        rest = rest[colon.end() :]
    end = _SCOPE_END.search(rest)
    clause = rest[: end.start()] if end else rest
    if (colon is not None or _SCOPE_START.match(clause)) and content_stems(clause):
        return clause
    if clause.strip(" .:,\"'"):
        return None  # more words, not a scope: "... as the passages do not say"
    if sentences.raw(i).rstrip(" *_").endswith(":"):  # "Unable to answer ...:" and a list
        listed = " ".join(sentences[j] for j in range(i + 1, min(i + 4, len(sentences))))
        return listed or None
    # A bare give-up stays one even when the next sentence names what is missing ("... The
    # passages do not provide X"): on the labelled RAGTruth answers that X is mostly the question
    # itself in other words ("how to level the post", "other benefits"), which its words cannot
    # tell from a narrower case the question did not ask ("stuffed pork chops") -- unless X says
    # it is a narrower case ("... how to fix a specific issue with the valve").
    return _sub_case_named(sentences, i, shape)


#: A narrower case than the one answered: a situation, issue, season or time of it.
_SUB_CASE = re.compile(
    r"\b(?:(?:different|individual|various|specific|particular|certain) (?:aspects?|cases?|"
    r"situations?|issues?|problems?|scenarios?|seasons?|times?|stages?|circumstances?|"
    r"conditions?|types?)|other (?:types?|kinds?|sorts?|varieties|aspects?) of)\b"
)
#: A circumstance: a clause with its own subject ("when they are ...", "once it has ..."), or
#: "without" and what is done without.
_CIRCUMSTANCE = re.compile(
    r"\b(?:(?:when|once|after|unless|until|while|before|if) (?:it|they|he|she|you|we)|without) \w"
)
_EXAMPLES = re.compile(r",? (?:such as|including|like|e\.g\.|for example)\b")
#: "Nothing beyond these", "other uses": the question itself, not a narrower case ("other types
#: of sugar" is one).
_NOTHING_ELSE = re.compile(
    r"\b(?:other(?! (?:types?|kinds?|sorts?|varieties|aspects?) of)|beyond|only|except|besides|"
    r"additional|apart from|more)\b"
)


def _sub_case_named(sentences: _Sentences, i: int, shape: QuestionShape | None) -> str | None:
    """What the sentence after the bare give-up ``i`` says is missing, if it is a narrower case.

    "... Unable to answer based on given passages. The passages do not provide guidance on how to
    reheat individual types of food.": the missing thing is a sub-case of what was answered (a
    situation, issue, season, time or "other types of X"), so the give-up is scoped to it. A
    category partition ("types of food", the item a question often asks for), "nothing beyond
    these" and "other X" (the question itself: "no other uses") are not sub-cases. With the
    question's ``shape``, neither is it needed when the missing thing is the asked one in a
    circumstance the question never names ("... when they are not caused by running").
    """
    if i + 1 >= len(sentences) or not sentences.refuses(i + 1):
        return None
    nxt = _lead_stripped(sentences[i + 1])
    m = NEGATED_INFO.search(nxt) if _SOURCE_SUBJECT.match(nxt) else None
    if m is None:
        return None
    absent = nxt[m.end() :]
    head = _EXAMPLES.split(absent, maxsplit=1)[0]  # "... , such as X": X only illustrates
    if _NOTHING_ELSE.search(head):
        return None
    if _SUB_CASE.search(head):
        return absent
    if shape is not None and not shape.yes_no:
        # "... how to relieve tight calf muscles when they are not caused by running": the asked
        # thing (some word of it the question's) in a circumstance none of whose words is the
        # question's: a case the question did not ask
        clause = _CIRCUMSTANCE.search(head)
        if (
            clause is not None
            and shape.mentions(head[: clause.start()])
            and not shape.mentions(head[clause.start() :])
        ):
            return absent
    return None


#: "Therefore, I am unable to provide further information": nothing beyond the answer given.
_NO_FURTHER = re.compile(
    r"\b(?:further|additional|more|other|extra|any more|anything else|beyond (?:this|that|these|"
    r"what))\b(?: \w+){0,2}? (?:information|details?|data|context|specifics)\b|\bbeyond (?:this|"
    r"that|these|what)\b"
)


def _concludes(sentence: str) -> bool:
    """Whether ``sentence`` is a committed conclusion ("Therefore, the headquarters is in ...")."""
    return bool(_CONCLUSION.search(sentence)) and _commits(sentence)


#: After a decline, a description instead of the answer (the rows of kind DESCRIBES_INSTEAD),
#: a report of what the source does say (REPORTS), and an answer inferred after all (INFERS).
_DESCRIBES_INSTEAD = tuple(
    (re.compile(r.pattern), r.guards) for r in rules(RuleKind.DESCRIBES_INSTEAD)
)
_REPORTS = tuple((re.compile(r.pattern), r.guards) for r in rules(RuleKind.REPORTS))
_INFERS = tuple((re.compile(r.pattern), r.guards) for r in rules(RuleKind.INFERS))
_EXACTNESS = tuple((re.compile(r.pattern), r.guards) for r in rules(RuleKind.EXACTNESS))
_IMPLICIT = tuple((re.compile(r.pattern), r.guards) for r in rules(RuleKind.IMPLICIT))


def _any_row(text: str, rows: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]) -> bool:
    """Whether one of ``rows`` (pattern, guards) is found in ``text``."""
    return any(
        (not guards or _contains(text, guards)) and pattern.search(text) for pattern, guards in rows
    )


def _describes_instead(clause: str) -> bool:
    """Whether ``clause``, after a decline, describes instead of answering (the decline stands)."""
    return _any_row(_lead_stripped(clause), _DESCRIBES_INSTEAD)


def _reports(sentence: str) -> bool:
    """Whether ``sentence``, after a decline, reports what the source does say."""
    if _any_row(sentence, _REPORTS):
        return True
    core = _lead_stripped(sentence)  # "Based on the text, we know that ..."
    return core != sentence and _any_row(core, _REPORTS)


#: A concession opening a sentence: "While the text does not give the date, it ...".
_LEADING_CONCESSION = re.compile(
    r"^(?:(?:so|therefore|thus|however|but|and),? )?(?:although|though|while|whilst|even though"
    # the concession ends at a comma (after a closing quote too: 'define "x," they do ...') or a
    # dash ("doesn't name its authors — it's credited only to ... — its conclusion is clear")
    r"|even if) ([^,;]{3,200}?)(?:,[\"'”’]?|[\"'”’],| [—–-]) (?=[\"'“‘\w])"
)


def _clauses(sentence: str) -> list[str]:
    """``sentence`` split before its main clause: after "but" ("X is not given, but ..."), or after
    a leading concession ("Although X is not given, ...")."""
    m = _LEADING_CONCESSION.match(sentence)
    if m is not None:
        return [m.group(1), sentence[m.end() :]]
    return _BUT.split(sentence, maxsplit=1)


def _infers_answer(sentence: str) -> bool:
    """Whether ``sentence`` commits to an answer by inference ("This suggests that she ...")."""
    if not _any_row(sentence, _INFERS):
        return False
    if _contains(sentence, ASKED_GUARDS) and _GIVES_UP_ASKED.search(sentence):
        return False  # "So I can tell you X, but not the figure you're asking about."
    m = _LEADING_CONCESSION.match(sentence)  # "So, while her age is not given, she is probably ..."
    return _commits(sentence[m.end() :] if m is not None else sentence)


def _inferred_after(sentences: _Sentences, start: int) -> int | None:
    """The first sentence from ``start`` on that infers an answer, if any.

    Only the few sentences after the report are read: an inference further into a long summary
    ("... so eligible employees may take 12 weeks unpaid") concludes a point of the summary, not
    the question that was declined; and a sentence that itself declines infers nothing.
    """
    end = min(len(sentences), start + _INFERENCE_WINDOW)
    return next(
        (j for j in range(start, end) if _infers_answer(sentences[j]) and not sentences.refuses(j)),
        None,
    )


#: How many sentences after a report of the source may infer the declined answer.
_INFERENCE_WINDOW = 4


#: A clause that goes on declining: a negated verb of information, its subject left out or a
#: pronoun ("..., but never says how much", "but it does not give the date").
_STILL_DECLINING = re.compile(
    rf"^(?:(?:it|they|he|she|the \w+) )?(?:{NEGATION}{ADVS} {BASE}|never{ADVS} (?:{THIRD}|{PAST}))\b"
    # "... it gives the method but not a number for your case"
    r"|^not (?:a |an |any |the |one )?(?:[\w-]+ ){0,2}?(?:number|figure|amount|date|name|value|"
    r"count|total|answer|rate|price|percentage)\b"
)


def _opening_decline(sentences: _Sentences, first: int) -> str | None:
    """The verdict when sentence ``first`` declines: a refusal unless it hedges into an answer.

    A sentence after the decline that describes the asked-for thing or reports what the source
    does say ("However, it mentions that ...") is no answer: the decline stands unless a later
    sentence infers one ("This suggests that ..."), and nothing after that declines again.
    """
    head = sentences[first]
    # "The text does not specify X, but it seems Y": the decline is a hedge before an answer.
    parts = _clauses(head)
    described = (
        len(parts) == 2
        and _is_refusal(parts[0])
        and _commits(parts[1])
        # "... the founder mentions the round but never says how much was raised": still declining
        and _STILL_DECLINING.match(parts[1]) is None
    )
    hedged = described and not _describes_instead(parts[1])
    rest = first + 1
    if not hedged:
        nxt = next(
            (i for i in range(first + 1, len(sentences)) if sentences.kind(i) not in "NPX"), None
        )
        if nxt is None:
            return _refusal_match(head) or head
        sentence = sentences[nxt]
        if _infers_answer(sentence):
            rest = nxt + 1
        elif (
            described
            or _describes_instead(sentence)
            or (_reports(sentence) and not _any_row(parts[0], _EXACTNESS))
        ):
            inferred = _inferred_after(sentences, nxt + 1)
            if inferred is not None:
                rest = inferred + 1
            elif (
                nxt == len(sentences) - 1
                and sentences.kind(nxt) == "C"
                and _any_row(parts[0], _IMPLICIT)
            ):
                rest = nxt + 1  # "... not explicitly stated. It only says that she reads a Bible."
            else:
                return _refusal_match(head) or head
        elif _hedges_into_answer(sentence):
            rest = nxt + 1
        else:
            return _refusal_match(head) or head
    later = sentences.first_refusal(rest)
    return None if later is None else (_refusal_match(later) or later)


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


def _sentinel_verdict(cleaned: str, sentinel: str, flat: str | None = None) -> str | None:
    """Return the sentinel when the text declines with it (not when it merely mentions it).

    The sentinel declines when it stands as the answer: alone, at the start of the output, at the
    start or end of a line or sentence ("... Unanswerable."), or as a predicate ("the answer is
    unanswerable because ...", "Answer: unanswerable"). It is only mentioned when used as an
    attribute mid-sentence ("handles unanswerable questions"), negated ("not unanswerable"), or as
    the label of a follow-up question after an answer ("Unanswerable: what is the size?").
    """
    if _norm(sentinel) not in (_norm(cleaned) if flat is None else flat):
        return None  # a cheap necessary condition: the sentinel's words, in order
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
        if _annotates_item(window, text[m.end() : m.end() + 8]):
            continue  # "... can raise uric acid levels (Unable to answer ...).": one item's note
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


def _annotates_item(before: str, after: str) -> bool:
    """Whether a sentinel between ``before`` and ``after`` is in parentheses after content.

    "6. Avoid stress, as it can raise uric acid levels (Unable to answer based on given
    passages).": a note on one item of the answer, like "(Passage 3)", not the verdict.
    """
    line = before.rsplit("\n", 1)[-1].rstrip(" \t")
    return (
        line.endswith("(") and after.lstrip(" .")[:1] == ")" and len(_WORD_RUN.findall(line)) >= 3
    )


def _sentinel_scoped(cleaned: str, flat: str, sentinel: str, shape: QuestionShape | None) -> bool:
    """Whether every sentinel after an answer is scoped to something else (see :func:`_gives_up`).

    "<answer> Unable to answer based on the given passages whether X." leaves the answer standing
    when X is not what was asked (without the question: when X is named at all), as does a
    sentinel in a hypothetical ("If ..., my response would be 'Unable to answer ...'"). A sentinel
    that opens the output, or stands bare after it, is the model's verdict.
    """
    sent = _norm(sentinel)
    if flat.startswith(sent):
        return False
    sentences = _Sentences(cleaned, flat)
    # the first informative sentence: not a preamble, nor a list number or heading ("1.")
    first = next((i for i in range(len(sentences)) if sentences.kind(i) not in "PN"), None)
    found = [i for i in range(len(sentences)) if sent in sentences[i]]
    if first is None or not found or found[0] <= first or sentences.kind(first) != "C":
        return False
    for i in found:
        core = _lead_stripped(sentences[i])
        pos = core.find(sent)
        if pos < 0:
            return False
        if (
            _HYPOTHETICAL.search(core, 0, pos)
            or _under_one_source_heading(sentences, i)
            or _resumes_answer(sentences, i)
        ):
            continue
        scope = _gives_up_scope(sentences, i, core[pos + len(sent) :], shape)
        if scope is None:
            if _scoped_to_passages(sentences, i):
                continue
            return False
        if scope and shape is not None and not shape.yes_no and _scope_asked(scope, core, shape):
            return False
    return True


#: Content sentences after a give-up (and its explanation) that show the answer went on.
_RESUMED_CONTENT = 5


def _resumes_answer(sentences: _Sentences, i: int) -> bool:
    """Whether the answer goes on after the give-up sentence ``i``, to its end.

    "<steps> Unable to answer based on given passages. The passages do not cover stuffed chops.
    If you want to make stuffed chops, follow these steps: <steps>": a decline followed by a
    committed answer is an answer, after content as at the opening. The give-up's own
    explanation (the declining sentences right after it) is skipped; then at least
    ``_RESUMED_CONTENT`` sentences of content must follow, the last informative one among them.
    """
    count = len(sentences)
    j = i + 1
    while j < count and sentences.refuses(j):
        j += 1
    if count - j < _RESUMED_CONTENT:
        return False
    last = next((k for k in range(count - 1, j - 1, -1) if sentences.kind(k) not in "NP"), None)
    if last is None or sentences.kind(last) != "C":
        return False
    content = 0
    for k in range(j, last + 1):
        if sentences.kind(k) == "C" and len(_WORD_RUN.findall(sentences[k])) >= 3:
            content += 1
            if content >= _RESUMED_CONTENT:
                return True
    return False


def _scoped_to_passages(sentences: _Sentences, i: int) -> bool:
    """Whether the sentence after ``i`` scopes it to some passages ("... in passages 2 and 4")."""
    return (
        i + 1 < len(sentences)
        and sentences.refuses(i + 1)
        and _ONE_SOURCE.search(_lead_stripped(sentences[i + 1])) is not None
    )


def _echoes(flat: str, question: str) -> bool:
    """Whether the output ``flat`` (normalised) is the question again, word for word."""
    return len(flat) <= 2 * len(question) + 8 and _WORD_RUN.findall(flat) == _question_words(
        question
    )


@functools.lru_cache(maxsize=256)
def _question_words(question: str) -> list[str]:
    """The words of ``question`` (normalised); read-only (cached)."""
    return _WORD_RUN.findall(_norm(question))


@functools.lru_cache(maxsize=256)
def _question_shape(question: str) -> QuestionShape:
    return QuestionShape(question)


@functools.lru_cache(maxsize=32)
def _sentinel_re(sentinel: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-]){re.escape(_norm(sentinel))}(?![\w-])", re.IGNORECASE)


def _check_sentinel(sentinel: object) -> None:
    if not isinstance(sentinel, str) or not sentinel.strip():
        raise ConfigurationError(f"sentinel must be a non-empty string, got {sentinel!r}")


class DeclinePattern:
    """A :data:`DeclineDetector` from a regular expression: an output declines when the pattern
    is found in it (searched case-insensitively, unless a compiled pattern is given).

    For the command line and ``selfroute.toml`` (``--decline-pattern``), and for a model whose
    declines a pattern describes: ``DeclinePattern(r"^(keine angaben|dazu steht nichts)")``.

    Args:
        pattern: The regular expression (a string, or a compiled ``re.Pattern`` used as it is).

    Raises:
        ConfigurationError: The pattern is empty, not valid, or matches the empty string (it would
            call every answer a decline).

    Examples:
        >>> german = DeclinePattern(r"^keine angaben")
        >>> parse_verdict("Keine Angaben zum Datum.", detector=german).matched
        "DeclinePattern('^keine angaben')"
        >>> german("Am 3. Mai.", None)
        False
    """

    def __init__(self, pattern: str | re.Pattern[str]) -> None:
        if isinstance(pattern, re.Pattern):
            compiled = pattern
        elif isinstance(pattern, str) and pattern.strip():
            try:
                compiled = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise ConfigurationError(
                    f"decline pattern {pattern!r} is not a valid regular expression: {exc}"
                ) from exc
        else:
            raise ConfigurationError(
                f"a decline pattern must be a non-empty regular expression, got {pattern!r}"
            )
        if compiled.search("") is not None:
            raise ConfigurationError(
                f"decline pattern {compiled.pattern!r} matches the empty string, so it would call "
                "every answer a decline"
            )
        self.pattern = compiled

    def __call__(self, text: str, question: str | None = None) -> bool:
        return self.pattern.search(text) is not None

    def __repr__(self) -> str:
        return f"DeclinePattern({self.pattern.pattern!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DeclinePattern) and self.pattern == other.pattern

    def __hash__(self) -> int:
        return hash(self.pattern)


def detector_name(detector: object) -> str:
    """How a decline detector is named in messages and in ``Verdict.matched``."""
    if isinstance(detector, DeclinePattern):
        return repr(detector)
    name = getattr(detector, "__qualname__", None) or type(detector).__qualname__
    return str(name)


def check_detector(detector: object) -> None:
    """Raise :class:`~selfroute.ConfigurationError` unless ``detector`` is ``None`` or callable."""
    if detector is not None and not callable(detector):
        raise ConfigurationError(
            "decline_detector must be a callable detector(text, question) returning True for a"
            f" decline, got {detector!r}"
        )


def _consult(detector: DeclineDetector, text: str, question: str | None) -> bool | None:
    """Ask a user's detector: ``True``, ``False``, ``None`` or a NumPy boolean. Its failures, and
    any other answer, are configuration errors, never routing signals."""
    try:
        decision = detector(text, question)
    except SelfRouteError:
        raise
    except Exception as exc:  # the user's code: name it, keep the cause
        name = detector_name(detector)
        raise ConfigurationError(
            f"decline_detector {name} raised {type(exc).__name__}: {exc}", detector=name
        ) from exc
    if decision is None or isinstance(decision, bool):
        return decision
    if type(decision).__name__ in ("bool_", "bool") and type(decision).__module__ == "numpy":
        return bool(decision)  # a NumPy boolean, from a classifier
    name = detector_name(detector)
    raise ConfigurationError(
        f"decline_detector {name} must return True (a decline), or False or None (not a "
        f"decline), got {decision!r}",
        detector=name,
    )


def parse_verdict(
    text: str | None,
    *,
    sentinel: str = DEFAULT_SENTINEL,
    strict: bool = False,
    question: str | None = None,
    detector: DeclineDetector | None = None,
) -> Verdict:
    """Classify a RAG-step output.

    Args:
        text: What the model wrote (``None`` is treated as empty).
        sentinel: The decline word the prompt asked for (a non-empty string).
        strict: If true, only the sentinel counts as a decline; natural-language refusals are taken
            as answers. Empty output still counts as declined.
        question: The question the output answers, when known. It changes these readings: an
            opening "No, ..." (or "The paper does not mention X" for "Does the paper mention X?")
            answers a yes/no question instead of declining; an answer that goes on to say the
            asked-for item is missing ("He died in 1972. The passages do not mention the
            cause." for "How did he die?") is a partial answer, which declines (escalates); a
            give-up scoped to something the question does not ask leaves the answer; and an
            output that only repeats the question declines.
        detector: Your own decline detection (:data:`DeclineDetector`), asked about every
            output the rules here read as an answer: ``True`` makes it a decline (kind
            ``refusal``, ``matched`` naming the detector); ``False`` or ``None`` leave the
            answer. It adds declines and never removes one: with ``strict=True`` only the
            sentinel and your detector decline.

    Returns:
        A :class:`Verdict`. ``verdict.declined`` is true for the sentinel, natural refusals (unless
        ``strict``), empty and garbled output.

    Raises:
        ConfigurationError: ``sentinel`` is empty or not a string; ``detector`` is not callable,
            raised, or returned something other than ``True``, ``False`` or ``None``.

    The sentinel declines when it stands as the answer (alone, opening the output, opening or
    closing a line or sentence, or as a predicate: "the answer is unanswerable because ..."), not
    when it is merely mentioned ("handles unanswerable questions"). A natural refusal must *open*
    the answer ("The text does not mention ...", "I do not have enough context ...", "As an AI I
    cannot read the book. Please provide ...") or *conclude* it ("Therefore, I cannot determine
    ..."); an answer that merely contains such words elsewhere, or that hedges and then commits
    ("The text does not say, but it seems he is a writer."), is an answer. Declines are
    recognised by their structure (:mod:`selfroute._verdict._rules`): a source noun phrase with a negated
    verb of information ("The text chunks provided do not explicitly mention ..."), absence
    constructions ("There is no discussion of ...", "None mentioned."), inability ("I could not
    find ..."), apologies, and pointers elsewhere ("You may need to consult other reports"); a
    decline followed by a description of what the source covers is still a decline. See
    ``docs/verdict.md`` for the measured precision and recall on real model outputs, tuning and
    held out.

    Examples:
        >>> parse_verdict("**Unanswerable.**").kind
        <VerdictKind.SENTINEL: 'sentinel'>
        >>> parse_verdict("The text does not mention his age.").declined
        True
        >>> parse_verdict("Answer: Paris").answer
        'Paris'
        >>> parse_verdict("No, the paper does not mention BERT.", question="Do they use BERT?").kind
        <VerdictKind.ANSWERED: 'answered'>
    """
    _check_sentinel(sentinel)
    check_detector(detector)
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
    verdict = _rules_verdict(cleaned, sentinel, strict, question, titled=_titled(body, question))
    if detector is not None and verdict.answered and _consult(detector, cleaned, question):
        return Verdict(kind=VerdictKind.REFUSAL, answer=cleaned, matched=detector_name(detector))
    return verdict


def _rules_verdict(
    cleaned: str, sentinel: str, strict: bool, question: str | None, *, titled: bool = False
) -> Verdict:
    """The rules' verdict on a cleaned output that has letters or digits (``titled``: see
    :func:`_titled`)."""
    flat = _norm(cleaned)
    shape = _question_shape(question) if question and question.strip() else None
    matched = _sentinel_verdict(cleaned, sentinel, flat)
    if matched is not None and not _sentinel_scoped(cleaned, flat, sentinel, shape):
        return Verdict(kind=VerdictKind.SENTINEL, answer=cleaned, matched=matched)
    if not strict:
        if shape is not None and _echoes(flat, question or ""):
            # "types of food in france" for "types of food in france": no answer at all
            return Verdict(kind=VerdictKind.REFUSAL, answer=cleaned, matched=cleaned)
        phrase = _refusal_verdict(cleaned, shape, flat, titled=titled)
        if phrase is not None:
            return Verdict(kind=VerdictKind.REFUSAL, answer=cleaned, matched=phrase)
    return Verdict(kind=VerdictKind.ANSWERED, answer=cleaned)


# -- streaming support ------------------------------------------------------------------------
_DECLINE_OPENINGS = DECLINE_OPENINGS


# "The provided passages do not ...": a source noun phrase, then a negation. Streamed text is held
# while it can still grow into this shape, and released as soon as a word leaves it ("The text was
# written"). The vocabulary is the detector's own (:mod:`selfroute._verdict._vocabulary`).
_SOURCE_WORDS = frozenset([*SOURCE_HEADS, *INSTRUMENT_HEADS])
_SOURCE_OPENERS = frozenset(
    [*SOURCE_DETERMINERS, *SOURCE_MODIFIERS, "none", "neither", "nothing", "nowhere", "no", "not"]
)
_SOURCE_LINKS = frozenset(["of", "in", "within", "from", "among", "throughout", "one"])
_QUANTIFIERS = frozenset(["none", "neither", "nothing", "nowhere", "not", "one"])
#: Words that cannot be a modifier inside a source noun phrase: verbs and function words.
_NOT_MODIFIERS = FUNCTION_WORDS | frozenset(["said", "says", "shall"])
_SOURCE_POST = frozenset(
    ["provided", "given", "supplied", "above", "below", "here", "retrieved", "shown", "shared",
     "quoted", "listed", "available", "you", "i", "we", "have", "that", "which", "me", "us",
     "from", "of", "in", "the", "this", "these", "question", "at", "hand", "excerpt", "you've",
     "i've", "we've", "earlier", "previously", "all", "both", "each"]
)  # fmt: skip
_SOURCE_ADVERBS = frozenset(word for adverb in ADVERBS for word in adverb.split())
#: Verbs opening a negation, and the words one of which must follow (``None``: nothing needed).
_NEEDS_NOT = frozenset(["not", "never", "n't", "seem", "seems", "appear", "appears", "silent"])
_NEEDS_NONE = frozenset(["no", "nothing", "little", "not", "none", "zero", "absolutely"])
_SOURCE_NEGATIONS: dict[str, frozenset[str] | None] = {
    **dict.fromkeys(
        [
            "does",
            "do",
            "did",
            "is",
            "are",
            "was",
            "were",
            "can",
            "could",
            "will",
            "would",
            "may",
            "might",
            "has",
            "have",
            "had",
            "remains",
            "remain",
            "seems",
            "seem",
            "appears",
            "appear",
        ],
        _NEEDS_NOT | _NEEDS_NONE,
    ),
    **dict.fromkeys(
        [
            "makes",
            "make",
            "made",
            "provides",
            "provide",
            "contains",
            "contain",
            "gives",
            "give",
            "offers",
            "offer",
            "mentions",
            "mention",
            "says",
            "say",
            "holds",
            "hold",
            "includes",
            "include",
            "lists",
            "list",
            "bears",
            "yields",
        ],
        _NEEDS_NONE,
    ),
    **dict.fromkeys(
        [
            "doesn't",
            "don't",
            "didn't",
            "isn't",
            "aren't",
            "wasn't",
            "weren't",
            "cannot",
            "can't",
            "never",
            "lacks",
            "lack",
            "fails",
            "failed",
            "hasn't",
            "haven't",
            "won't",
            "wouldn't",
            "omits",
            "omit",
        ],
        None,
    ),
}


_SOURCE_NEGATION_WORDS = frozenset(_SOURCE_NEGATIONS)
#: Each word set above, sorted (for :func:`_opens_any`).
_SORTED_WORDS: dict[frozenset[str], tuple[str, ...]] = {}


def _sorted_words(words: frozenset[str]) -> tuple[str, ...]:
    found = _SORTED_WORDS.get(words)
    if found is None:
        found = _SORTED_WORDS[words] = tuple(sorted(words))
    return found


def _opens_any(ordered: tuple[str, ...], text: str) -> bool:
    """Whether ``text`` is a prefix of one of the sorted strings ``ordered`` (every string that
    starts with ``text`` sorts at or right after the place ``text`` would take)."""
    i = bisect.bisect_left(ordered, text)
    return i < len(ordered) and ordered[i].startswith(text)


def _could_be_source_negation(norm: str) -> bool:
    """Whether ``norm`` is, or could still grow into, "<source phrase> <negation> ..."."""
    words = norm.split(" ")
    state = "start"  # start -> phrase -> head -> verb -> done
    needed: frozenset[str] | None = None
    modifiers = 0
    for i, word in enumerate(words):
        last = i == len(words) - 1
        word = word.strip(",;:()[]\"'")

        def fits(options: frozenset[str], word: str = word, last: bool = last) -> bool:
            return word in options or (last and _opens_any(_sorted_words(options), word))

        if state in ("start", "phrase"):
            if fits(_SOURCE_WORDS):
                state = "head" if not (last and fits(_SOURCE_OPENERS)) else "phrase"
            elif fits(_SOURCE_OPENERS) or (
                state == "phrase" and i > 0 and words[i - 1] in _QUANTIFIERS and fits(_SOURCE_LINKS)
            ):
                state = "phrase"
            elif state == "phrase" and modifiers < 3 and word not in _NOT_MODIFIERS:
                modifiers += 1  # "the provided *financial* statement", "the *10-k* filing"
            else:
                return False
        elif state == "head":
            if re.fullmatch(r"\d+|[ivx]+|#?\d+", word) or fits(_SOURCE_WORDS):
                continue  # "paper 2", "text chunks"
            if word in ("and", "or", "&") and words[i - 1].strip(",").isdigit():
                continue  # "passages 1, 2 and 3"
            if fits(_SOURCE_NEGATION_WORDS):
                if last:
                    return True
                needed = _SOURCE_NEGATIONS.get(word)
                state = "verb" if needed else "done"
            elif fits(_SOURCE_ADVERBS) or fits(_SOURCE_POST):
                continue
            else:
                return False
        elif state == "verb":
            if fits(_SOURCE_ADVERBS):
                continue
            if not fits(needed or frozenset()):
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
    "after carefully ",
    "after checking ",
    "after examining ",
    "after looking ",
    "after going ",
    "upon ",
    "looking at ",
    "judging ",
    "from what i can ",
    "in the provided ",
    "in the given ",
    "from the provided ",
    "from the given ",
    "here's the answer",
    "here is the answer",
    "however, i must ",
    "i must ",
    "please note",
    "no,",
    "however,",
    "but ",
    "so,",
    "note:",
    "note that",
    "important:",
    "n.b.",
    "therefore,",
    "thus,",
    "sadly,",
    "regrettably,",
    "alas,",
    "overall,",
    "in short,",
    "in summary,",
    "to be honest,",
)
_SORTED_LEAD_INS = tuple(sorted(_STREAM_LEAD_INS))
_SORTED_OPENINGS = tuple(sorted(_DECLINE_OPENINGS))
#: A first sentence that says nothing yet ("Sure!", "Thank you for the passages."): what follows
#: it decides.
_STREAM_PREAMBLE = re.compile(
    r"^(?:sure|of course|great question|good question|thank you|thanks|i'd be happy to help|"
    r"i would be happy to help|i'd be glad to help)\b"
    r"[^.!?]{0,60}(?:[.!?]+(?: |$)|$)"
)


def _strip_preamble(norm: str) -> tuple[str, bool]:
    """``norm`` without opening preamble sentences, and whether one is still being written."""
    for _ in range(3):
        m = _STREAM_PREAMBLE.match(norm)
        if m is None:
            return norm, False
        if not re.search(r"[.!?]", m.group(0)):
            return norm, len(norm) <= 70  # "Sure, I'd be happy ..." may still end as a preamble
        norm = norm[m.end() :].lstrip()
    return norm, False


#: A list item's marker with no text yet ("-", "1.").
_STREAM_BARE_MARK = re.compile(r"[-•+]|\d{1,2}[.)]?")
#: A list item's marker before its text ("- ", "2. ").
_STREAM_LIST_MARK = re.compile(r"^(?:[-•+]|\d{1,2}[.)])(?: +|$)")


def could_start_decline(
    prefix: str, *, sentinel: str = DEFAULT_SENTINEL, strict: bool = False
) -> bool:
    """Whether streamed text so far could still turn out to be a decline.

    Used by the streaming sniffer: text is held back while this is true, and released as soon as
    it is false. ``prefix`` is the cleaned text so far (reasoning blocks and labels removed).
    A lead-in such as "Based on the passage," is held until it ends; then what follows decides.
    An opening preamble ("Sure! ...", "Thank you for the passages.") is skipped once it ends.
    """
    _check_sentinel(sentinel)
    norm = _norm(_clean(prefix)).lstrip(_QUOTES + "*_#>([ ")
    if _STREAM_BARE_MARK.fullmatch(norm):
        return True  # "1." or "-": a list item's text has not come yet
    norm = _STREAM_LIST_MARK.sub("", norm, count=1).lstrip(_QUOTES + "*_#>([ ")
    if not norm:
        return True
    sent = _norm(sentinel)
    if strict:
        return sent.startswith(norm) or norm.startswith(sent)

    def opens(text: str) -> bool:
        # Whether text and an opening (or the sentinel) are a prefix one of the other.
        if sent.startswith(text) or text.startswith(sent) or text.startswith(_DECLINE_OPENINGS):
            return True
        if _opens_any(_SORTED_OPENINGS, text):
            return True
        return _could_be_source_negation(text)

    norm, pending = _strip_preamble(norm)
    if pending or not norm:
        return True
    if opens(norm):
        return True
    if norm.startswith("no, "):  # "No, the text does not ..." declines unless the question is polar
        return opens(norm[4:]) if norm[4:] else True
    if not norm.startswith(_STREAM_LEAD_INS) and not _opens_any(_SORTED_LEAD_INS, norm):
        return False  # neither a lead-in nor the start of one: the loop below finds none
    for lead in _STREAM_LEAD_INS:
        if lead.startswith(norm):
            return True  # the lead-in is still being written
        if norm.startswith(lead):
            if not re.search(r"[,:]", norm) or norm.endswith((",", ":")):
                return True  # "Based on the passage" -- what follows has not come yet
            core = _lead_stripped(norm)
            return core == "" or (core != norm and opens(core))
    return False
