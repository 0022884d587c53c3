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

This module holds the vocabulary once (the parser, the streaming sniffer and the grammar property
tests all read it) and compiles it into patterns that run on one normalised sentence (lower case,
straight apostrophes, single spaces). It is dependency-free and does no work at import beyond
compiling a handful of regular expressions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

__all__: list[str] = []

#: Head nouns of a source noun phrase (singular, plural).
SOURCE_HEADS: tuple[str, ...] = (
    "text", "texts", "passage", "passages", "context", "contexts", "document", "documents",
    "doc", "docs", "article", "articles", "excerpt", "excerpts", "extract", "extracts",
    "chunk", "chunks", "snippet", "snippets", "segment", "segments", "section", "sections",
    "paragraph", "paragraphs", "page", "pages", "source", "sources", "material", "materials",
    "paper", "papers", "study", "studies", "report", "reports", "filing", "filings",
    "statement", "statements", "book", "books", "novel", "story", "stories", "narrative",
    "transcript", "transcripts", "content", "contents", "information", "data", "details",
    "summary", "chapter", "chapters", "abstract", "table", "tables", "appendix", "input",
    "record", "records", "question", "author", "authors", "writer", "speaker", "speakers",
    "manuscript", "essay", "entry", "entries", "letter", "memo", "minutes", "meeting",
    "conversation", "dialogue", "thread", "post", "webpage", "website",
)  # fmt: skip
#: Heads of a *retrieval* source: the things a RAG prompt hands the model.
RETRIEVAL_HEADS: tuple[str, ...] = (
    "passage", "passages", "context", "contexts", "excerpt", "excerpts", "chunk", "chunks",
    "snippet", "snippets", "segments", "extracts", "documents", "sources",
)  # fmt: skip
#: Words that may modify a source head before it ("the provided financial statement").
SOURCE_DETERMINERS: tuple[str, ...] = (
    "the", "this", "these", "that", "those", "its", "any", "each", "every", "both", "all",
    "your", "my", "our", "their", "his", "her", "a", "an", "such", "either", "neither",
)  # fmt: skip
SOURCE_MODIFIERS: tuple[str, ...] = (
    "provided", "given", "above", "supplied", "retrieved", "available", "following", "shared",
    "excerpted", "quoted", "attached", "referenced", "cited", "relevant", "current", "short",
    "full", "original", "same", "other", "second", "first", "third", "last", "remaining",
)  # fmt: skip
#: Post-modifiers after a head ("the text provided", "the passages you shared", "paper 2").
_POST = (
    r"(?: (?:\d+|[ivx]+|\[\d+\]|#\d+|[a-e])(?:(?:,| and|, and|,? or|,? &) \d+){0,5})?"
    r"(?: (?:provided|given|supplied|above|below|here|retrieved|shown|shared|quoted|listed|"
    r"in question|at hand|available|(?:that |which )?(?:you|i|we)(?:'ve| have| were| was)? "
    r"(?:provided|shared|given|supplied|read|reviewed|have)(?: me| us)?|"
    r"(?:from|of|in) (?:the |this |these |your )?(?:\w+ ){0,2}?(?:text|paper|report|document|"
    r"article|book|filing|study|statement|passages?|context|chunks?))"
    # "the passages given above": a participle and a place
    r"(?: (?:above|below|here|earlier|previously))?)?"
)
#: Adverbs between the negation and the verb ("does not explicitly mention").
ADVERBS: tuple[str, ...] = (
    "explicitly", "directly", "specifically", "clearly", "definitively", "actually", "really",
    "exactly", "precisely", "expressly", "further", "even", "fully", "necessarily", "yet",
    "particularly", "concretely", "sufficiently", "appear to", "seem to",
    "in any way", "anywhere", "at all", "here", "themselves", "itself", "otherwise",
)  # fmt: skip

