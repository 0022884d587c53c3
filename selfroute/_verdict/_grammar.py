"""The structure of a decline: the grammar :func:`selfroute.parse_verdict` recognises.

A model that will not answer from its passages says so in a few grammatical shapes, whatever words
it picks:

- a **source noun phrase** (any determiner and modifiers, a head such as *text*, *passages*,
  *chunks*, *report*, *filing*, *statement*, *paper 2*, *transcript*, optionally a post-modifier
  such as *provided* or *from the paper*) + a **negated verb of information** (*mention*,
  *discuss*, *provide*, *specify*, *state*, *say*, *contain*, *include*, *detail*, *describe*,
  *address*, *cover*, *indicate*, *reveal*, *give*, *explain*, *list*, *elaborate* ... in any
  inflection, with optional adverbs such as *explicitly*, *directly*, *specifically*): "The text
  chunks provided do not explicitly mention ...", "Paper 2 never discusses ...", "None of the
  passages mention ...", "The filing makes no mention of ...";
- an **absence construction** or negative existential: "There is no discussion of ...", "No
  specific figures were provided ...", "None mentioned.", "X has not been evaluated on Y in the
  provided paper";
- an **inability** of the speaker: "I could not find ...", "I do not see any mention of ...",
  "Unable to answer based on given passages";
- a **pointer elsewhere**: "You may need to consult other reports".

The shapes themselves are rows of the rule table (:mod:`selfroute._verdict._rules`), their words
those of :mod:`selfroute._verdict._vocabulary`; this module tries them on one normalised sentence
(lower case, straight apostrophes, single spaces) and reads what a question asks for.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from selfroute._verdict._rules import RuleKind, compiled, rule, rules
from selfroute._verdict._vocabulary import ADVERBS, ADVS, ANY_VERB, BASE, HEAD, NEGATION

__all__: list[str] = []

#: ``(name, pattern, guards)`` of each shape row of the table, in order: a shape is tried only on
#: text holding one of its guards, and its pattern is compiled the first time it is tried
#: (compiling all of them costs a command-line ``ask`` tens of milliseconds of start-up, and most
#: answers need none).
SHAPES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (r.name, r.pattern, r.guards) for r in rules(RuleKind.SHAPE)
)


#: A negated verb of information opening a clause ("doesn't say", "it does not specify").
NEGATED_VERB = re.compile(rf"^(?:(?:it|they|the \w+) )?{NEGATION}{ADVS} {BASE}\b")
#: A negated verb of information anywhere in a sentence ("... do not provide", "never mention").
NEGATED_INFO = re.compile(rf"\b{NEGATION}{ADVS} {BASE}\b")


#: A pointer elsewhere: "you may need to consult other reports", "I recommend checking ...".
POINTER = re.compile(rule("pointer").pattern)
#: The source described instead of the answer: "It focuses on ...", "The report primarily
#: discusses ...", "The passages only talk about ...".
COVERS_INSTEAD = re.compile(rule("covers-instead").pattern)


def decline_shape(core: str) -> tuple[str, str] | None:
    """The first decline shape that ``core`` (one normalised sentence) shows.

    Returns:
        ``(shape name, matched text)``, or ``None``.
    """
    for name, pattern, guards in SHAPES:
        for guard in guards:  # a loop, not any(): this runs for every sentence with a negation
            if guard in core:
                break
        else:
            continue
        m = compiled(pattern).search(core)
        if m:
            return name, m.group(0)
    return None


# -- the question -------------------------------------------------------------------------------
def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_AUXILIARIES = _words(
    "is are was were am do does did can could has have had will would should shall may might must "
    "isn't aren't wasn't weren't doesn't don't didn't can't couldn't hasn't haven't won't wouldn't "
    "shouldn't"
)
#: What a wh-word asks for, as nouns a decline may use for it ("the exact *date* is not given").
_WH_NOUNS: dict[str, tuple[str, ...]] = {
    "when": ("date", "time", "year", "day", "month", "period", "timing", "timeline", "era"),
    "where": ("location", "place", "city", "country", "site", "region", "address", "area"),
    "who": ("name", "person", "identity", "people", "individual", "author", "names"),
    "whom": ("name", "person", "identity"),
    "whose": ("name", "owner", "person"),
    "why": ("reason", "reasons", "cause", "causes", "motivation", "explanation", "purpose"),
    "how": (
        "method",
        "way",
        "process",
        "procedure",
        "manner",
        "mechanism",
        "steps",
        "cause",
        "instructions",
        "guidance",
        "directions",
        "tips",
        "advice",
        "technique",
        "ways",
    ),
    "many": ("number", "count", "amount", "figure", "figures", "total", "quantity", "numbers"),
    "much": ("amount", "cost", "price", "figure", "figures", "number", "total", "value", "sum"),
    "long": ("time", "duration", "length", "period", "amount"),
    "old": ("age",),
    "big": ("size",),
    "large": ("size",),
    "far": ("distance",),
}
_WH_WORDS = frozenset(("when", "where", "who", "whom", "whose", "why", "how"))
#: Function words: never a modifier inside a source phrase, never what a question asks for.
FUNCTION_WORDS = _words(
    "a about after an and are as at be because been before being but by can could did do does for "
    "from had has have he her here hers him his how i if in into is it its may me might must my "
    "no not of on or our over she should so than that the their them then there these they this "
    "those to was we were what when where which while who whom whose why will with would you your"
)
#: Words that never name what is asked for ("the provided text does not give *specific details*").
_GENERIC = (
    FUNCTION_WORDS
    | _words(
        "regarding concerning any some exact exactly specific specifically explicit explicitly direct "
        "directly clear clearly precise precisely particular detailed details detail information info "
        "data mention answer question questions query passages passage text texts context document "
        "documents chunks chunk excerpt excerpts source sources provided given retrieved above paper "
        "article report whether also other such further more much many enough sufficient regard "
        "relation terms kind type sort user one figure figures number numbers amount amounts value "
        "values anything something nothing potential possible"
    )
    | frozenset(w for adverb in ADVERBS for w in adverb.split())
)
#: Pronouns that point back at something the answer said ("how to do *this*").
_ANAPHORS = _words("this that these those it them such")


@functools.lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    for suffix in ("ings", "ing", "ies", "ied", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e")


def content_stems(text: str) -> frozenset[str]:
    """Stems of the content words of ``text`` (normalised): what the words are about."""
    words = _CONTENT_WORDS.findall(text)
    return frozenset(_stem(w) for w in words if w not in _GENERIC and len(w) > 1)


_SPACES = re.compile(r"\s+")
_QUESTION_LABEL = re.compile(r"^(?:question|q|query)\s*[:.]\s*")
_QUESTION_WORDS = re.compile(r"[a-z0-9']+")
_CONTENT_WORDS = re.compile(r"[a-z0-9]+")
#: A polar question about what the source says: "Does the paper mention X?".
_ABOUT_SOURCE = re.compile(rf"\b(?:{HEAD}|they|it|authors?)(?: \w+)?{ADVS} {ANY_VERB}\b")


class QuestionShape:
    """What a question asks, as much as a decline detector needs to know.

    Attributes:
        yes_no: A polar question ("Does the paper use BERT?"): "No, ..." answers it.
        about_source: A polar question about what the source says ("Does the paper mention X?"):
            "The paper does not mention X" answers it.
        own: Stems of the question's content words.
        terms: ``own`` and the stems of the nouns its wh-words ask for.
    """

    __slots__ = ("about_source", "own", "terms", "words", "yes_no")

    def __init__(self, question: str) -> None:
        text = _SPACES.sub(" ", question.replace("’", "'").lower()).strip(" \"'*_`")
        text = _QUESTION_LABEL.sub("", text)
        words = _QUESTION_WORDS.findall(text)
        first = words[0] if words else ""
        polar = first in _AUXILIARIES and (
            " or " not in text or text.rstrip("?. ").endswith("or not")
        )
        self.yes_no = polar
        self.about_source = polar and bool(_ABOUT_SOURCE.search(text))
        extra = [n for w in words if w in _WH_NOUNS for n in _WH_NOUNS[w]]
        self.own = content_stems(text)
        self.terms = self.own | frozenset(_stem(n) for n in extra)
        self.words = frozenset(words)

    def mentions(self, text: str) -> bool:
        """Whether any content word of ``text`` is one of the question's own (stem or prefix)."""
        prefixes = {t[:5] for t in self.own}
        return any(s in self.own or s[:5] in prefixes for s in content_stems(text))

    def asks_for(self, absent: str) -> bool:
        """Whether ``absent`` (what a decline says is missing) is what the question asks for.

        True when the missing thing names nothing beyond the question: every content word of it is
        a word of the question, or a noun its wh-word asks for ("when" -> *date*). "He was born in
        1900; *the cause of his death* is not mentioned" does not decline "When was he born?".
        """
        for wh in _WH_WORDS & _words(_CONTENT_WORDS.sub(lambda m: f" {m.group()} ", absent)):
            # "... but doesn't say where": asked only if the question asks where (or for a place)
            if wh not in self.words and not any(_stem(n) in self.terms for n in _WH_NOUNS[wh]):
                return False
        stems = content_stems(absent)
        if not stems and _ANAPHORS & _words(_CONTENT_WORDS.sub(lambda m: f" {m.group()} ", absent)):
            return False  # "the details on how to do this": a point of the answer, not the question
        return all(self._in_question(stems))

    def share(self, absent: str) -> float:
        """The share of the content words of ``absent`` that are the question's (0 for none)."""
        hits = self._in_question(content_stems(absent))
        return sum(hits) / len(hits) if hits else 0.0

    def _in_question(self, stems: Iterable[str]) -> list[bool]:
        """For each content stem: whether it is a word of the question (or shares its first five
        letters with one)."""
        prefixes = {t[:5] for t in self.terms}
        return [s in self.terms or s[:5] in prefixes for s in stems]