#: Verbs of information: base form -> (third person singular, past tense, past participle).
INFO_VERBS: dict[str, tuple[str, str, str]] = {
    "mention": ("mentions", "mentioned", "mentioned"),
    "discuss": ("discusses", "discussed", "discussed"),
    "provide": ("provides", "provided", "provided"),
    "specify": ("specifies", "specified", "specified"),
    "state": ("states", "stated", "stated"),
    "say": ("says", "said", "said"),
    "contain": ("contains", "contained", "contained"),
    "include": ("includes", "included", "included"),
    "detail": ("details", "detailed", "detailed"),
    "describe": ("describes", "described", "described"),
    "address": ("addresses", "addressed", "addressed"),
    "cover": ("covers", "covered", "covered"),
    "indicate": ("indicates", "indicated", "indicated"),
    "reveal": ("reveals", "revealed", "revealed"),
    "give": ("gives", "gave", "given"),
    "explain": ("explains", "explained", "explained"),
    "list": ("lists", "listed", "listed"),
    "elaborate": ("elaborates", "elaborated", "elaborated"),
    "offer": ("offers", "offered", "offered"),
    "report": ("reports", "reported", "reported"),
    "disclose": ("discloses", "disclosed", "disclosed"),
    "tell": ("tells", "told", "told"),
    "name": ("names", "named", "named"),
    "identify": ("identifies", "identified", "identified"),
    "refer": ("refers", "referred", "referred"),
    "reference": ("references", "referenced", "referenced"),
    "answer": ("answers", "answered", "answered"),
    "clarify": ("clarifies", "clarified", "clarified"),
    "present": ("presents", "presented", "presented"),
    "define": ("defines", "defined", "defined"),
    "note": ("notes", "noted", "noted"),
    "cite": ("cites", "cited", "cited"),
    "outline": ("outlines", "outlined", "outlined"),
    "supply": ("supplies", "supplied", "supplied"),
    "quantify": ("quantifies", "quantified", "quantified"),
    "establish": ("establishes", "established", "established"),
    "document": ("documents", "documented", "documented"),
    "record": ("records", "recorded", "recorded"),
    "confirm": ("confirms", "confirmed", "confirmed"),
    "touch on": ("touches on", "touched on", "touched on"),
    "talk about": ("talks about", "talked about", "talked about"),
    "speak to": ("speaks to", "spoke to", "spoken to"),
    "go into": ("goes into", "went into", "gone into"),
    "delve into": ("delves into", "delved into", "delved into"),
    "expand on": ("expands on", "expanded on", "expanded on"),
    "comment on": ("comments on", "commented on", "commented on"),
    "deal with": ("deals with", "dealt with", "dealt with"),
    "feature": ("features", "featured", "featured"),
    "make clear": ("makes clear", "made clear", "made clear"),
    "make it clear": ("makes it clear", "made it clear", "made it clear"),
    "shed light on": ("sheds light on", "shed light on", "shed light on"),
    "shed any light on": ("sheds any light on", "shed any light on", "shed any light on"),
    "shed much light on": ("sheds much light on", "shed much light on", "shed much light on"),
    "get into": ("gets into", "got into", "gotten into"),
    "break it down": ("breaks it down", "broke it down", "broken it down"),
    "hold": ("holds", "held", "held"),
    "relate to": ("relates to", "related to", "related to"),
    "pertain to": ("pertains to", "pertained to", "pertained to"),
    "break down": ("breaks down", "broke down", "broken down"),
    "itemize": ("itemizes", "itemized", "itemized"),
    "spell out": ("spells out", "spelled out", "spelled out"),
    "pinpoint": ("pinpoints", "pinpointed", "pinpointed"),
}
#: Nouns whose absence is a decline ("there is no *mention* of ...").
ABSENCE_NOUNS: tuple[str, ...] = (
    "mention", "mentions", "information", "info", "discussion", "discussions", "detail",
    "details", "specifics", "data", "reference", "references", "indication", "indications",
    "description", "explanation", "answer", "answers", "record", "records", "figure", "figures",
    "statement", "specification", "context", "clue", "clues", "hint", "note", "numbers",
    "breakdown", "elaboration", "clarification", "direct answer", "definitive answer",
    "documentation", "data points", "text", "passage", "evidence in the", "content",
)  # fmt: skip
#: Verbs a speaker fails to do when declining ("I could not *find* ...").
_SEEK = (
    r"(?:determine|answer|find|tell|say|state|identify|know|infer|locate|confirm|extract|"
    r"pinpoint|conclude|ascertain|verify|discern|deduce|spot|see|notice|establish|gather|"
    r"retrieve|glean|derive|be (?:sure|certain)|give (?:you )?(?:a|an) (?:\w+ )?answer|"
    r"provide (?:you )?(?:a|an|the) (?:\w+ )?answer|respond)"
)


def _trie(words: Iterable[str]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}  # a word ends here
    return root


def _branches(node: dict[str, Any]) -> list[str]:
    """The alternatives below a trie node: longer continuations first, then the word's end."""
    out = [re.escape(c).replace("\\ ", " ") + _group(child) for c, child in node.items() if c]
    return [*out, ""] if "" in node else out


def _group(node: dict[str, Any]) -> str:
    branches = _branches(node)
    if branches == [""]:
        return ""
    if len(branches) == 1:
        return branches[0]
    return "(?:" + "|".join(branches) + ")"


def _alt(words: Iterable[object]) -> str:
    """A regex alternation of ``words`` (escaped, spaces literal), written as a trie.

    ``(?:mention(?:s|ed|)|...)`` matches what ``(?:mentioned|mentions|mention|...)`` matches, in
    the same order of preference (where several words fit at one place, one is a prefix of the
    other, and both forms try the longer first), but the regex engine tests each character once
    instead of once per word: a list of a hundred words costs little more than one word.
    """
    return "(?:" + "|".join(_branches(_trie({str(w) for w in words}))) + ")"


_HEAD = _alt(SOURCE_HEADS)
_RHEAD = _alt(RETRIEVAL_HEADS)
_ADV = _alt(ADVERBS)
_ADVS = rf"(?: {_ADV}){{0,3}}"
_BASE = _alt(INFO_VERBS)
_THIRD = _alt(v[0] for v in INFO_VERBS.values())
_PAST = _alt(v[1] for v in INFO_VERBS.values())
_PARTICIPLE_INFO = _alt(v[2] for v in INFO_VERBS.values())
_ANY_VERB = _alt([*INFO_VERBS, *(f for v in INFO_VERBS.values() for f in v)])
_ABSENT = _alt(ABSENCE_NOUNS)
#: Nouns of the information a how-question asks for ("no specific *instructions* are given").
_INFO_NOUN = _alt(
    ["instructions", "guidance", "guidelines", "recommendations", "directions", "steps", "tips",
     "advice", "examples", "specific instructions", "suggestions", "explanations", "descriptions"]
)  # fmt: skip
#: Modifiers and post-modifiers that make a source one handed to the model ("the provided data").
_HANDED = ("provided", "given", "supplied", "retrieved", "above", "attached", "shared", "following")
#: Verbs that state content, but a decline only of a source handed to the model.
_WEAK_VERB = _alt(["show", "display", "depict", "illustrate", "capture", "feature"])
#: Giving up on the question itself ("unable to answer the question", "those parts of it").
GIVES_UP_QUESTION = (
    r"(?:\b(?:cannot|can't|can not|unable to|not able to|could not|couldn't|impossible to|not "
    r"possible to)|(?:\bnot|n't|\bwithout|\blacks?|\blacking|\binsufficient|\bno) (?:\w+ ){0,3}?"
    r"(?:information|details|context|data) to) "
    r"(?:\w+ ){0,2}?(?:answer|respond to|address|fully answer) (?:the|this|your|that|those|these|"
    r"some|other|the remaining|any) (?:\w+ ){0,2}?(?:questions?|query|(?:parts?|aspects?|portions?|"
    r"halves|half) of (?:the|your|this) (?:question|query))\b|"
    r"\bit (?:is|was) (?:unable|not able) to (?:\w+ ){0,2}?(?:answer|determine|find|say|tell|"
    r"identify|state|conclude|confirm)\b"
)
#: Participles that state absence in a passive ("X is not *mentioned*", "no date is *given*").
_PARTICIPLE = (
    r"(?:" + _PARTICIPLE_INFO[3:-1] + r"|found|known|available|present|contained|covered|"
    r"visible|evident|apparent|clear|determinable|answerable|touched upon|included|explored|"
    r"examined|investigated|evaluated|measured|tested|studied|analy[sz]ed|considered|"
    r"quantified|itemi[sz]ed|broken down|spelled out|spelt out)"
)
#: A subject that can stand for the source in a decline.
#: ("The passages provided *all* fail to mention ...": a floating quantifier after it.)
_SUBJECT = rf"(?:\b{_HEAD}{_POST}(?: all| both| each)?|\b(?:it|they))"
_NEGATION = (
    r"(?:does not|doesn't|does n't|do not|don't|do n't|did not|didn't|cannot|can't|can not|"
    r"could not|couldn't|will not|won't|would not|wouldn't|may not|might not|fails? to|"
    r"failed to|seems? not to|appears? not to|never)"
)

# -- the shapes -----------------------------------------------------------------------------------
_SHAPES: tuple[tuple[str, str], ...] = (
    # "The text chunks provided do not (explicitly) mention", "Paper 2 does not discuss"
    ("source-negation", rf"{_SUBJECT}{_ADVS} {_NEGATION}{_ADVS} {_BASE}\b"),
    # "The passage does not have (any) information", "the text doesn't have the answer"
    (
        "source-has-no",
        rf"{_SUBJECT}{_ADVS} {_NEGATION}{_ADVS} (?:have|hold|carry) (?:any |enough |the |a |an |"
        r"specific |sufficient |much |relevant |clear |direct |explicit )*(?:\w+ )?"
        + _ABSENT
        + r"\b",
    ),
    # "The passages never mention", "the report has not (yet) disclosed"
    ("source-never", rf"{_SUBJECT}{_ADVS} never(?: {_ADV})? (?:{_THIRD}|{_PAST})\b"),
    (
        "source-perfect",
        rf"{_SUBJECT}{_ADVS} (?:has not|have not|hasn't|haven't|had not|hadn't)"
        rf"(?: (?:been|yet))?{_ADVS} {_PARTICIPLE_INFO}\b",
    ),
    # "The filing makes no mention", "the passages give no indication", "provides nothing on"
    (
        "source-gives-no",
        rf"\b{_HEAD}{_POST}{_ADVS} (?:{_THIRD}|{_BASE}|{_PAST}|makes?|made|contains?|has|have|"
        r"holds?|bears?|carr(?:y|ies)|yields?) (?:absolutely )?(?:no|nothing|little|zero|not? "
        r"(?:any|a single|enough)|none)\b",
    ),
    # "The passages are silent on ...", "the context lacks ..."
    (
        "source-silent",
        rf"\b{_HEAD}{_POST} (?:is|are|was|were|remains?|seems?|appears?)(?: to be)? (?:\w+ )?"
        r"silent\b|\b(?:the|these|this|those|provided|given) (?:\w+ ){0,2}?"
        + _HEAD
        + _POST
        + r"(?: (?:seems?|appears?) to)? (?:lacks?|lacked|omits?|leaves? out)\b",
    ),
    # "None of the passages mention", "Neither paper discusses", "Nothing in the text indicates"
    (
        "none-of-the-source",
        r"\b(?:none|neither|not one|no|nothing) (?:of |in |within |from |among )?"
        rf"(?:the |these |this |those |any )?(?:[\w-]+ ){{0,3}}?{_HEAD}{_POST}{_ADVS}"
        rf"(?: (?:seems? to|appears? to|do|does|did|can|could))? {_ANY_VERB}\b|"
        # "..., but none of them mention ...": the source named before, by a pronoun
        rf"\b(?:none|neither|not one) of (?:them|these|those|it)(?: \w+)?{_ADVS} {_ANY_VERB}\b",
    ),
    (
        "nothing-in-the-source",
        r"\b(?:nothing|nowhere) (?:(?:is |was )?(?:in|within|from|throughout) )(?:the |these |this )?"
        rf"(?:[\w-]+ ){{0,3}}?{_HEAD}\b|\bnowhere (?:does|do|did|is|are|was|were) (?:the |these |"
        rf"this |any )?(?:[\w-]+ ){{0,3}}?{_HEAD}\b",
    ),
    # "There is no (specific) discussion of", "there's no mention", "there seem to be no details"
    (
        "negative-existential",
        r"\bthere(?: is| are| was| were|'s| seems? to be| appears? to be| exists?| has been| have "
        r"been| remains?) (?:no|not any|not a|nothing|not enough|little|insufficient|not much|"
        r"not an?|zero|none) (?:\w+ ){0,3}?" + _ABSENT + r"\b|\bthere(?: is| are| was| were|'s)"
        r" not|\bthere (?:isn't|aren't|wasn't|weren't)(?: really)?(?: any| enough| a| an| much)? "
        r"(?:\w+ ){0,3}?"
        + _ABSENT
        + r"\b|\bthere (?:does not|doesn't|do not|don't|did not|didn't) "
        r"(?:seem|appear) to (?:be|have been) (?:any |a |an |much |enough |sufficient )?(?:\w+ ){0,3}?"
        + _ABSENT
        + r"\b",
    ),
    # "There are no specific instructions provided for X", "there were no figures given", "there
    # are no instructions in the passages": a noun of information (an absence noun or what a
    # how-question asks for), absent by a participle of a verb of information or from the handed
    # source ("There are no side effects reported in the passages" answers: none exist)
    (
        "no-x-in-the-source",
        r"\bthere(?: is| are| was| were|'s| seems? to be| appears? to be) (?:no|not any) (?:[\w-]+ )"
        rf"{{0,3}}?(?:{_ABSENT}|{_INFO_NOUN}) (?:(?:{_PARTICIPLE_INFO})(?= *(?:$|[,;:.!?)])| "
        r"(?:in|within|from|for|about|on|regarding|concerning|as to|anywhere|here|at all)\b)|"
        rf"(?:in|within|from|among) (?:any of )?(?:the |these |this )?(?:{_RHEAD}|(?:"
        rf"{_alt(_HANDED)}) (?:[\w-]+ ){{0,2}}?{_HEAD})\b)",
    ),
    (
        "nothing-about",
        r"\bthere(?: is|'s| was) (?:absolutely )?nothing (?:(?:in|within) (?:the |these |this )?"
        rf"(?:[\w-]+ ){{0,3}}?{_HEAD} )?(?:about|on|regarding|concerning|related to|that "
        r"(?:says|mentions|indicates|states|answers|addresses))\b",
    ),
    (
        "not-in-the-source",
        r"\b(?:answer|information|details?|data|it|this|that|figure|number|date|name)(?: you "
        r"(?:are|were) (?:looking|asking) for| (?:requested|asked for|sought|needed|required|in "
        r"question))?(?: (?:to|about|on|for|of|regarding) [\w'-]+(?: [\w'-]+){0,4}?)? (?:(?:is|are|"
        r"was|were) not|isn't|aren't|wasn't|weren't) (?:\w+ )?(?:in|within|"
        rf"among|part of|contained in|present in|found in) (?:the |these |this |any )?(?:[\w-]+ )"
        rf"{{0,3}}?{_HEAD}\b|^(?:not|answer not|information not|data not) (?:\w+ )?(?:in|within|"
        rf"found in|present in|available in|included in|mentioned in|given in) (?:the |these )?"
        rf"(?:[\w-]+ ){{0,2}}?{_HEAD}\b|^(?:answer|information|data|details) not (?:found|"
        r"available|provided|given|present|mentioned|specified|stated)\b",
    ),
    # "The price does not appear in any of the passages", "... doesn't show up in the text"
    (
        "not-appearing-in-the-source",
        r"\b(?:does not|doesn't|do not|don't|did not|didn't) (?:appear|show up|feature|figure|occur)"
        rf"(?: anywhere)? (?:in|within|among) (?:any of )?(?:the |these |this |your )?(?:{_RHEAD}|"
        rf"texts?|(?:{_alt(_HANDED)}) (?:[\w-]+ ){{0,2}}?{_HEAD})\b",
    ),
    (
        "source-irrelevant",
        rf"\b{_HEAD}{_POST} (?:is|are|was|were|seems? to be|appears? to be) (?:\w+ )?(?:not "
        r"(?:relevant|related|pertinent|applicable|helpful|useful)|irrelevant|unrelated|unhelpful|"
        r"insufficient|not "
        r"(?:sufficient|enough|adequate)|inadequate)(?: (?:to|for)\b| *[.!]?$)",
    ),
    (
        "source-only-other",
        r"\b(?:but|however|while|whereas|instead)(?: [\w,]+)? (?:the |these |this )?(?:[\w-]+ )"
        rf"{{0,2}}?{_HEAD}{_POST} (?:only|just|merely|mainly|primarily|solely) {_ANY_VERB}\b",
    ),
    # "no name is given", "No specific figures were provided", "no details are provided"
    (
        "no-x-is-given",
        r"\bno (?:\w+ ){0,3}?(?:is|are|was|were|has been|have been|had been|could be|can be|"
        rf"seems to be|appears to be|seem to be|appear to be){_ADVS} {_PARTICIPLE}\b|"
        # "No mention is made of X", "nothing is said about X"
        r"\bno (?:\w+ )?mention (?:is|was|has been|have been|had been) made\b|\bnothing (?:is|was|"
        r"has been|had been) (?:said|mentioned|stated|given|provided|specified|noted|written) "
        r"(?:about|on|regarding|concerning|as to|of|in)\b",
    ),
    # "No mention of X.", "No information about ...", "No (specific) data on ...": sentence-initial
    (
        "no-x",
        rf"^no (?:\w+ ){{0,2}}?{_ABSENT}(?: (?:of|about|on|regarding|for|as to|in|available|"
        r"provided|given|found|mentioned|specified|stated)\b|[.!]?$)",
    ),
    # "None mentioned.", "Not specified in the passages.", "None given"
    (
        "terse",
        rf"^(?:none|nothing|not|none was|none were|none is|none are)(?: {_ADV})? "
        rf"{_PARTICIPLE}\b|^(?:unclear|uncertain|undetermined|indeterminate|not clear|not "
        r"determinable)\b|"
        # "Nothing about the CEO's salary.", "nothing on X in the passages" (no verb of its own)
        r"^nothing (?:about|on|regarding|concerning|related to|as to) (?:(?:when|where|who|why|how|"
        r"what|which|whether)\b[^.!?]{0,80}|(?!.*\b(?:is|was|were|are|has|had|seems|seemed|could|"
        r"would|will|can)\b)(?:[\w'-]+ ){0,6}?[\w'-]+)[.!]?$",
    ),
    # "X is not mentioned.", "X is not specified in the passage", "X has not been (explicitly)
    # evaluated on Y in the provided paper"
    (
        "passive-absence",
        r"\b(?:(?:is|are|was|were|could be|can be) (?:not|never)|(?:has|have|had) (?:not|never) "
        r"been|isn't|aren't|wasn't|weren't|hasn't been|haven't been|hadn't been|'s not|cannot be|"
        r"can't be|couldn't be|(?:does not|doesn't|do not|don't) (?:appear|seem) to (?:be|have "
        rf"been)){_ADVS} {_PARTICIPLE}"
        rf"(?= *(?:$|[,;:.!?)]| (?:anywhere|at all|here|either|yet)\b| (?:{_ADV} )?(?:in|within|"
        rf"by|from|throughout|based on|among|across|on the basis of) (?:any of )?(?:\w+ ){{0,3}}?"
        rf"{_HEAD}\b))",
    ),
    (
        "passive-absence-in-retrieval",
        r"\b(?:(?:is|are|was|were) (?:not|never)|(?:has|have|had) (?:not|never) been|isn't|"
        r"aren't|wasn't|weren't|hasn't been|haven't been)(?: \w+){0,2}? \w+(?:ed|en|wn|t)\b"
        r"(?: [\w'-]+){0,8}? (?:in|within|by|from|throughout|based on) (?:any of )?(?:the |these "
        r"|this )(?:(?:provided|given|retrieved|supplied|above|available|following|shared) )"
        rf"(?:\w+ ){{0,2}}?{_HEAD}\b|\b(?:is|are|was|were) not \w+ed (?: [\w'-]+){{0,8}}? in "
        rf"(?:the |these )?{_RHEAD}\b",
    ),
    # "I could not find", "we cannot determine", "I do not see any mention", "I'm unable to"
    (
        "inability",
        r"\b(?:i|we)(?: (?:really |simply |still |unfortunately ))?(?: (?:cannot|can't|can not|"
        r"could not|couldn't|am unable to|was unable to|were unable to|are unable to|'m unable to|"
        r"am not able to|'m not able to|was not able to|were not able to|wasn't able to|"
        r"weren't able to|am not able to|hasn't been able to|do not|don't|did not|"
        r"didn't|will not be able to|won't be able to|was not|'m not|am not|could not|"
        r"was unable|have been unable to|have not been able to|haven't been able to|had trouble|"
        rf"had difficulty|have no way to|have no way of)) (?:\w+ ){{0,3}}?{_SEEK}\b",
    ),
    (
        "inability-to-see",
        r"\b(?:i|we) (?:do not|don't|did not|didn't|cannot|can't|could not|couldn't) (?:see|find|"
        r"spot|notice|locate|identify|come across|recall) (?:any |a |an |the )?(?:\w+ ){0,3}?"
        rf"(?:{_ABSENT}|(?:in|within|from) (?:the |these |this )?(?:\w+ ){{0,2}}?{_HEAD})\b",
    ),
    (
        "unable",
        r"\b(?:is|are|remains?) (?:unable|impossible) to be (?:determined|answered|found|known|"
        r"identified|ascertained|confirmed)\b|"
        # "the answer to the question "How often ...?" is unable to answer ...": a quoted question
        r"(?:^|\b(?:answer|response)(?: to (?:the|this|your) (?:question|query)(?: [\"“'][^\"”]{1,200}"
        r"[\"”'])?)? is:? |: )"
        r"(?:(?:i am|i'm|we are|we're|i was|the model is|the assistant is) )?(?:unable|not able) "
        r"to (?:\w+ ){0,2}?(?:answer|determine|find|provide|give|say|tell|identify|respond|locate|"
        r"extract|confirm|infer|state|conclude|pinpoint)\b|^(?:cannot|can't|can not|could not|"
        r"couldn't) (?:\w+ ){0,2}?(?:answer|determine|tell|find|say|be determined|be answered|"
        r"confirm|identify)\b",
    ),
    (
        "no-access",
        r"\b(?:i|we) (?:do not|don't|did not|didn't) have (?:\w+ ){0,3}?(?:context|information|"
        r"details|data|access|knowledge|answer|specifics|figures|numbers)\b|\b(?:i|we) (?:have|had|"
        r"'ve) no (?:\w+ ){0,2}?(?:context|information|details|data|access|knowledge|answer|"
        r"specifics|figures|numbers|way (?:of|to))\b",
    ),
    (
        "and-cannot-find",
        r"\b(?:but|and|yet) (?:i |we )?(?:couldn't|could not|cannot|can't|did not|didn't|was "
        rf"unable to|am unable to) (?:\w+ ){{0,2}}?{_SEEK}\b",
    ),
    (
        "source-not-specific",
        rf"\b{_HEAD}{_POST} (?:is|are|was|were) (?:not (?:\w+ )?(?:specific|explicit|clear|"
        r"definitive|conclusive|informative|detailed)|(?:\w+ )?(?:unclear|vague|ambiguous|"
        r"inconclusive)) (?:about|on|regarding|as to|concerning|in)\b",
    ),
    (
        "out-of-scope",
        r"\b(?:beyond|outside(?: of)?|not within|not in) the (?:\w+ ){0,1}?scope of (?:the |these "
        rf"|this )?(?:\w+ ){{0,2}}?{_HEAD}\b|\b(?:falls?|fell|lies?|is|are) (?:\w+ )?outside(?: of)? "
        rf"(?:the |these |this |your )?(?:[\w-]+ ){{0,2}}?{_HEAD}\b",
    ),
    # "The salary is unspecified in the text", "... remains undisclosed.", "is missing from the
    # provided context": an adjective of absence (missing, absent, unknown only with the source)
    (
        "absent-adjective",
        r"\b(?:is|are|was|were|remains?|remained|goes|go|went|seems?|appears?|stays?)(?: to be)?"
        r"(?: (?:entirely|completely|largely|still|also|simply))? (?:un(?:available|specified|"
        r"mentioned|stated|disclosed|reported|documented|addressed|determined)(?= *(?:$|[,;:.!?)]))|"
        r"(?:un(?:available|specified|mentioned|stated|disclosed|reported|documented|addressed|"
        r"determined)|missing|absent|unknown|lacking|not present) (?:in|from|within|throughout|"
        rf"based on) (?:any of )?(?:the |these |this |your )?(?:[\w-]+ ){{0,2}}?{_HEAD}\b)",
    ),
    # "The excerpts do not allow me to determine ...", "does not allow a determination of ..."
    (
        "source-does-not-allow",
        rf"{_SUBJECT}{_ADVS} {_NEGATION}{_ADVS} (?:allow|permit|enable|let)(?: (?:me|us|one|you|"
        rf"the reader|for))?(?: to)? (?:\w+ ){{0,2}}?(?:{_SEEK}|(?:a|an|any) (?:\w+ )?"
        r"(?:determination|answer|conclusion|estimate))\b",
    ),
    # "That's not something the provided documents cover", "not something I can determine"
    (
        "not-something",
        r"(?:\bnot|n't) (?:something|anything|a (?:topic|subject|question|point|detail|matter)) (?:that |"
        rf"which )?(?:(?:the|these|this|those|your|any) )?(?:[\w-]+ ){{0,2}}?{_HEAD}{_POST}"
        rf"{_ADVS}(?: (?:seems? to|appears? to))? {_ANY_VERB}\b|\bnot (?:something|anything) "
        rf"(?:that )?(?:i|we) (?:can|could|am able to|was able to) (?:\w+ ){{0,2}}?{_SEEK}\b",
    ),
    # "The financial statement you shared doesn't show the salary": a verb that states content
    # only for a source handed to the model ("The data does not show a difference" answers).
    (
        "retrieved-source-negation",
        rf"(?:\b{_RHEAD}|\b(?:{_alt(_HANDED)}) (?:[\w-]+ ){{0,2}}?{_HEAD}|\b{_HEAD} (?:{_alt(_HANDED)}|"
        r"(?:that |which )?(?:you|i|we) (?:have )?(?:provided|shared|gave|supplied|attached)))"
        rf"{_ADVS} {_NEGATION}{_ADVS} {_WEAK_VERB}\b",
    ),
    # "The context covers X but doesn't break down Y", "... talks about X but says nothing about Y"
    (
        "source-but-not",
        rf"^(?:(?:the|these|this|those|your|any) )?(?:[\w-]+ ){{0,3}}?{_HEAD}{_POST}\b[^;]{{0,200}}? "
        rf"(?:but|and|yet|while|though)(?: it| they| the \w+)?{_ADVS} (?:{_NEGATION}{_ADVS} "
        rf"(?:{_BASE}|{_WEAK_VERB})|(?:{_THIRD}|{_BASE}|{_PAST}|makes?|made|has|have|contains?) "
        r"(?:absolutely )?(?:nothing|no)) ",
    ),
    # "The passages focus on the city's history rather than its population", "..., not X"
    (
        "source-covers-other",
        rf"^(?:(?:the|these|this|those|your) )?(?:[\w-]+ ){{0,2}}?{_HEAD}{_POST}(?: (?:only|mainly|"
        r"mostly|primarily|largely|chiefly|instead|seem to|seems to|appear to|appears to))* "
        r"(?:focus(?:es|ed)? (?:on|upon)|discuss(?:es|ed)?|cover(?:s|ed)?|describe(?:s|d)?|deals? "
        r"with|talks? about|(?:is|are|was|were) about|cent(?:er|re)s? (?:on|around)|concentrates? "
        r"on|address(?:es)?|pertains? to|relates? to)\b[^;]{0,160}?(?:,? rather than|,? instead "
        r"of|, (?:but )?not|,? as opposed to)\b",
    ),
    # "I reviewed the documents but found no mention of ...", "I found nothing about ..."
    (
        "found-nothing",
        r"\bi (?:\w+ ){0,8}?(?:found|find|see|saw|located|came across|spotted|noticed) (?:no|"
        r"nothing|none)\b|\b(?:i|we) (?:\w+ ){0,8}?(?:found|find|see|saw|located|came across) no "
        rf"(?:\w+ ){{0,2}}?{_ABSENT}\b",
    ),
    # "it is unable to answer the question", "not enough information to answer the question",
    # "I am unable to answer those parts of the question": the question itself given up on
    (
        "gives-up-question",
        GIVES_UP_QUESTION,
    ),
)
_NEG_WORDS = ("not", "n't", "never", "fail", "cannot")
#: Substrings a sentence must contain for a shape to be tried (a cheap guard: most sentences of
#: most answers contain none, and ``in`` costs nanoseconds where a search costs microseconds).
_GUARDS: dict[str, tuple[str, ...]] = {
    "source-negation": _NEG_WORDS,
    "source-has-no": _NEG_WORDS,
    "source-never": ("never",),
    "source-perfect": ("not", "n't"),
    "source-gives-no": ("no", "little", "zero"),
    "source-silent": ("silent", "lack", "omit", "leave"),
    "none-of-the-source": ("none", "neither", "not one", "no ", "nothing"),
    "nothing-in-the-source": ("nothing", "nowhere"),
    "negative-existential": ("there",),
    "no-x-in-the-source": ("there",),
    "nothing-about": ("nothing",),
    "not-in-the-source": ("not", "n't"),
    "source-irrelevant": (
        "not",
        "irrelevant",
        "unrelated",
        "unhelpful",
        "insufficient",
        "inadequate",
    ),
    "not-appearing-in-the-source": ("not", "n't"),
    "source-only-other": ("only", "just", "merely", "mainly", "primarily", "solely"),
    "no-x-is-given": ("no ", "nothing"),
    "no-x": ("no ",),
    "terse": ("none", "nothing", "not", "unclear", "uncertain", "undetermin", "indetermin"),
    "passive-absence": ("not", "n't", "never", "cannot"),
    "passive-absence-in-retrieval": ("not", "n't", "never"),
    "inability": ("i ", "we "),
    "inability-to-see": ("i ", "we "),
    "unable": ("unable", "not able", "impossible", "cannot", "can't", "can not", "could"),
    "no-access": ("i ", "we "),
    "and-cannot-find": ("n't", "not", "unable"),
    "source-not-specific": ("not", "unclear", "vague", "ambiguous", "inconclusive"),
    "out-of-scope": ("scope", "outside"),
    "absent-adjective": (
        "unavail",
        "unspecif",
        "unmention",
        "unstat",
        "undisclos",
        "unreport",
        "undocument",
        "unaddress",
        "undetermin",
        "missing",
        "absent",
        "unknown",
        "lacking",
        "not present",
    ),
    "source-does-not-allow": ("allow", "permit", "enable", "let"),
    "not-something": (
        "not something",
        "not anything",
        "not a ",
        "n't something",
        "n't anything",
        "n't a ",
    ),
    "retrieved-source-negation": ("show", "display", "depict", "illustrat", "captur", "featur"),
    "source-but-not": ("not", "n't", "never", "nothing", "no ", "fail"),
    "found-nothing": ("i ", "we "),
    "source-covers-other": ("rather than", "instead of", ", not", ", but not", "as opposed to"),
    "gives-up-question": ("question", "quer", "unable", "not able"),
}
#: ``(name, pattern, guards)``: a shape is tried only on text holding one of its guards, and its
#: pattern is compiled the first time it is tried (compiling all of them costs a command-line
#: ``ask`` tens of milliseconds of start-up, and most answers need none).
SHAPES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (name, pattern, _GUARDS[name]) for name, pattern in _SHAPES
)


#: A negated verb of information opening a clause ("doesn't say", "it does not specify").
NEGATED_VERB = re.compile(rf"^(?:(?:it|they|the \w+) )?{_NEGATION}{_ADVS} {_BASE}\b")
#: A negated verb of information anywhere in a sentence ("... do not provide", "never mention").
NEGATED_INFO = re.compile(rf"\b{_NEGATION}{_ADVS} {_BASE}\b")


@functools.cache
def _shape(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


#: A pointer elsewhere: "you may need to consult other reports", "I recommend checking ...".
POINTER = re.compile(
    r"\b(?:you|the user|one|readers?)(?: may| might| could| would| will| should| can)?"
    r"(?: (?:need|want|have|wish|like|try))?(?: to)? (?:consult|refer to|check|look (?:at|into|up|"
    r"for|elsewhere)|search|seek|find|contact|visit|review|read|obtain|access|explore|reach out)\b|"
    r"\b(?:i (?:would )?(?:recommend|suggest|advise)|it (?:is|would be|might be|may be) "
    r"(?:best|advisable|recommended|helpful|necessary|worth)|(?:may|might|would) (?:need|have) "
    r"to|(?:consider|try)) (?:\w+ ){0,3}?(?:consult|check|refer|look|search|contact|visit|review|"
    r"seek|find|read|obtain|access|explore)\w*\b|"
    r"\b(?:consult|refer to|check|see|look at|search) (?:\w+ ){0,2}?(?:other|additional|external|"
    r"another|more|official|reliable|the original|the full|alternative|different|further|"
    r"outside|primary|specialized) (?:\w+ ){0,2}?(?:sources?|reports?|documents?|resources?|"
    r"materials?|references?|websites?|filings?|statements?|texts?|papers?|databases?|"
    r"experts?|professionals?|records?)\b"
)
#: The source described instead of the answer: "It focuses on ...", "The report primarily
#: discusses ...", "The passages only talk about ...".
COVERS_INSTEAD = re.compile(
    rf"^(?:(?:the |these |this |those )?(?:\w+ ){{0,2}}?{_HEAD}{_POST}|it|they|instead|rather)"
    r"(?: (?:only|mainly|mostly|primarily|chiefly|largely|generally|instead|rather|however|do|"
    r"does|seems? to|appears? to|also|just|merely|solely|simply))*"
    r" (?:focus(?:es|ed)?|discuss(?:es|ed)?|covers?|covered|deals? with|dealt with|talks? about|"
    r"centers? (?:on|around)|centres? (?:on|around)|revolves? around|is about|are about|was about|"
    r"be about|"
    r"were about|provides? (?:\w+ ){0,2}?(?:details|information|an overview|a summary|context)|"
    r"describes?|described|mentions? (?:other|only|the general|general)|highlights?|outlines?|"
    r"explores?|concerns?|is concerned with|are concerned with|pertains? to|relates? to|"
    r"(?:is|are|was|were|seems? to be|appears? to be) (?:an?|the) (?:\w+ ){0,3}?(?:excerpt|"
    r"summary|overview|description|discussion|report|statement|collection|list|description)|"
    r"ends?|contains? (?:\w+ ){0,2}?(?:information|details|data) (?:about|on|regarding)|"
    r"includes? (?:\w+ ){0,2}?(?:information|details|data) (?:about|on|regarding)|"
    r"presents?|introduces?|summari[sz]es?|review(?:s|ed)?|examines?|analy[sz]es?|"
    r"refers? to (?:other|general)|(?:do|does|did) (?:\w+ )?" + _ANY_VERB + r")\b|"
    r"^(?:perhaps|maybe|possibly|if you)\b"
)


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
        m = _shape(pattern).search(core)
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
_ABOUT_SOURCE = re.compile(rf"\b(?:{_HEAD}|they|it|authors?)(?: \w+)?{_ADVS} {_ANY_VERB}\b")


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
