"""The decline rules, one row each: what a decline looks like, and how each row is tested.

Every rule the verdict parser (:mod:`selfroute._verdict._parse`) applies to a sentence is a
:class:`Rule` of :data:`RULES`: its name, its :class:`RuleKind` (what the parser does with a
sentence it matches), its pattern, the substrings one of which a sentence must hold before the
pattern is tried (``guards``), the decline words that make the parser look at a sentence at all
(``triggers``), the openings the streaming hold keeps back while they are being written
(``openings``), and examples that must decline and examples that must not (run by
``tests/unit/selfroute/test_verdict_rules.py``). Adding a decline phrase is adding one row: the
trigger (:data:`TRIGGER`), the streaming openings (:data:`DECLINE_OPENINGS`) and the parser's
pattern tuples are derived from the table at import.

Patterns run on one normalised sentence (lower case, straight apostrophes, single spaces) and
are compiled when first used. Every pattern here runs on model output, so each must stay linear
in its input (``tests/unit/selfroute/test_verdict_growth.py`` feeds every row adversarial inputs).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from enum import Enum

from selfroute._verdict._vocabulary import (
    ABSENT,
    ADV,
    ADVS,
    ANY_VERB,
    BASE,
    HANDED,
    HEAD,
    IHEAD,
    INABILITY,
    INFO_NOUN,
    NEGATION,
    PARTICIPLE_INFO,
    PAST,
    PHRASE_ADVERB,
    PHRASE_INFO_VERB,
    PHRASE_NEGATION,
    PHRASE_PARTICIPLE,
    PHRASE_SOURCE_NOUN,
    PHRASE_SUBJECT,
    POST,
    PRONOUN_REPORT_VERB,
    REPORT_VERB,
    REPORTING_HEAD,
    RHEAD,
    SEEK,
    SHAPE_PARTICIPLE,
    SHAPE_SUBJECT,
    SPEECH,
    SPEECH_FINITE,
    THIRD,
    WEAK_VERB,
    alt,
)

__all__ = [
    "ASKED_GUARDS",
    "DECLINE_OPENINGS",
    "GIVES_UP_QUESTION",
    "NOT_WHAT_WAS_ASKED",
    "RULES",
    "TRIGGER",
    "Example",
    "Rule",
    "RuleKind",
    "compiled",
    "rule",
    "rules",
]


class RuleKind(Enum):
    """What the parser does with a sentence a rule matches."""

    PHRASE = "phrase"
    """The sentence declines the question (kind R), by a fixed phrase; tried first, in order."""
    SHAPE = "shape"
    """The sentence declines the question (kind R), by a grammatical shape (a source noun phrase
    and a negated verb of information, an absence construction, an inability); tried after the
    phrases, in order."""
    QUOTED = "quoted"
    """A decline reported in quotes: the quoted text (group 1) is read as a sentence."""
    RAW_PHRASE = "raw-phrase"
    """Like :attr:`PHRASE`, searched in the sentence with its lead-in ("Unfortunately,") kept."""
    WEAK = "weak"
    """A decline (kind R) unless the sentence declines a *form* of answer (:attr:`FORM`)."""
    FORM = "form"
    """Declines a form of answer, not the question (kind F): what follows decides."""
    PREAMBLE = "preamble"
    """An apology or a preamble on its own (kind P): skipped."""
    REQUEST = "request"
    """Asks for more information or offers help (kind Q)."""
    POINTER = "pointer"
    """Points elsewhere (kind X): keeps a decline before it; opening an answer, an instruction."""
    DESCRIBES = "describes"
    """Describes the source or restates the question (kind N): the next sentence decides."""
    HEDGE = "hedge"
    """After a decline, commits to an answer anyway ("However, it seems ...")."""
    DESCRIBES_INSTEAD = "describes-instead"
    """After an opening decline, describes the asked-for thing or what the source only says
    instead of naming the answer ("..., but it is described as a long illness", "It only
    mentions ..."), in the declining sentence after "but" or in the next one: unlike a
    :attr:`HEDGE`, the decline stands, however long the description goes on, unless a later
    sentence infers an answer (:attr:`INFERS`)."""
    REPORTS = "reports"
    """After an opening decline, reports what the source does say ("However, it mentions that
    ...", "According to the text, ...", "We only learn that ..."): the decline stands unless a
    later sentence infers an answer (:attr:`INFERS`)."""
    EXACTNESS = "exactness"
    """A decline of only an exact answer ("it is difficult to determine an exact figure"): a
    report of the source after it gives the answer approximately (the report is a hedge)."""
    IMPLICIT = "implicit"
    """A decline of only an explicit statement ("the passage does not explicitly state the
    title"): one sentence reporting the source after it, ending the output, gives the answer
    implicitly ("It only says that she reads a large old Bible."); a longer description does
    not."""
    INFERS = "infers"
    """After a decline and a report of the source, commits to an answer by inference ("This
    suggests that ...", "So she was most likely ...")."""
    GIVES_UP = "gives-up"
    """After content, gives up on the question itself ("Unable to answer based on ...")."""


#: An example: the output alone, or the output and the question it answers.
Example = str | tuple[str, str]


@dataclass(frozen=True)
class Rule:
    """One decline rule.

    Attributes:
        name: A unique kebab-case name.
        kind: What the parser does with a sentence it matches.
        pattern: The regular expression, searched in a normalised sentence.
        guards: Substrings one of which a sentence must contain before the pattern is tried
            (``()``: always tried). A guard may only skip sentences the pattern cannot match.
        triggers: Decline words the pattern needs (one of :data:`TRIGGER`'s words): a sentence
            without any trigger word of any row is not tried for a decline at all. ``x*``
            stands for ``x`` and any letters after it, ``x+`` for ``x`` and at least one more,
            and a word with an apostrophe (``n't``) is found inside words too.
        openings: Normalised openings the streaming hold keeps back while being written
            ("there is no"), so that a stream never shows what its verdict later retracts.
        declines: Outputs (or ``(output, question)``) that must decline, each through this row.
        answers: Outputs (or ``(output, question)``) near this row that must stay answers.
        note: What the row is for, when its name does not say.
    """

    name: str
    kind: RuleKind
    pattern: str
    guards: tuple[str, ...] = ()
    triggers: tuple[str, ...] = ()
    openings: tuple[str, ...] = ()
    declines: tuple[Example, ...] = ()
    answers: tuple[Example, ...] = ()
    note: str = ""


#: Giving up on the question itself ("unable to answer the question", "those parts of it"): a
#: shape, and part of the closing give-up (:attr:`RuleKind.GIVES_UP`).
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

#: What the user asked for, named as such ("the figure you asked for", "what you are asking about").
ASKED = (
    r"(?:you (?:asked|needed|need|wanted|want|requested)|you(?:'ve| have) asked|you(?:'re| are| "
    r"were) (?:asking|looking)|(?:was|were|is|are) requested)(?: (?:for|about))?"
)
#: Substrings one of which :data:`ASKED` needs (the guards of the rows that use it).
ASKED_GUARDS = (
    "you asked", "you need", "you want", "ve asked", "have asked", "re asking", "are asking",
    "re looking", "are looking", "requested",
)  # fmt: skip
#: Not giving what was asked, by name: "so I can't give you the figure you asked for", "... but
#: not the MRSA figure you're asking about". An *exact* or *precise* figure not given qualifies an
#: answer given approximately.
NOT_WHAT_WAS_ASKED = (
    r"\b(?:cannot|can't|can not|unable to|not able to|could not|couldn't) (?:give|tell|provide|"
    r"offer|confirm|supply|share|find|state)(?: you)?(?: with)? (?!(?:[\w-]+ ){0,3}?(?:exact|"
    r"precise)\b)(?:the |a |an |that |this |any )?(?:[\w-]+ ){0,3}?" + ASKED + r"\b|"
    r"\bnot (?!(?:the |a |an )?(?:only|just)\b)(?:the |a |an |any |what |which )?(?:[\w-]+ ){0,4}?"
    + ASKED
    + r"(?= *(?:$|[,;:.!?)—–-]| (?:from|in|based|here)\b))"
)

#: Connectives that may open a sentence reporting the source after a decline ("However, ...").
LINK = (
    r"(?:(?:however|but|still|that said|yet|also|instead|additionally|in addition|nonetheless|"
    r"nevertheless|what is more|on the other hand),? ){0,2}"
)
#: Adverbs between a reporting source and its verb ("it *does, however,* mention").
REPORT_ADVERB = (
    r"only|simply|just|merely|also|briefly|does|do|did|however|instead|mainly|mostly|primarily|"
    r"further|additionally|repeatedly|itself|though"
)

#: Verbs by which a prescribing document gives (or not) a piece of information.
INSTRUMENT_GIVES = (
    r"include|includes|list|lists|give|gives|provide|provides|contain|contains|set out|sets out|"
    r"offer|offers|supply|supplies|quote|quotes|show|shows|publish|publishes|have|has|carry"
)
#: Pieces of information a prescribing document may leave out (not things it grants).
INFORMATION_ITEM = (
    r"number|numbers|figure|figures|count|total|amount|date|dates|deadline|name|names|address|"
    r"breakdown|value|values|percentage|statistics?|estimate|timeline|details|information|data|"
    r"specifics|tally|contact|price|recommendations?|guidance|advice|instructions|definition|"
    r"explanation|reasons?|dose|doses|dosing|dosage|targets?|rates?"
)
#: Verbs by which a source or a speaker gives (or not) a specific one of what was asked.
SPECIFIC_VERB = rf"{BASE}|recommend|set|put|fix|prescribe|quote|commit to|settle on|cite"

RULES: tuple[Rule, ...] = (
    Rule(
        "speaker-does-not-know",
        RuleKind.PHRASE,
        r"\b(?:i|we) (?:do not|don't) know\b",
        guards=("know",),
        triggers=("n't", "not"),
        openings=("i don't know", "i do not know"),
        declines=("I don't know who wrote the letter.",),
        answers=("I know the letter was written by Ana.",),
    ),
    Rule(
        "speaker-not-sure",
        RuleKind.PHRASE,
        r"\b(?:i'm|i am|we are|we're) not (?:sure|certain)\b",
        guards=("sure", "certain"),
        triggers=("not",),
        declines=("I'm not sure which year the treaty was signed.",),
        answers=("Make sure the hole is not too large.",),
    ),
    Rule(
        "not-enough-information",
        RuleKind.PHRASE,
        r"\b(?:not enough|insufficient|not sufficient|without enough|without sufficient|lack of|"
        r"lacks?|lacking) (?:\w+ ){0,2}?(?:information|context|details?|evidence|data)\b",
        guards=("enough", "sufficient", "lack"),
        triggers=("not", "insufficient", "without", "lack*"),
        openings=("not enough", "insufficient"),
        declines=("There is not enough information to say why he left the farm.",),
        answers=("Add enough water to cover the beans.",),
    ),
    Rule(
        "not-sufficient-to",
        RuleKind.PHRASE,
        r"\bnot (?:\w+ )?(?:sufficient|enough|adequate) to (?:\w+ ){0,2}?(?:state|determine|"
        r"answer|confirm|say|tell|identify|know|conclude)\b",
        guards=("sufficient", "enough", "adequate"),
        triggers=("not",),
        declines=("The details provided are not sufficient to determine who she marries.",),
        answers=("One cup is not sufficient for the sauce, so use two.",),
    ),
    Rule(
        "source-does-not-mention",
        RuleKind.PHRASE,
        rf"\b{PHRASE_SUBJECT} {PHRASE_NEGATION} (?:\w+ ){{0,2}}?{PHRASE_INFO_VERB}\b",
        guards=("not", "n't", "fail", "never"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        openings=("it does not", "it doesn't"),
        declines=("The passage does not specify this.",),
        answers=(
            ("No, the paper does not mention BERT.", "Do they use BERT?"),
            "The text does not say, but it seems he is a writer.",
        ),
        note='"The text does not mention ..." with up to two words before the verb',
    ),
    Rule(
        "does-not-contain-information",
        RuleKind.PHRASE,
        r"\b(?:does not|doesn't|do not|don't|did not|didn't)(?: appear to| seem to)? "
        r"(?:have|contain|include|provide|give|offer) (?:any |enough |sufficient |specific |"
        r"clear |much |a |an |the )?(?:\w+ )?(?:information|details?|mention|specifics|data|"
        r"answer|indication|description|explanation)\b",
        guards=("not", "n't"),
        triggers=("n't", "not"),
        declines=("The passages do not contain any information about the ceremony.",),
        answers=("The recipe does not contain any gluten, so it suits coeliacs.",),
        note='"does not contain any information", "does not appear to include an answer"',
    ),
    Rule(
        "there-is-no-mention",
        RuleKind.PHRASE,
        r"\bthere(?: is| are| was| were|'s) (?:no|not any|not enough|little|insufficient) "
        r"(?:\w+ ){0,3}?(?:information|mention|details?|specifics|data|answer|reference|context|"
        r"explanation|description|record|indication of|evidence of|way to)\b",
        guards=("there",),
        triggers=("no", "not", "insufficient"),
        declines=("There is no mention of the author's age.",),
        answers=("There is no distinction between the two species.",),
        note='"there is no mention / information / details ...", "there\'s no clear answer"',
    ),
    Rule(
        "x-is-not-mentioned",
        RuleKind.PHRASE,
        rf"\b(?:(?:is|are|was|were|has been|have been) (?:not|never)|isn't|aren't|wasn't|"
        rf"weren't|hasn't been|haven't been|'s not) (?:{PHRASE_ADVERB} )?{PHRASE_PARTICIPLE}"
        rf"(?= *(?:$|[,;:.!?)]| (?:anywhere|at all|here)\b| (?:{PHRASE_ADVERB} )?(?:in|within|by|"
        rf"from|throughout|based on) (?:any of )?(?:\w+ ){{0,2}}?{PHRASE_SOURCE_NOUN}\b))",
        guards=("not", "n't", "never"),
        triggers=("n't", "not"),
        declines=("Their exact ages are not provided in the novel.",),
        answers=("The cake is not provided with icing; you add it yourself at home later.",),
        note='"X is not mentioned.", "X is not specified in the passage", "X is not given, so ..."',
    ),
    Rule(
        "it-is-not-mentioned",
        RuleKind.PHRASE,
        rf"\b(?:it|this|that)(?: is|'s| was) (?:not|n't) (?:{PHRASE_ADVERB} )?(?:{PHRASE_PARTICIPLE}|clear)\b",
        guards=("not", "n't"),
        triggers=("n't", "not"),
        openings=("this is not",),
        declines=("It is not specified how long the painting took.",),
        answers=("It is not clear water but broth that the recipe uses, simmered for an hour.",),
        note='"It is not mentioned who ...", "it\'s not specified how ..."',
    ),
    Rule(
        "it-is-not-possible",
        RuleKind.PHRASE,
        r"\b(?:it|this|that)(?: is|'s| was| would be| remains) (?:not (?:\w+ )?(?:possible|clear)|"
        r"impossible|unclear|uncertain)(?: (?:to|from|based|in|whether|what|who|which|where|"
        r"when|why|how|if)\b| *[.!]?$)",
        guards=("not", "impossible", "unclear", "uncertain"),
        triggers=("not", "impossible", "unclear", "uncertain"),
        openings=("it is not", "it isn't", "it's not", "it is unclear", "it's unclear"),
        declines=("It is not possible to determine the cause of the fire from the text.",),
        answers=(
            "It is not possible for the engine to start without fuel, so he walked home to Leeds.",
        ),
        note='"it is not possible to determine", "it is unclear from the text", "difficult to say"',
    ),
    Rule(
        "difficult-to-say",
        RuleKind.PHRASE,
        r"\b(?:difficult|hard|impossible) to (?:\w+ ){0,2}?(?:say|determine|tell|pinpoint|know|"
        r"answer|identify|encapsulate|summari[sz]e|conclude|infer)\b",
        guards=("difficult", "hard", "impossible"),
        triggers=("difficult", "hard", "impossible"),
        declines=("Without more details it is difficult to say what he reveals to her.",),
        answers=("Spin the egg on a hard surface to see whether it is cooked.",),
    ),
    Rule(
        "cannot-be-determined",
        RuleKind.PHRASE,
        r"\b(?:cannot|can't|can not|could not|couldn't) be (?:\w+ )?(?:determined|answered|found|"
        r"inferred|known|identified|established|confirmed|ascertained|deduced)\b",
        guards=("not", "n't"),
        triggers=("cannot", "n't", "not"),
        openings=("it cannot", "this cannot"),
        declines=("The year of the move cannot be determined from the passages.",),
        answers=("The fruit cannot be eaten raw; it is boiled first.",),
    ),
    Rule(
        "answer-is-not-available",
        RuleKind.PHRASE,
        r"\b(?:the )?(?:answer|question) (?:is|remains) (?:not (?:\w+ )?(?:available|provided|"
        r"given|known|clear|answerable|found)|unknown|unclear)\b",
        guards=("answer", "question"),
        triggers=("not", "unknown", "unclear"),
        openings=("the answer is not", "the question is", "the answer to"),
        declines=("The answer is not available in the given passages.",),
        answers=("The answer is in chapter three: the gardener did it.",),
    ),
    Rule(
        "answer-cannot-be",
        RuleKind.PHRASE,
        r"\b(?:the )?(?:answer|question) (?:cannot|can't|can not) be\b",
        guards=("answer", "question"),
        triggers=("cannot", "n't", "not"),
        openings=("the answer cannot", "the question cannot"),
        declines=("The answer cannot be found in the text.",),
        answers=("The question has a simple answer: the capital is Lima.",),
    ),
    Rule(
        "no-clear-answer",
        RuleKind.PHRASE,
        r"\bno (?:clear|definitive|definite|direct|specific) answer\b",
        guards=("answer",),
        triggers=("no",),
        declines=("The passages give no clear answer.",),
        answers=("There is a clear answer: he was born in 1902.",),
    ),
    Rule(
        "without-more-context",
        RuleKind.PHRASE,
        r"\bwithout (?:more|additional|further|any|the full|enough|sufficient|more specific) "
        r"(?:\w+ ){0,2}?(?:context|details?|information|text|excerpts?)\b",
        guards=("without",),
        triggers=("without",),
        declines=("I cannot make guesses without additional context.",),
        answers=("Serve the tomato sauce without seeds, over pasta.",),
    ),
    Rule(
        "but-does-not-mention",
        RuleKind.PHRASE,
        rf"\b(?:but|and|yet) (?:{PHRASE_NEGATION}) (?:\w+ ){{0,2}}?{PHRASE_INFO_VERB}\b",
        guards=("not", "n't", "fail", "never"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=("The article describes the dam, and does not mention its cost.",),
        answers=(
            ("The document says it opened on March 3, but doesn't say where.", "When did it open?"),
        ),
    ),
    Rule(
        "would-need-more",
        RuleKind.PHRASE,
        r"\b(?:would|will) (?:need|require) (?:more|additional|further) (?:\w+ ){0,2}?"
        r"(?:context|details?|information)\b",
        guards=("need", "require"),
        triggers=("need", "require"),
        declines=("I would need more information to answer that.",),
        answers=("To do this, you will need two eggs and some flour.",),
    ),
    Rule(
        "no-option-confirmed",
        RuleKind.PHRASE,
        r"\b(?:none|neither) of (?:the )?(?:\w+ )?(?:options|choices|answers|alternatives)(?: \w+)? "
        r"(?:can|could|is|are|seems?|appears?) (?:be )?(?:\w+ )?(?:confirmed|determined|verified|"
        r"supported|correct|right)\b(?! (?:except|but|other than|apart from|save)\b)",
        guards=("none", "neither"),
        triggers=("none", "neither"),
        declines=("The outcome is not stated. So none of the answer options can be confirmed.",),
        answers=("None of the options is correct except C: the race was cancelled.",),
        note="a multiple-choice question left open",
    ),
    Rule(
        "would-be-needed",
        RuleKind.PHRASE,
        r"\b(?:more|additional|further|extra|fuller) (?:\w+ ){0,2}?(?:context|information|details?|"
        r"text|excerpts?) (?:would be|will be|is|are|would|may be|might be) (?:\w+ )?(?:needed|"
        r"required)(?: to (?:\w+ ){0,2}?(?:confirm|answer|determine|say|know|be (?:sure|"
        r"certain)|verify|tell|identify|pinpoint|establish|conclude)\b| *[.!]?$)",
        guards=("needed", "required"),
        triggers=("needed", "required"),
        declines=(
            "It seems they may live in Russia, but more context would be needed to confirm that.",
        ),
        answers=("Additional information is required to register: your name and your address.",),
        note='"more context would be needed to confirm that": a guess taken back',
    ),
    Rule(
        "terse-decline",
        RuleKind.PHRASE,
        r"^(?:not (?:mentioned|specified|stated|provided|given|available|found|answerable|"
        r"discussed|known|applicable)|no answer|unknown|n/?a|none given|cannot be determined|"
        r"insufficient information|not enough information|no information|no idea)\b",
        guards=(),
        triggers=("not", "no", "unknown", "n/a", "na", "none", "cannot", "insufficient", "idea"),
        openings=(
            "not mentioned",
            "not specified",
            "not stated",
            "not provided",
            "not available",
            "not given",
            "unknown",
            "n/a",
            "cannot be determined",
            "none mentioned",
            "none given",
            "none specified",
            "none provided",
        ),
        declines=("Not mentioned.", "N/A"),
        answers=("Not mentioned often, but the town was founded in 1820 by miners.",),
        note="terse declines as the whole sentence",
    ),
    Rule(
        "bare-sentinel-word",
        RuleKind.PHRASE,
        r"^(?:unanswerable|not answerable)\b(?! +(?:questions?|queries|query|ones|cases|examples|"
        r"instances|samples|items|prompts)\b)",
        guards=(),
        triggers=("unanswerable", "not"),
        declines=("Unanswerable based on the provided article.",),
        answers=("Unanswerable questions are excluded from the dataset, which has 5,000 items.",),
    ),
    Rule(
        "source-negation",
        RuleKind.SHAPE,
        rf"{SHAPE_SUBJECT}{ADVS} {NEGATION}{ADVS} {BASE}\b",
        guards=("not", "n't", "never", "fail", "cannot"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=("The text chunks provided do not explicitly mention the salary.",),
        answers=(("No, the passages do not mention a second trial.", "Was there a second trial?"),),
    ),
    Rule(
        "instrument-negation",
        RuleKind.SHAPE,
        rf"\b{IHEAD}{POST}{ADVS} {NEGATION}{ADVS} {SPEECH}\b|\b{IHEAD}{POST}{ADVS} never"
        rf"(?: {ADV})? {SPEECH_FINITE}\b",
        guards=("not", "n't", "never", "fail", "cannot"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=(
            "The lease agreement does not specify a penalty for breaking the lease early.",
            "The guideline doesn't say what target applies to adults over 80.",
            "The spec never defines the retry interval.",
        ),
        answers=(
            "The policy does not cover flood damage.",
            "The lease does not include parking, so you would pay $90 a month for a space.",
            "The code does not apply to buildings finished before 1990.",
        ),
        note='A document that prescribes or grants ("the lease", "the policy", "the spec"): only a'
        ' verb of speech negated after it is a decline; "does not cover/include/provide" states'
        " what it grants",
    ),
    Rule(
        "instrument-silent",
        RuleKind.SHAPE,
        rf"\b{IHEAD}{POST} (?:is|are|was|were|remains?|seems?|appears?)(?: to be)? (?:\w+ )?"
        rf"silent\b|\b{IHEAD}{POST}{ADVS} (?:makes?|made) (?:absolutely )?no (?:\w+ )?"
        rf"(?:mention|reference)\b|\b{IHEAD}{POST}{ADVS} (?:says?|said) (?:absolutely )?nothing "
        r"(?:about|on|regarding|concerning|as to|of)\b|\b(?:nothing|nowhere) (?:in|within) "
        rf"(?:the |this |these |your )?(?:[\w-]+ ){{0,3}}?{IHEAD}{POST}{ADVS} {SPEECH_FINITE}\b|"
        rf"\bnowhere (?:does|do|did) (?:the |this |these |your )?(?:[\w-]+ ){{0,3}}?{IHEAD}\b",
        guards=("silent", "mention", "reference", "nothing", "nowhere"),
        triggers=("silent", "no", "nothing", "nowhere"),
        declines=(
            "The guideline is silent on an HbA1c target for adults over 80.",
            "The contract makes no mention of late fees.",
            "Nothing in the lease says who pays for water.",
        ),
        answers=(
            "The policy gives no cover for flood damage.",
            "Nothing in the lease prevents you from subletting with consent.",
            "The lease says nothing may be fixed to the walls without consent.",
        ),
        note='"The lease is silent on pets", "the policy makes no mention of", "nothing in the'
        ' contract says"',
    ),
    Rule(
        "instrument-lacks-a-figure",
        RuleKind.SHAPE,
        rf"\b{IHEAD}{POST}{ADVS} (?:{NEGATION}{ADVS} (?:{INSTRUMENT_GIVES}) (?:a |an |any |the |its "
        rf"|their |one |such (?:a |an )?)?|(?:{INSTRUMENT_GIVES}) no )(?:[\w-]+ ){{0,3}}?"
        rf"(?:{INFORMATION_ITEM})\b",
        guards=(
            "number",
            "figure",
            "count",
            "total",
            "amount",
            "date",
            "deadline",
            "name",
            "address",
            "breakdown",
            "value",
            "percentage",
            "statistic",
            "estimate",
            "timeline",
            "detail",
            "information",
            "data",
            "specifics",
            "tally",
            "contact",
            "price",
            "recommendation",
            "guidance",
            "advice",
            "instructions",
            "definition",
            "explanation",
            "reason",
            "dos",
            "target",
            "rate",
        ),
        triggers=("n't", "not", "never", "cannot", "fail*", "no"),
        declines=(
            "The lease doesn't include a phone number for the landlord.",
            "The agreement does not give a figure for the monthly service charge.",
            "The policy doesn't list the amount of the excess anywhere.",
            "The release has no UK figure.",
            "The guidelines don't offer a recommendation for pregnant patients.",
        ),
        answers=(
            "The lease does not include parking, so you would pay $90 a month for a space.",
            "The policy doesn't include flood cover.",
            "The contract does not give the buyer a right to cancel after 14 days.",
        ),
        note="A prescribing document (see instrument-negation) that does not give a *piece of"
        ' information* (a number, a date, a name): "the lease doesn\'t include a phone number"'
        ' says the document lacks it, where "doesn\'t include parking" states what it grants',
    ),
    Rule(
        "source-lacks-a-specific",
        RuleKind.SHAPE,
        rf"(?:\b(?:{HEAD}|{IHEAD}){POST}|\b(?:it|they|he|she)){ADVS} {NEGATION}{ADVS} "
        rf"(?:{SPECIFIC_VERB}) (?:you |us )?(?:a|an|any|one) (?:single |particular )?(?:specific|"
        r"exact|precise|concrete|definitive|definite|firm|explicit|numerical|numeric|actual)\b",
        guards=(
            "specific",
            "exact",
            "precise",
            "concrete",
            "definit",
            "firm",
            "explicit",
            "numeric",
            "actual",
        ),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=(
            "The code of conduct doesn't list a specific punishment for plagiarism.",
            "The whitepaper doesn't recommend a specific peak-hour toll rate.",
            "He doesn't give an exact time.",
        ),
        answers=(
            "He doesn't give an exact time, but says it was a little under fifty-six hours in.",
            "The policy doesn't exclude any specific breed of dog.",
            "She doesn't wear a specific uniform at the school.",
        ),
        note="A source or speaker that gives no *specific* or *exact* one of what was asked; a"
        ' report after "but" still answers approximately',
    ),
    Rule(
        "instrument-does-not-answer",
        RuleKind.SHAPE,
        rf"\b{IHEAD}{POST}{ADVS} {NEGATION}{ADVS} (?:answer|address|resolve|settle|speak to) "
        r"(?:your|the|this|that) (?:\w+ ){0,2}?(?:question|query)\b",
        guards=("question", "query"),
        triggers=("n't", "not", "cannot"),
        declines=("So the guideline doesn't answer your question about children.",),
        answers=("The guideline answers your question: adults take 1 g three times daily.",),
    ),
    Rule(
        "nowhere-in-the-source-is",
        RuleKind.SHAPE,
        r"\bnowhere (?:in|within|throughout|across) (?:the |this |these |your |any |its )?(?:[\w-]+ )"
        rf"{{0,3}}?(?:{HEAD}|{IHEAD}){POST},? (?:is|are|was|were|does|do|did|has|have) (?:[\w'-]+ )"
        rf"{{0,6}}?(?:{SHAPE_PARTICIPLE}|set|fixed|{BASE})\b",
        guards=("nowhere",),
        triggers=("nowhere",),
        declines=(
            "Nowhere in the standard is a minimum password length set.",
            "Nowhere in the report does it mention the cost of the bridge.",
        ),
        answers=("Nowhere in the lease is subletting permitted.",),
    ),
    Rule(
        "not-in-any-of-the-sources",
        RuleKind.SHAPE,
        rf"{NEGATION}{ADVS} (?:{BASE}|appear|feature|come up|show up|turn up)\b[^.;:!?]{{0,80}}? "
        r"(?:in|across|from|throughout) (?:any|either) (?:one )?of (?:the|his|her|their|these|"
        r"those|its|our|your)\b",
        guards=("any of", "either of", "any one of"),
        triggers=("n't", "not", "never", "cannot"),
        declines=(
            "The governor doesn't mention cryptocurrency in any of the four addresses.",
            "She does not discuss the merger in any of her letters.",
        ),
        answers=("She does not like any of the suitors her mother picks.",),
    ),
    Rule(
        "absent-from-the-document",
        RuleKind.SHAPE,
        r"\b(?:does not|doesn't|do not|don't|did not|didn't|never) (?:appear|show up|feature|come "
        r"up|turn up)s?(?: anywhere)? (?:in|within|among|throughout) (?:the|this|these|that|your) "
        rf"(?:[\w-]+ ){{0,2}}?(?:{HEAD}|{IHEAD}){POST}(?= *(?:$|[.,;:!?)—–-]))|"
        r"\b(?:isn't|is not|aren't|are not|wasn't|was not|weren't|were not) (?:anywhere |stated |"
        r"given |mentioned |listed |included |recorded |contained |provided |specified |found |set "
        r"out |shown |reported )?(?:in|within|among|part of) (?:the|this|these|that|your) "
        rf"(?:[\w-]+ ){{0,2}}?(?:{HEAD}|{IHEAD}){POST}(?: (?:either|at all|anywhere|itself))?"
        r"(?= *(?:$|[.,;:!?)—–-]))|\b(?:isn't|is not|aren't|are not|wasn't|was not) (?:anywhere )?"
        r"in there\b|^no (?:[\w-]+ ){0,3}?(?:appears?|is (?:given|listed|mentioned|stated|included)) "
        rf"(?:anywhere )?in (?:the|this|these|that|your) (?:[\w-]+ ){{0,2}}?(?:{HEAD}|{IHEAD})\b",
        guards=(
            "appear",
            "show up",
            "feature",
            "come up",
            "turn up",
            " in",
            "part of",
            "within",
            "among",
        ),
        triggers=("n't", "not", "never", "no"),
        declines=(
            "The candidate's salary expectation doesn't appear in the transcript.",
            "The number you asked for isn't in the document.",
            "So quorum is known, but the number of yes votes isn't in there.",
            "No foreword appears in this report.",
        ),
        answers=(
            "The symptoms do not appear until the second week.",
            "The deposit is not in the lease's main schedule but in Annex B: $1,200.",
        ),
        note="Whatever was asked, said to be absent from a document named by its kind; the"
        " clause ends there (a place after it, an answer, is not absence)",
    ),
    Rule(
        "looked-for-it-in-vain",
        RuleKind.SHAPE,
        r"^(?:i|we) (?:looked|searched|checked|scanned|hunted) (?:\w+ )?(?:for|through)\b"
        r"[^.;!?]{0,160}?(?:,? (?:but|and)| [—–-]|;) (?:[\w'-]+ ){0,6}?(?:does not|doesn't|do not|"
        r"don't|did not|didn't|isn't|aren't|wasn't|weren't|is not|are not|was not|cannot|can't|"
        r"couldn't|could not|no|none|nothing|nowhere|never)\b",
        guards=("look", "search", "check", "scan", "hunt"),
        triggers=("n't", "not", "no", "none", "nothing", "nowhere", "never", "cannot"),
        declines=(
            "I looked for a commission rate in the terms of service, but the ToS doesn't give one.",
            'I checked for "crypto" and "blockchain" in all four speeches, and none appears.',
        ),
        answers=("I checked the schedule: the deposit is $1,200 and is not refundable.",),
    ),
    Rule(
        "neither-source-says",
        RuleKind.SHAPE,
        rf"\bneither (?:the |this |these |its |your )?(?:[\w-]+ ){{0,3}}?(?:{HEAD}|{IHEAD}) nor (?:the "
        rf"|this |these |its |your )?(?:[\w-]+ ){{0,3}}?(?:{HEAD}|{IHEAD}){POST}{ADVS} "
        rf"(?:{THIRD}|{PAST}|{BASE})\b",
        guards=("neither",),
        triggers=("neither",),
        declines=("Neither the lease nor the addendum mentions pets.",),
        answers=("Neither the tenant nor the landlord pays the water bill: the council does.",),
    ),
    Rule(
        "speaker-does-not-say-which",
        RuleKind.SHAPE,
        r"^(?:he|she|they) (?:does not|doesn't|do not|don't|did not|didn't|never)(?: actually| "
        r"explicitly| directly| specifically)? (?:says?|specify|specifies|state|states|explain|"
        r"explains|disclose|discloses|reveal|reveals|indicate|indicates|mention|mentions|tell us|"
        r"tells us|tell|tells) (?:why|how|when|where|what|who|whom|which|whether)\b",
        guards=("he ", "she ", "they "),
        triggers=("n't", "not", "never"),
        declines=("She doesn't say why she left the company.",),
        answers=("He never tells Anna why he left; instead he burns the letter and goes to Rome.",),
        note="A person whose words are the source (an interviewee, a narrator) not saying which"
        " one; what follows after a semicolon or a but decides as for any decline",
    ),
    Rule(
        "reader-never-told",
        RuleKind.SHAPE,
        r"\b(?:we|you|the reader|readers)(?: are|'re)? (?:never|not) (?:actually |explicitly "
        r"|directly )?(?:told(?! to\b)|shown|given|informed)\b|\b(?:we|you|the reader|readers) (?:never|"
        r"don't|do not|didn't|did not) (?:actually |explicitly )?(?:learns?|finds? out|hears?|get told)\b",
        guards=("never", "not", "n't"),
        triggers=("never", "not", "n't"),
        declines=("We're never told what was in the box.", "The reader never learns her name."),
        answers=("We are not told to wait: the guide says to start at once.",),
    ),
    Rule(
        "you-will-not-find-it",
        RuleKind.SHAPE,
        r"\byou (?:won't|will not|wouldn't|would not|can't|cannot|can not) find (?:[\w'-]+ ){0,6}?"
        rf"(?:in|within|anywhere in) (?:the|this|these|that|your) (?:[\w-]+ ){{0,2}}?(?:{HEAD}|"
        rf"{IHEAD})\b",
        guards=("find",),
        triggers=("n't", "not", "cannot"),
        declines=("You won't find the warranty terms in this guide.",),
        answers=("You won't find a cheaper plan: the guide lists this one at $5.",),
    ),
    Rule(
        "not-enough-in-the-source-to",
        RuleKind.SHAPE,
        r"\bthere(?: is|'s) (?:not|n't) enough (?:information |detail |details |data )?(?:in|within) "
        rf"(?:the|this|these|that|your) (?:[\w-]+ ){{0,2}}?(?:{HEAD}|{IHEAD}){POST} to\b|"
        r"\bthere isn't enough (?:information |detail |details |data )?(?:in|within) (?:the|this|"
        rf"these|that|your) (?:[\w-]+ ){{0,2}}?(?:{HEAD}|{IHEAD}){POST} to\b",
        guards=("enough",),
        triggers=("not", "n't"),
        declines=("There isn't enough in the minutes to say who voted against.",),
        answers=("There is enough in the budget to hire two more nurses, the report says.",),
    ),
    Rule(
        "source-has-no",
        RuleKind.SHAPE,
        rf"{SHAPE_SUBJECT}{ADVS} {NEGATION}{ADVS} (?:have|hold|carry) (?:any |enough |the |a |an |"
        r"specific |sufficient |much |relevant |clear |direct |explicit )*(?:\w+ )?"
        + ABSENT
        + r"\b",
        guards=("not", "n't", "never", "fail", "cannot"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=("The passages do not have any details about the wedding.",),
        answers=("The house does not have any windows on the north side.",),
        note='"The passage does not have (any) information", "the text doesn\'t have the answer"',
    ),
    Rule(
        "source-never",
        RuleKind.SHAPE,
        rf"{SHAPE_SUBJECT}{ADVS} never(?: {ADV})? (?:{THIRD}|{PAST})\b",
        guards=("never",),
        triggers=("never",),
        declines=("The report never discloses the salary.",),
        answers=("Pete never finishes the painting.",),
        note='"The passages never mention", "the report has not (yet) disclosed"',
    ),
    Rule(
        "source-perfect",
        RuleKind.SHAPE,
        rf"{SHAPE_SUBJECT}{ADVS} (?:has not|have not|hasn't|haven't|had not|hadn't)"
        rf"(?: (?:been|yet))?{ADVS} {PARTICIPLE_INFO}\b",
        guards=("not", "n't"),
        triggers=("n't", "not"),
        declines=("The filing has not disclosed the purchase price.",),
        answers=("The company has not paid a dividend since 2019, the filing says.",),
    ),
    Rule(
        "source-gives-no",
        RuleKind.SHAPE,
        rf"\b{HEAD}{POST}{ADVS} (?:{THIRD}|{BASE}|{PAST}|makes?|made|contains?|has|have|"
        r"holds?|bears?|carr(?:y|ies)|yields?) (?:absolutely )?(?:no|nothing|little|zero|not? "
        r"(?:any|a single|enough)|none)\b",
        guards=("no", "little", "zero"),
        triggers=("no", "nothing", "not", "none"),
        declines=("The filing makes no mention of the lawsuit.",),
        answers=("The filing makes clear the lawsuit was settled in 2021.",),
        note='"The filing makes no mention", "the passages give no indication", "provides nothing on"',
    ),
    Rule(
        "source-silent",
        RuleKind.SHAPE,
        rf"\b(?:{HEAD}|{IHEAD}){POST} (?:is|are|was|were|remains?|seems?|appears?)(?: to be)? "
        r"(?:\w+ )?quiet (?:on|about|as to|regarding)\b|"
        # "..., it is silent on late fees" (the present tense: a story's "it was silent" is not)
        r"\b(?:it|they) (?:is|are|remains?) (?:\w+ )?silent (?:on|about|as to|regarding|"
        r"concerning)\b|"
        rf"\b{HEAD}{POST} (?:is|are|was|were|remains?|seems?|appears?)(?: to be)? (?:\w+ )?"
        r"silent\b|\b(?:the|these|this|those|provided|given) (?:\w+ ){0,2}?"
        + HEAD
        + POST
        + r"(?: (?:seems?|appears?) to)? (?:lacks?|lacked|omits?|leaves? out)\b",
        guards=("silent", "lack", "omit", "leave", "quiet"),
        triggers=("silent", "lack*", "omit*", "leave", "leaves", "quiet"),
        declines=(
            "The passages are silent on his motives.",
            "Although the contract covers payment terms at length, it is silent on late fees.",
            "The report is quiet on executive pay.",
        ),
        answers=(
            "The forest is silent at night, the narrator says.",
            "It was silent on the ship that night, and then the storm came.",
            "The report is quiet and understated in tone, and it recommends a 3% rise.",
        ),
        note='"The passages are silent on ...", "the context lacks ..."',
    ),
    Rule(
        "source-leaves-unanswered",
        RuleKind.SHAPE,
        rf"\b(?:{HEAD}|{IHEAD}){POST}(?: (?:simply|also|deliberately|ultimately|however))? leaves? "
        r"(?:[\w'-]+ ){0,5}?(?:unanswered|unexplained|unrevealed|unresolved|unclear|unspecified|"
        r"unstated|undisclosed|undefined|undetermined|a mystery|to be (?:determined|decided|"
        r"confirmed|agreed|finali[sz]ed|set))\b",
        guards=("leave",),
        triggers=("leave", "leaves"),
        declines=(
            "The novel leaves the stranger's identity unrevealed.",
            "The protocol leaves the sample size to be determined.",
            "The specification leaves the timeout undefined.",
        ),
        answers=("The storm leaves the village cut off for three days.",),
        note='"The text leaves this unanswered", "the novel leaves his fate a mystery"',
    ),
    Rule(
        "none-of-the-source",
        RuleKind.SHAPE,
        r"\b(?:none|neither|not one|no|nothing) (?:of |in |within |from |among )?"
        rf"(?:the |these |this |those |any )?(?:[\w-]+ ){{0,3}}?{HEAD}{POST}{ADVS}"
        rf"(?: (?:seems? to|appears? to|do|does|did|can|could))? {ANY_VERB}\b|"
        # "..., but none of them mention ...": the source named before, by a pronoun
        rf"\b(?:none|neither|not one) of (?:them|these|those|it)(?: \w+)?{ADVS} {ANY_VERB}\b",
        guards=("none", "neither", "not one", "no ", "nothing"),
        triggers=("none", "neither", "nor", "not", "no", "nothing"),
        openings=("none of", "neither"),
        declines=("None of these passages provide the information requested.",),
        answers=("None of the guests arrived before noon, the diary says.",),
        note='"None of the passages mention", "Neither paper discusses", "Nothing in the text indicates"',
    ),
    Rule(
        "nothing-in-the-source",
        RuleKind.SHAPE,
        r"\b(?:nothing|nowhere) (?:(?:is |was )?(?:in|within|from|throughout) )(?:the |these |this )?"
        rf"(?:[\w-]+ ){{0,3}}?{HEAD}\b|\bnowhere (?:does|do|did|is|are|was|were) (?:the |these |"
        rf"this |any )?(?:[\w-]+ ){{0,3}}?{HEAD}\b",
        guards=("nothing", "nowhere"),
        triggers=("nothing", "nowhere"),
        openings=("nothing in", "nowhere in"),
        declines=("Nothing in the text indicates where she was born.",),
        answers=("Nothing in the fridge was fresh, so they ate out.",),
    ),
    Rule(
        "negative-existential",
        RuleKind.SHAPE,
        r"\bthere(?: is| are| was| were|'s| seems? to be| appears? to be| exists?| has been| have "
        r"been| remains?) (?:no|not any|not a|nothing|not enough|little|insufficient|not much|"
        r"not an?|zero|none) (?:\w+ ){0,3}?" + ABSENT + r"\b|\bthere(?: is| are| was| were|'s)"
        r" not\b|\bthere (?:isn't|aren't|wasn't|weren't)(?: really)?(?: any| enough| a| an| much)? "
        r"(?:\w+ ){0,3}?" + ABSENT + r"\b|\bthere (?:does not|doesn't|do not|don't|did not|didn't) "
        r"(?:seem|appear) to (?:be|have been) (?:any |a |an |much |enough |sufficient )?(?:\w+ ){0,3}?"
        + ABSENT
        + r"\b",
        guards=("there",),
        triggers=("no", "not", "nothing", "n't", "none", "insufficient"),
        openings=(
            "there is no",
            "there's no",
            "there are no",
            "there is not",
            "there seems",
            "there seem",
            "there appears",
            "there appear",
            "there was no",
            "there were no",
            "there isn't",
            "there aren't",
        ),
        declines=("There seems to be no information on the cost.",),
        answers=(
            "There seems to be a strong wind in the north, so the ferry is cancelled.",
            "There is nothing better than honey and lemon for a sore throat, the author says.",
        ),
        note='"There is no (specific) discussion of", "there\'s no mention", "there seem to be no details"',
    ),
    Rule(
        "no-x-in-the-source",
        RuleKind.SHAPE,
        r"\bthere(?: is| are| was| were|'s| seems? to be| appears? to be) (?:no|not any) (?:[\w-]+ )"
        rf"{{0,3}}?(?:{ABSENT}|{INFO_NOUN}) (?:(?:{PARTICIPLE_INFO})(?= *(?:$|[,;:.!?)])| "
        r"(?:in|within|from|for|about|on|regarding|concerning|as to|anywhere|here|at all)\b)|"
        rf"(?:in|within|from|among) (?:any of )?(?:the |these |this )?(?:{RHEAD}|(?:"
        rf"{alt(HANDED)}) (?:[\w-]+ ){{0,2}}?{HEAD})\b)",
        guards=("there",),
        triggers=("no", "not"),
        declines=("There are no specific instructions in the passages.",),
        answers=(
            (
                "There are no side effects reported in the study.",
                "What are the side effects of the drug?",
            ),
        ),
        note='"There are no specific instructions provided for X", "there were no figures given", "there are no instructions in the passages": a noun of information (an absence noun or what a how-question asks for), absent by a participle of a verb of information or from the handed source ("There are no side effects reported in the passages" answers: none exist)',
    ),
    Rule(
        "nothing-about",
        RuleKind.SHAPE,
        r"\bthere(?: is|'s| was) (?:absolutely )?nothing (?:(?:in|within) (?:the |these |this )?"
        rf"(?:[\w-]+ ){{0,3}}?{HEAD} )?(?:about|on|regarding|concerning|related to|that "
        r"(?:says|mentions|indicates|states|answers|addresses)|to (?:indicate|suggest|say|tell|"
        r"confirm|determine|identify))\b",
        guards=("nothing",),
        triggers=("nothing",),
        declines=("There is nothing about his childhood in the passages.",),
        answers=("The plan said nothing new, and the town was built in 1820.",),
    ),
    Rule(
        "not-in-the-source",
        RuleKind.SHAPE,
        r"\b(?:answer|information|details?|data|it|this|that|figure|number|date|name)(?: you "
        r"(?:are|were) (?:looking|asking) for| (?:requested|asked for|sought|needed|required|in "
        r"question))?(?: (?:to|about|on|for|of|regarding) [\w'-]+(?: [\w'-]+){0,4}?)? (?:(?:is|are|"
        r"was|were) not|isn't|aren't|wasn't|weren't) (?:\w+ )?(?:in|within|"
        rf"among|part of|contained in|present in|found in) (?:the |these |this |any )?(?:[\w-]+ )"
        rf"{{0,3}}?{HEAD}\b|^(?:not|answer not|information not|data not) (?:\w+ )?(?:in|within|"
        rf"found in|present in|available in|included in|mentioned in|given in) (?:the |these )?"
        rf"(?:[\w-]+ ){{0,2}}?{HEAD}\b|^(?:answer|information|data|details) not (?:found|"
        r"available|provided|given|present|mentioned|specified|stated)\b",
        guards=("not", "n't"),
        triggers=("not", "n't"),
        openings=("this information is not", "that information is not", "the information is not"),
        declines=("The answer is not in the provided text.",),
        answers=("The key is not in the drawer but under the mat.",),
    ),
    Rule(
        "not-appearing-in-the-source",
        RuleKind.SHAPE,
        r"\b(?:does not|doesn't|do not|don't|did not|didn't) (?:appear|show up|feature|figure|occur)"
        rf"(?: anywhere)? (?:in|within|among) (?:any of )?(?:the |these |this |your )?(?:{RHEAD}|"
        rf"texts?|(?:{alt(HANDED)}) (?:[\w-]+ ){{0,2}}?{HEAD})\b",
        guards=("not", "n't"),
        triggers=("n't", "not"),
        declines=("The price does not appear in any of the passages.",),
        answers=("The symptoms do not appear until the second week.",),
        note='"The price does not appear in any of the passages", "... doesn\'t show up in the text"',
    ),
    Rule(
        "source-irrelevant",
        RuleKind.SHAPE,
        rf"\b{HEAD}{POST} (?:is|are|was|were|seems? to be|appears? to be) (?:\w+ )?(?:not "
        r"(?:relevant|related|pertinent|applicable|helpful|useful)|irrelevant|unrelated|unhelpful|"
        r"insufficient|not "
        r"(?:sufficient|enough|adequate)|inadequate)(?: (?:to|for)\b| *[.!]?$)",
        guards=(
            "not",
            "irrelevant",
            "unrelated",
            "unhelpful",
            "insufficient",
            "inadequate",
        ),
        triggers=("not", "irrelevant", "unrelated", "insufficient", "inadequate"),
        declines=("The provided passages are not relevant to the question.",),
        answers=("The weather was not relevant to the outcome; the team lost on skill.",),
    ),
    Rule(
        "source-only-other",
        RuleKind.SHAPE,
        r"\b(?:but|however|while|whereas|instead)(?: [\w,]+)? (?:the |these |this )?(?:[\w-]+ )"
        rf"{{0,2}}?{HEAD}{POST} (?:only|just|merely|mainly|primarily|solely) {ANY_VERB}\b",
        guards=("only", "just", "merely", "mainly", "primarily", "solely"),
        triggers=("only",),
        declines=("I looked, but the passages only discuss the history of the castle.",),
        answers=("Note that you can only do this once per year.",),
    ),
    Rule(
        "no-x-is-given",
        RuleKind.SHAPE,
        r"\bno (?:\w+ ){0,3}?(?:is|are|was|were|has been|have been|had been|could be|can be|"
        rf"seems to be|appears to be|seem to be|appear to be){ADVS} {SHAPE_PARTICIPLE}\b|"
        # "No mention is made of X", "nothing is said about X"
        r"\bno (?:\w+ )?mention (?:is|was|has been|have been|had been) made\b|\bnothing (?:is|was|"
        r"has been|had been) (?:said|mentioned|stated|given|provided|specified|noted|written) "
        r"(?:about|on|regarding|concerning|as to|of|in)\b",
        guards=("no ", "nothing"),
        triggers=("no", "nothing"),
        declines=("No specific figures were provided for the second quarter.",),
        answers=("No dogs are allowed in the park after dark.",),
        note='"no name is given", "No specific figures were provided", "no details are provided"',
    ),
    Rule(
        "no-x-is-given-in-the-source",
        RuleKind.SHAPE,
        r"\bno (?:[\w-]+ ){4,8}?(?:is|are|was|were|has been|have been) (?:\w+ )?(?:given|stated|"
        r"specified|mentioned|provided|set out|listed|named|disclosed|reported|defined) (?:in|within|"
        rf"by|anywhere in) (?:the |this |these |your )?(?:[\w-]+ ){{0,3}}?(?:{HEAD}|{IHEAD})\b",
        guards=("no ",),
        triggers=("no",),
        declines=(
            "No specific monetary limit on gifts from suppliers is given in the code of conduct.",
        ),
        answers=("No one in the family was named after him, the biography says.",),
        note="A long absent noun phrase, absent from a named source (the short one: no-x-is-given)",
    ),
    Rule(
        "no-x",
        RuleKind.SHAPE,
        rf"^no (?:\w+ ){{0,2}}?{ABSENT}(?: (?:of|about|on|regarding|for|as to|in|available|"
        r"provided|given|found|mentioned|specified|stated)\b|[.!]?$)",
        guards=("no ",),
        triggers=("no",),
        openings=(
            "no information",
            "no mention",
            "no specific",
            "no details",
            "no data",
            "no reference",
            "no direct",
            "no clear",
            "no explicit",
        ),
        declines=("No information about the treaty.",),
        answers=("No, the treaty was signed in 1648.",),
        note='"No mention of X.", "No information about ...", "No (specific) data on ...": sentence-initial',
    ),
    Rule(
        "terse",
        RuleKind.SHAPE,
        rf"^(?:none|nothing|not|none was|none were|none is|none are)(?: {ADV})? "
        rf"{SHAPE_PARTICIPLE}\b|^(?:unclear|uncertain|undetermined|indeterminate|not clear|not "
        r"determinable)\b|"
        # "Nothing about the CEO's salary.", "nothing on X in the passages" (no verb of its own)
        r"^nothing (?:about|on|regarding|concerning|related to|as to) (?:(?:when|where|who|why|how|"
        r"what|which|whether)\b[^.!?]{0,80}|(?!.*\b(?:is|was|were|are|has|had|seems|seemed|could|"
        r"would|will|can)\b)(?:[\w'-]+ ){0,6}?[\w'-]+)[.!]?$",
        guards=("none", "nothing", "not", "unclear", "uncertain", "undetermin", "indetermin"),
        triggers=("none", "nothing", "not", "unclear", "uncertain", "undetermined"),
        openings=("not explicitly", "not specifically", "not directly", "not clear"),
        declines=("None mentioned.",),
        answers=("None of them came back, the story ends.",),
        note='"None mentioned.", "Not specified in the passages.", "None given"',
    ),
    Rule(
        "passive-absence",
        RuleKind.SHAPE,
        r"\b(?:(?:is|are|was|were|could be|can be) (?:not|never)|(?:has|have|had) (?:not|never) "
        r"been|isn't|aren't|wasn't|weren't|hasn't been|haven't been|hadn't been|'s not|cannot be|"
        r"can't be|couldn't be|(?:does not|doesn't|do not|don't) (?:appear|seem) to (?:be|have "
        rf"been)){ADVS} {SHAPE_PARTICIPLE}"
        rf"(?= *(?:$|[,;:.!?)]| (?:anywhere|at all|here|either|yet)\b| (?:{ADV} )?(?:in|within|"
        rf"by|from|throughout|based on|among|across|on the basis of) (?:any of )?(?:\w+ ){{0,3}}?"
        rf"{HEAD}\b))",
        guards=("not", "n't", "never", "cannot"),
        triggers=("not", "never", "n't", "cannot"),
        declines=("The exact cause of the twins is not fully explained in the given passages.",),
        answers=("The bridge is not finished yet; it opens next spring.",),
        note='"X is not mentioned.", "X is not specified in the passage", "X has not been (explicitly) evaluated on Y in the provided paper"',
    ),
    Rule(
        "passive-absence-in-retrieval",
        RuleKind.SHAPE,
        r"\b(?:(?:is|are|was|were) (?:not|never)|(?:has|have|had) (?:not|never) been|isn't|"
        r"aren't|wasn't|weren't|hasn't been|haven't been)(?: \w+){0,2}? \w+(?:ed|en|wn|t)\b"
        r"(?: [\w'-]+){0,8}? (?:in|within|by|from|throughout|based on) (?:any of )?(?:the |these "
        r"|this )(?:(?:provided|given|retrieved|supplied|above|available|following|shared) )"
        rf"(?:\w+ ){{0,2}}?{HEAD}\b|\b(?:is|are|was|were) not \w+ed (?: [\w'-]+){{0,8}}? in "
        rf"(?:the |these )?{RHEAD}\b",
        guards=("not", "n't", "never"),
        triggers=("not", "never", "n't"),
        declines=("The purchase price was not disclosed in the provided documents.",),
        answers=("The recipe was not tested in a fan oven, the author says, so lower the heat.",),
    ),
    Rule(
        "inability",
        RuleKind.SHAPE,
        r"\b(?:i|we)(?: (?:really |simply |still |unfortunately ))?(?: (?:cannot|can't|can not|"
        r"could not|couldn't|am unable to|was unable to|were unable to|are unable to|'m unable to|"
        r"am not able to|'m not able to|was not able to|were not able to|wasn't able to|"
        r"weren't able to|am not able to|hasn't been able to|do not|don't|did not|"
        r"didn't|will not be able to|won't be able to|was not|'m not|am not|could not|"
        r"was unable|have been unable to|have not been able to|haven't been able to|had trouble|"
        rf"had difficulty|have no way to|have no way of)) (?:\w+ ){{0,3}}?"
        # "I do not see any problem with ...": seeing is a decline only of what the source holds
        # (the row inability-to-see)
        rf"(?!(?:see|notice|spot)\b){SEEK}\b",
        guards=("i ", "we "),
        triggers=("cannot", "n't", "not", "unable", "sorry", "apologi+", "afraid"),
        openings=(
            "i cannot",
            "i can't",
            "i can not",
            "i could not",
            "i couldn't",
            "i am unable",
            "i'm unable",
            "i am not able",
            "i'm not able",
            "i did not",
            "i didn't",
            "we cannot",
            "we can't",
            "we could not",
            "we couldn't",
            "we do not",
            "we don't",
        ),
        declines=("I cannot conclusively state where they first met.",),
        answers=(
            "I cannot stress enough how important the first step is: soak the beans overnight.",
            "I do not see any problem with using olive oil instead of butter in this recipe.",
        ),
        note='"I could not find", "we cannot determine", "I do not see any mention", "I\'m unable to"',
    ),
    Rule(
        "inability-to-see",
        RuleKind.SHAPE,
        r"\b(?:i|we) (?:do not|don't|did not|didn't|cannot|can't|could not|couldn't) (?:see|find|"
        r"spot|notice|locate|identify|come across|recall) (?:any |a |an |the )?(?:\w+ ){0,3}?"
        rf"(?:{ABSENT}|(?:in|within|from) (?:the |these |this )?(?:\w+ ){{0,2}}?{HEAD}|"
        # "I don't see a target sample size stated anywhere"
        rf"{SHAPE_PARTICIPLE} (?:anywhere|in (?:the|this|these|your)\b))\b",
        guards=("i ", "we "),
        triggers=("n't", "not", "cannot"),
        openings=("i do not see", "i don't see"),
        declines=(
            "I do not see any mention of the tenant in the passages.",
            "Having gone through the protocol, I don't see a target sample size stated anywhere.",
        ),
        answers=("They do not see each other until the final chapter, when they marry.",),
    ),
    Rule(
        "unable",
        RuleKind.SHAPE,
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
        guards=("unable", "not able", "impossible", "cannot", "can't", "can not", "could"),
        triggers=("unable", "impossible", "not", "cannot", "n't"),
        openings=("unable to",),
        declines=("Unable to answer based on given passages.",),
        answers=("He was unable to swim, so he drowned in the lake.",),
    ),
    Rule(
        "no-access",
        RuleKind.SHAPE,
        r"\b(?:i|we) (?:do not|don't|did not|didn't) have (?:\w+ ){0,3}?(?:context|information|"
        r"details|data|access|knowledge|answer|specifics|figures|numbers)\b|\b(?:i|we) (?:have|had|"
        r"'ve) no (?:\w+ ){0,2}?(?:context|information|details|data|access|knowledge|answer|"
        r"specifics|figures|numbers|way (?:of|to))\b",
        guards=("i ", "we "),
        triggers=("n't", "not", "no"),
        openings=("i don't have", "i do not have"),
        declines=("I do not have enough context to provide a definite answer.",),
        answers=("The villagers had no access to clean water until 1950.",),
    ),
    Rule(
        "and-cannot-find",
        RuleKind.SHAPE,
        # the speaker's own search: "..., but I could not find", "I read it but could not find"
        r"\b(?:but|and|yet) (?:i|we) (?:couldn't|could not|cannot|can't|did not|didn't|was "
        rf"unable to|am unable to|were unable to) (?:\w+ ){{0,2}}?{SEEK}\b|^(?:i|we) (?:[\w',-]+ )"
        r"{0,25}?(?:but|and|yet) (?:couldn't|could not|cannot|can't|did not|didn't|was unable to|"
        rf"am unable to|were unable to) (?:\w+ ){{0,2}}?{SEEK}\b",
        guards=("n't", "not", "unable"),
        triggers=("n't", "not", "cannot", "unable"),
        declines=("I read the report but could not find the figure.",),
        answers=(
            "The ring was lost, and she could not stop crying until Tom found it in May.",
            "The police searched the house but could not find the weapon. The butler did it.",
        ),
    ),
    Rule(
        "source-not-specific",
        RuleKind.SHAPE,
        rf"\b(?:{HEAD}|{IHEAD}){POST} (?:is|are|was|were) (?:not (?:\w+ )?(?:specific|explicit|clear|"
        r"definitive|conclusive|informative|detailed)|(?:\w+ )?(?:unclear|vague|ambiguous|"
        r"inconclusive)) (?:about|on|regarding|as to|concerning|in)\b",
        guards=("not", "unclear", "vague", "ambiguous", "inconclusive"),
        triggers=("not", "unclear"),
        declines=(
            "The passage is not specific about the dates.",
            "The lease is not specific about the deposit.",
            "The ordinance is unclear on whether food trucks need a permit.",
        ),
        answers=("The passage is clear about the dates: 1901 to 1905.",),
    ),
    Rule(
        "out-of-scope",
        RuleKind.SHAPE,
        r"\b(?:beyond|outside(?: of)?|not within|not in) the (?:\w+ ){0,1}?scope of (?:the |these "
        rf"|this )?(?:\w+ ){{0,2}}?{HEAD}\b|\b(?:falls?|fell|lies?|is|are) (?:\w+ )?outside(?: of)? "
        rf"(?:the |these |this |your )?(?:[\w-]+ ){{0,2}}?{HEAD}\b",
        guards=("scope", "outside"),
        triggers=("beyond", "outside", "not"),
        declines=("That question is outside the scope of the provided documents.",),
        answers=("Remove the outside cover on the vent.",),
    ),
    Rule(
        "absent-adjective",
        RuleKind.SHAPE,
        r"\b(?:is|are|was|were|remains?|remained|goes|go|went|seems?|appears?|stays?)(?: to be)?"
        r"(?: (?:entirely|completely|largely|still|also|simply))? (?:un(?:available|specified|"
        r"mentioned|stated|disclosed|reported|documented|addressed|determined)(?= *(?:$|[,;:.!?)]))|"
        r"(?:un(?:available|specified|mentioned|stated|disclosed|reported|documented|addressed|"
        r"determined)|missing|absent|unknown|lacking|not present) (?:in|from|within|throughout|"
        rf"based on) (?:any of )?(?:the |these |this |your )?(?:[\w-]+ ){{0,2}}?{HEAD}\b)",
        guards=(
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
        triggers=(
            "unavailable",
            "unspecified",
            "unmentioned",
            "unstated",
            "undisclosed",
            "unreported",
            "undocumented",
            "unaddressed",
            "undetermined",
            "missing",
            "absent",
            "unknown",
            "lack*",
            "not",
        ),
        declines=("The salary is unspecified in the text.",),
        answers=("The salary is missing a bonus component, which was cut in 2020.",),
        note='"The salary is unspecified in the text", "... remains undisclosed.", "is missing from the provided context": an adjective of absence (missing, absent, unknown only with the source)',
    ),
    Rule(
        "source-does-not-allow",
        RuleKind.SHAPE,
        rf"{SHAPE_SUBJECT}{ADVS} {NEGATION}{ADVS} (?:allow|permit|enable|let)(?: (?:me|us|one|you|"
        rf"the reader|for))?(?: to)? (?:\w+ ){{0,2}}?(?:{SEEK}|(?:a|an|any) (?:\w+ )?"
        r"(?:determination|answer|conclusion|estimate))\b",
        guards=("allow", "permit", "enable", "let"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=("The excerpts do not allow me to determine the winner.",),
        answers=("The rules do not allow players to pass the ball backwards.",),
        note='"The excerpts do not allow me to determine ...", "does not allow a determination of ..."',
    ),
    Rule(
        "not-something",
        RuleKind.SHAPE,
        r"(?:\bnot|n't) (?:something|anything|a (?:topic|subject|question|point|detail|matter)) (?:that |"
        rf"which )?(?:(?:the|these|this|those|your|any) )?(?:[\w-]+ ){{0,2}}?{HEAD}{POST}"
        rf"{ADVS}(?: (?:seems? to|appears? to))? {ANY_VERB}\b|\bnot (?:something|anything) "
        rf"(?:that )?(?:i|we) (?:can|could|am able to|was able to) (?:\w+ ){{0,2}}?{SEEK}\b",
        guards=(
            "not something",
            "not anything",
            "not a ",
            "n't something",
            "n't anything",
            "n't a ",
        ),
        triggers=("not", "n't"),
        declines=("That's not something the provided documents cover.",),
        answers=("That's not something to worry about: the rash fades in a week.",),
        note='"That\'s not something the provided documents cover", "not something I can determine"',
    ),
    Rule(
        "retrieved-source-negation",
        RuleKind.SHAPE,
        rf"(?:\b{RHEAD}|\b(?:{alt(HANDED)}) (?:[\w-]+ ){{0,2}}?{HEAD}|\b{HEAD} (?:{alt(HANDED)}|"
        r"(?:that |which )?(?:you|i|we) (?:have )?(?:provided|shared|gave|supplied|attached)))"
        rf"{ADVS} {NEGATION}{ADVS} {WEAK_VERB}\b",
        guards=("show", "display", "depict", "illustrat", "captur", "featur"),
        triggers=("n't", "not", "never", "cannot", "fail*"),
        declines=("The financial statement you shared doesn't show the salary.",),
        answers=("The data does not show a difference between the groups.",),
        note='"The financial statement you shared doesn\'t show the salary": a verb that states content only for a source handed to the model ("The data does not show a difference" answers).',
    ),
    Rule(
        "source-but-not",
        RuleKind.SHAPE,
        rf"^(?:(?:the|these|this|those|your|any) )?(?:[\w-]+ ){{0,3}}?{HEAD}{POST}\b[^;]{{0,200}}? "
        rf"(?:but|and|yet|while|though)(?: it| they| the \w+)?{ADVS} (?:{NEGATION}{ADVS} "
        rf"(?:{BASE}|{WEAK_VERB})|(?:{THIRD}|{BASE}|{PAST}|makes?|made|has|have|contains?) "
        r"(?:absolutely )?(?:nothing|no)) ",
        guards=("not", "n't", "never", "nothing", "no ", "fail"),
        triggers=("n't", "not", "never", "nothing", "no", "fail*"),
        declines=("The context covers the merger but doesn't break down the costs.",),
        answers=("The report covers the merger and explains that it cost $2 billion.",),
        note='"The context covers X but doesn\'t break down Y", "... talks about X but says nothing about Y"',
    ),
    Rule(
        "source-covers-other",
        RuleKind.SHAPE,
        rf"^(?:(?:the|these|this|those|your) )?(?:[\w-]+ ){{0,2}}?{HEAD}{POST}(?: (?:only|mainly|"
        r"mostly|primarily|largely|chiefly|instead|seem to|seems to|appear to|appears to))* "
        r"(?:focus(?:es|ed)? (?:on|upon)|discuss(?:es|ed)?|cover(?:s|ed)?|describe(?:s|d)?|deals? "
        r"with|talks? about|(?:is|are|was|were) about|cent(?:er|re)s? (?:on|around)|concentrates? "
        r"on|address(?:es)?|pertains? to|relates? to)\b[^;]{0,160}?(?:,? rather than|,? instead "
        r"of|, (?:but )?not|,? as opposed to)\b",
        guards=("rather than", "instead of", ", not", ", but not", "as opposed to"),
        triggers=("rather", "instead", "not"),
        declines=("The passages focus on the city's history rather than its population.",),
        answers=("The town is known for its wine rather than its beer.",),
        note='"The passages focus on the city\'s history rather than its population", "..., not X"',
    ),
    Rule(
        "found-nothing",
        RuleKind.SHAPE,
        r"\bi (?:\w+ ){0,8}?(?:found|find|see|saw|located|came across|spotted|noticed) (?:no|"
        r"nothing|none)\b|\b(?:i|we) (?:\w+ ){0,8}?(?:found|find|see|saw|located|came across) no "
        rf"(?:\w+ ){{0,2}}?{ABSENT}\b",
        guards=("i ", "we "),
        triggers=("no", "nothing", "none"),
        openings=("i looked", "i searched", "i reviewed", "i checked"),
        declines=("I reviewed the documents but found no mention of the vote.",),
        answers=("I found the key under the mat, the narrator says.",),
        note='"I reviewed the documents but found no mention of ...", "I found nothing about ..."',
    ),
    Rule(
        "gives-up-question",
        RuleKind.SHAPE,
        GIVES_UP_QUESTION,
        guards=("question", "quer", "unable", "not able"),
        triggers=(
            "cannot",
            "n't",
            "unable",
            "not",
            "without",
            "lack*",
            "insufficient",
            "no",
            "impossible",
        ),
        declines=("There is not enough information to answer the question.",),
        answers=("She answered the question in one word: yes.",),
        note='"it is unable to answer the question", "not enough information to answer the question", "I am unable to answer those parts of the question": the question itself given up on',
    ),
    Rule(
        "cannot-provide",
        RuleKind.WEAK,
        rf"\b(?:i|we) {INABILITY} (?:\w+ ){{0,2}}?(?:provide|give|offer|make|choose|select|"
        r"summari[sz]e|answer|access|read|help)\b",
        guards=(),
        triggers=("cannot", "n't", "not", "unable"),
        declines=("I cannot provide a summary of the meeting.",),
        answers=(
            "I cannot provide verbatim excerpts from the novel. However, the hero is a sailor named Tom who loses his ship.",
        ),
    ),
    Rule(
        "unfortunately-subject",
        RuleKind.RAW_PHRASE,
        rf"^unfortunately,? (?:[\w'’.-]+ ){{1,6}}?(?:does not|doesn't|do not|don't|did not|"
        rf"didn't) (?:\w+ )?{PHRASE_INFO_VERB}\b",
        guards=(),
        triggers=("unfortunately",),
        openings=("unfortunately",),
        declines=("Unfortunately, Felicity does not state his age.",),
        answers=("Unfortunately, the team lost the final 2-1 in extra time.",),
    ),
    Rule(
        "reported-decline",
        RuleKind.QUOTED,
        r"\b(?:reply|respond|answer|say|state|conclude|output|write)(?: with| that)?:? *[\"'“‘]"
        r"([^\"”’]{4,200})",
        guards=('"', "'", "“", "‘"),
        declines=('I must reply with: "Unable to answer based on given passages."',),
        answers=('He said: "The river floods every spring."',),
    ),
    Rule(
        "form",
        RuleKind.FORM,
        r"\bcopyright(?:ed)? (?:material|materials|content|text|texts|restrictions?|issues?|"
        r"infringement|concerns?|books?|works?|story|novel|lyrics|reasons|law)\b|"
        r"\b(?:due to|because of|avoid|avoiding|risk|risking|respect|respecting) (?:\w+ ){0,2}?"
        r"copyright|\bverbatim\b|\bas an ai\b|\bi am an ai\b|\bi'm an ai\b|\bai language model\b|"
        r"\bphysically read|\b(?:i'm|i am) (?:just|only) an ai\b|"
        rf"\b{INABILITY} (?:\w+ ){{0,3}}?(?:reproduce|quote|paraphrase|cite)\b|"
        rf"\b{INABILITY} (?:\w+ ){{0,3}}?(?:provide|give|share|summari[sz]e|read|access|include|"
        r"offer|analy[sz]e) (?:\w+ ){0,4}?(?:excerpts?|quotes?|quotations?|passages?|summary|"
        r"summaries|books?|texts?|content|sources?|novels?|files?|documents?|links?|sections?)\b",
        guards=(
            "copyright",
            "verbatim",
            " ai",
            "ai ",
            "physically",
            "reproduce",
            "quot",
            "paraphrase",
            "cite",
            "not",
            "n't",
            "unable",
        ),
        openings=("as an ai", "i am an ai", "i'm an ai"),
        declines=("As an AI, I cannot read the book. Please provide the text.",),
        answers=(
            "I cannot reproduce copyrighted excerpts. However, the story follows a girl who runs a bakery in Paris.",
        ),
    ),
    Rule(
        "request",
        RuleKind.REQUEST,
        r"^(?:please(?! (?:note|be aware|keep in mind|bear in mind|remember|be advised)\b)|kindly|"
        r"let me know|feel free|i(?:'d| would) be (?:happy|glad)|i hope|thank you|"
        r"thanks|perhaps rephrasing|could you|can you|would you)\b|\bif you (?:can |could |would )?"
        r"(?:provide|share|give|clarify|rephrase|specify|tell me)\b|\bplease (?:provide|share|"
        r"clarify|let|feel|rephrase|check)\b",
        guards=(
            "please",
            "kindly",
            "let me know",
            "feel free",
            "happy",
            "glad",
            "hope",
            "thank",
            "rephras",
            "could you",
            "can you",
            "would you",
            "if you",
        ),
        declines=("Please provide more details about the contract.",),
        answers=(
            "Thank you for the passages. The capital of Peru is Lima.",
            "Please note: the museum is closed on Mondays. It opens at nine on other days.",
        ),
    ),
    Rule(
        "apology",
        RuleKind.PREAMBLE,
        r"^(?:i'm sorry|i am sorry|i apologi[sz]e|sorry|apologies|my apologies)\b|"
        # a preamble that says nothing yet: "Sure!", "Thank you for providing the passages."
        r"^(?:sure|of course|great question|good question|thank you|thanks)\b[^.!?]{0,60}[.!?]*$|^(?:i'd|i would|i'll|i will) (?:be (?:happy|glad) "
        r"to|gladly|try to) (?:help|assist|answer)\b[^.!?]{0,60}[.!?]*$",
        guards=(
            "sorry",
            "apologi",
            "sure",
            "of course",
            "question",
            "thank",
            "help",
            "assist",
            "answer",
        ),
        openings=(
            "i'm sorry",
            "i am sorry",
            "i apologize",
            "i apologise",
            "sorry",
            "i'm afraid",
            "i am afraid",
        ),
        declines=("I'm sorry. The passages do not mention the date.",),
        answers=("Sure! The capital of Peru is Lima.",),
    ),
    Rule(
        "pointer",
        RuleKind.POINTER,
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
        r"experts?|professionals?|records?)\b",
        guards=(
            "consult",
            "refer",
            "check",
            "look",
            "search",
            "seek",
            "find",
            "contact",
            "visit",
            "review",
            "read",
            "obtain",
            "access",
            "explor",
            "reach out",
            "see ",
        ),
        openings=(
            "you may need",
            "you might need",
            "you may want",
            "you might want",
            "you will need",
            "you would need",
            "you'll need",
            "you would have to",
        ),
        declines=("The report does not give the salary. You may need to consult other filings.",),
        answers=("To prepare, you should consult your doctor and stop eating six hours before.",),
    ),
    Rule(
        "covers-instead",
        RuleKind.DESCRIBES,
        rf"^(?:(?:the |these |this |those )?(?:\w+ ){{0,2}}?{HEAD}{POST}|it|they|instead|rather)"
        r"(?: (?:only|mainly|mostly|primarily|chiefly|largely|generally|instead|rather|however|do|"
        r"does|seems? to|appears? to|also|just|merely|solely|simply))*"
        r" (?:focus(?:es|ed)?|discuss(?:es|ed)?|covers?|covered|deals? with|dealt with|talks? about|"
        r"centers? (?:on|around)|centres? (?:on|around)|revolves? around|is about|are about|was about|"
        r"be about|"
        r"were about|provides? (?:\w+ ){0,2}?(?:details|information|an overview|a summary|context)|"
        r"describes?|described|mentions? (?:other|only|the general|general)|highlights?|outlines?|"
        r"explores?|concerns?|is concerned with|are concerned with|pertains? to|relates? to|"
        r"(?:is|are|was|were|seems? to be|appears? to be) (?:an?|the) (?:\w+ ){0,3}?(?:excerpt|"
        r"summary|overview|description|discussion|report|statement|collection|list|story|"
        r"account|narrative|chapter|article|essay|transcript|biography|history|novel|passage)|"
        r"ends?|contains? (?:\w+ ){0,2}?(?:information|details|data) (?:about|on|regarding)|"
        r"includes? (?:\w+ ){0,2}?(?:information|details|data) (?:about|on|regarding)|"
        r"presents?|introduces?|summari[sz]es?|review(?:s|ed)?|examines?|analy[sz]es?|"
        r"refers? to (?:other|general)|(?:do|does|did) (?:\w+ )?" + ANY_VERB + r")\b|"
        r"^(?:perhaps|maybe|possibly|if you)\b",
        guards=(),
        declines=(
            "The report covers the company's finances. It does not give the CEO's salary.",
            "There is no mention of the captain in the text. The text appears to be a story about "
            "a family who emigrates to Canada in the 1850s.",
        ),
        answers=("The report covers the company's finances. Revenue rose 4% to $3 billion.",),
    ),
    Rule(
        "restatement",
        RuleKind.DESCRIBES,
        r"^(?:final |short |my )?(?:answer|response|reply|summary|result|conclusion|analysis|"
        r"explanation|output)[:.!]?$|^\d{1,2}[.)]?$|"
        r"^(?:you (?:asked|are asking|'re asking|want to know|wanted to know|inquired)|you've asked|"
        r"you're (?:asking|wondering|looking for)|you are wondering|"
        r"(?:the|your|this) (?:user'?s? )?question (?:asks|is asking|is about|concerns|was|wants)|"
        r"the user (?:asks|is asking|wants to know|asked))\b[^.!?]{0,100}[.!?]*$|^[^.!?]{3,80}\?$|"
        r"^to (?:answer|determine|find out|find|calculate|figure out|know|work out|say|tell)\b"
        r"[^.!?]{0,100}\b(?:i|we|you|one) (?:would |will |first )?(?:need|needs|require|must|have to)\b"
        r"[^.!?]{0,100}[.!?]*$",
        guards=(),
        declines=("You asked about the CEO's salary. The passages do not mention it.",),
        answers=("You asked about the CEO's salary. It was $2 million in 2023.",),
    ),
    Rule(
        "hedge",
        RuleKind.HEDGE,
        r"^(?:however|but|although|though|still|that said|nonetheless|nevertheless|based on|"
        r"according to|judging by|from the context)\b|^(?:it|they|the (?:\w+ ){0,2}?\w+) "
        r"(?:only |simply |just |does |merely )?(?:says|said|states|mentions|notes|suggests|implies|"
        r"indicates|refers|reads|shows)\b|\b(?:it seems|it appears|seems to|appears to|"
        r"can be inferred|can infer|is suggested|is implied|best (?:inference|guess)|most likely|"
        r"likely|probably|in summary|in short)\b|^to answer\b",
        guards=(),
        declines=(
            "The text does not say where he lives. However, it does not give his address either.",
        ),
        answers=(
            "The text does not say directly. However, it seems he is a writer who lives in Rome.",
        ),
    ),
    Rule(
        "described-as",
        RuleKind.DESCRIBES_INSTEAD,
        r"^(?:(?:however|but|though|although|yet|instead),? )?(?:it|he|she|they|this|the "
        r"(?:[\w'-]+ ){0,2}?[\w'-]+) (?:is|are|was|were) (?:only |just |merely |simply |vaguely |"
        r"briefly |generally |broadly )?(?:described|characteri[sz]ed|portrayed|depicted|"
        r"referred to|presented|alluded to|hinted at)(?: as| in| only)?\b",
        guards=(
            "described",
            "characteri",
            "portrayed",
            "depicted",
            "referred",
            "presented",
            "alluded",
            "hinted",
        ),
        declines=(
            "The text does not name his illness, but it is described as a long and wasting "
            "malady that kept him in bed for most of the winter.",
            "The document does not state the cause of the fire. It is only described as "
            "sudden and fierce, and the novel moves on to the trial, the verdict and the "
            "family's move to the coast.",
        ),
        answers=(
            "The text does not name his illness directly, but it seems he had tuberculosis.",
            "His illness is described as a long and wasting malady: tuberculosis, which kills "
            "him in the final chapter.",
        ),
    ),
    Rule(
        "only-mentions",
        RuleKind.DESCRIBES_INSTEAD,
        rf"^{LINK}(?:it|they|(?:the|this|these|that) (?:[\w'-]+ ){{0,2}}?{REPORTING_HEAD}|we|the "
        rf"reader|readers)(?: (?:does|do|did|however|also))?,? (?:only|merely|just|simply)"
        rf"(?: briefly| vaguely| fleetingly| in passing)? (?:{REPORT_VERB}|know|learn|are told|"
        r"hear|find out)\b",
        guards=("only", "merely", "just", "simply"),
        declines=(
            "The article does not give the number of annotators. It only mentions that the data "
            "was labelled by native speakers and that agreement was measured with Cohen's kappa.",
            "The novel never says what was in the parcel, but we only learn that it was heavy and "
            "that Eleanor kept it locked in her wardrobe until she left for London.",
        ),
        answers=(
            "The text does not say outright what was in the parcel. It only mentions that it was "
            "heavy and rattled, which suggests it held the missing silver spoons.",
            "It only takes ten minutes to walk from the station to the museum.",
        ),
        note='after a decline, what the source only mentions (also after "but" in the decline)',
    ),
    Rule(
        "reports-source",
        RuleKind.REPORTS,
        rf"^{LINK}(?:(?:it|they)(?:,? (?:{REPORT_ADVERB}))*,? {PRONOUN_REPORT_VERB}|(?:the|this|"
        rf"these|that|those|its) (?:[\w'-]+ ){{0,2}}?{REPORTING_HEAD}{POST}(?:,? "
        rf"(?:{REPORT_ADVERB}))*,? {REPORT_VERB})\b",
        guards=(),
        declines=(
            "The document does not specify the number of participants. However, it "
            "mentions that the data were collected from twelve hospitals across Europe, and the "
            "authors describe the annotation protocol in detail.",
            "The paper doesn't explicitly say which optimizer was used. The paper does provide "
            "the training details: 100 epochs with early stopping and dropout of 0.3.",
        ),
        answers=(
            "The text does not state her job outright. However, it mentions that she worked night "
            "shifts on the children's ward. This suggests that she was a nurse.",
            "The article does not explicitly mention the dataset used, but it mentions that the "
            "models are trained on the book corpus, PPDB and Twitter.",
            "The text does not say what the box is made of. However, it contains a ring and a "
            "letter from her mother, which she reads on the train.",
        ),
        note='"However, it mentions that ...", "The paper does provide ...": a source reporting',
    ),
    Rule(
        "according-to-source",
        RuleKind.REPORTS,
        rf"^{LINK}(?:according to|as (?:stated|mentioned|described|noted|reported|told) (?:in|by)"
        rf"|per) (?:the|this|that|its) (?:[\w'-]+ ){{0,2}}?{REPORTING_HEAD}\b",
        guards=("according", " in ", " by ", "per "),
        declines=(
            "The document does not state how much the company paid for the acquisition. "
            "According to the report, the deal closed in the third quarter and was financed with "
            "cash on hand and a new credit facility.",
        ),
        answers=(
            "The document does not give an exact figure. According to the report, the company "
            "paid roughly two billion dollars, so the price was about $2 billion.",
        ),
    ),
    Rule(
        "we-learn",
        RuleKind.REPORTS,
        rf"^{LINK}(?:we|the reader|readers)(?: (?:do|also|are|can|however|still))* (?:know|learn|"
        r"are told|find out|hear)\b",
        guards=("know", "learn", "told", "find out", "hear"),
        declines=(
            "The story never reveals the stranger's name. We learn that he arrived on a grey "
            "horse, wore a long black coat and spoke with a foreign accent.",
            "The text does not say why the brothers quarrelled. Based on the text, we know that "
            "they had not spoken for ten years and that their mother tried to reconcile them.",
        ),
        answers=(
            "The story never names the stranger outright. We learn that he signs the inn's book "
            "as J. Moreau, so he is most likely Jean Moreau, the missing heir.",
        ),
    ),
    Rule(
        "it-is-mentioned",
        RuleKind.REPORTS,
        rf"^{LINK}(?:it (?:is|was)|it's)(?: (?:only|also|briefly|however))* (?:mentioned|stated|"
        r"noted|said|reported|written) (?:that|in|how|where|when|only)\b|"
        rf"^{LINK}there (?:is|are|'s|was|were) (?:a |an |some |several |a few |one |two |many |"
        r"numerous |only )?(?:(?:brief|passing|indirect|general|vague|other|related|single) )*"
        r"(?:mentions?|references?|allusions?) (?:of|to)\b",
        guards=(
            "mention",
            "stated",
            "noted",
            "said",
            "reported",
            "written",
            "reference",
            "allusion",
        ),
        declines=(
            "The text does not explain why the captain changed course. It is mentioned that a "
            "storm damaged the mainmast on the third night and that the crew grew restless.",
            "The book does not name the lighthouse keeper. There is a brief mention of an old man "
            "who tended the lamp before the war, but nothing more.",
        ),
        answers=(
            "There is a mention of the lighthouse keeper in chapter two: Tom Hale, who tends the "
            "lamp until the storm.",
        ),
    ),
    Rule(
        "what-it-does-say",
        RuleKind.REPORTS,
        rf"\bwhat (?:the (?:[\w'-]+ ){{0,2}}?{REPORTING_HEAD}|it|they|we|you|i) (?:does|do|did|can|"
        r"could) (?:\w+ )?(?:say|mention|state|describe|tell|know|learn|find|cover|show|provide|"
        r"include|contain|discuss|gather|see)\b|^(?:here(?:'s| is| are)|below (?:is|are)|these "
        r"are) (?:what|some|a few|the|a summary of|an overview of) (?:\w+ ){0,3}?(?:details?|"
        r"information|points?|facts?|things|text|document|passage|book|story|paper|novel|"
        r"article|excerpt|we|it)\b",
        guards=("what", "here", "below", "these are"),
        declines=(
            "The document doesn't say what Arthur found in the cellar. What it does describe is "
            "the night he arrived: he was greeted by the housekeeper and warned not to go "
            "downstairs after dark.",
            "The novel doesn't state how old Hannah is when she leaves. Here's what we do know "
            "from the text:\n\n1. She finished school in the spring.\n2. She worked at her "
            "uncle's bakery over the summer.\n3. She left for Boston in late August.",
        ),
        answers=(
            "Here is what the text says about her age: she turns eighteen in the first chapter.",
        ),
    ),
    Rule(
        "related-details",
        RuleKind.REPORTS,
        rf"^{LINK}(?:there (?:are|is)|here are|i (?:can|could) (?:offer|share|provide|tell you)|"
        rf"(?:the (?:\w+ ){{0,2}}?{REPORTING_HEAD}|it) (?:does )?(?:provides?|gives?|offers?|"
        r"contains?|has|includes?)) (?:a few |some |several |two |three |a couple of |the "
        r"following |a little |limited |certain )?(?:(?:other|related|relevant|potentially|"
        r"contextual|possible|useful|tangential|background|general|indirect|surrounding) )+"
        r"(?:details?|information|points?|facts?|clues?|hints?|context|passages?|mentions?|"
        r"references?)\b|^the (?:closest|nearest) (?:\w+ ){0,3}?(?:is|comes|we get|it gets|"
        r"thing|mention|reference|information|details?|hint|clue)\b|^the only (?:\w+ )?"
        r"(?:mention|reference|information|details?|hint|clue|indication|related|relevant)\b|"
        rf"^all (?:that )?(?:we|the reader|it|the (?:\w+ ){{0,2}}?{REPORTING_HEAD}) (?:knows?|"
        r"learns?|is told|says?|mentions?|tells? us)\b",
        guards=(
            "related",
            "relevant",
            "context",
            "potentially",
            "possible",
            "useful",
            "tangential",
            "background",
            "general",
            "indirect",
            "surrounding",
            "closest",
            "nearest",
            "only",
            "all ",
        ),
        declines=(
            "The text does not mention what happened to the dog. However, there are a few "
            "related details: the family moved to the farm in early summer and the children "
            "spent their days by the river.",
            "The paper does not report the training time. The closest it comes is stating that "
            "all experiments ran on eight V100 GPUs.",
        ),
        answers=(
            "The text does not say when the dog died. The closest it comes is the line about the "
            "empty kennel in October, so the dog most likely died in early autumn.",
        ),
    ),
    Rule(
        "exact-only",
        RuleKind.EXACTNESS,
        r"\b(?:exact|exactly|precise|precisely)\b",
        guards=("exact", "precise"),
        declines=(
            "The text does not say what Maria's job was. However, it mentions that she lived above "
            "the bakery and walked to the station every morning.",
        ),
        answers=(
            "It is difficult to determine an exact figure for the rainfall. However, we know that "
            "the town gets about 12 inches of rain and 34 inches of snow a year.",
        ),
        note="a decline of exactness, then what the source does say: an approximate answer",
    ),
    Rule(
        "not-explicitly",
        RuleKind.IMPLICIT,
        r"\b(?:explicitly|directly|expressly|outright|in so many words|by name)\b",
        guards=("explicit", "direct", "express", "outright", "so many words", "by name"),
        declines=(
            "The passage does not explicitly state the title. It only says that she reads a large "
            "old Bible. It also mentions that she keeps it on the table by the window.",
        ),
        answers=(
            "The passage does not explicitly state the title. It only says that she reads a large "
            "old Bible.",
        ),
        note="one short report after a decline of explicitness: the answer, implicitly",
    ),
    Rule(
        "infers-answer",
        RuleKind.INFERS,
        r"^(?:this|that|these (?:\w+ )?(?:details?|facts|clues|hints|descriptions|points|"
        r"passages)|(?:all|taken together|together),? (?:of )?(?:this|these))(?: \w+)? (?:strongly "
        r"|clearly |also )?(?:suggests?|implies|indicates?|means|points? to|hints? (?:at|that))\b|"
        r", (?:which (?:strongly |clearly )?(?:suggests|implies|indicates|means)|meaning that|"
        r"hence|therefore|thus)\b|"
        r"^(?:therefore|so(?! far)|thus|hence|consequently|as a result|in conclusion|ultimately)\b|"
        r"^(?:based on|given|from|judging (?:by|from)|considering|putting together) (?:this|these|"
        r"that|all (?:of )?(?:this|these|the above)|the above|the (?:\w+ ){0,2}?(?:context|details|"
        r"information|clues|evidence|descriptions?|facts|hints))\b|"
        r"\b(?:it (?:seems|appears)|(?:seems|appears) to (?:be|have)|seemingly|apparently|can be "
        r"(?:reasonably )?(?:inferred|deduced|concluded|assumed|surmised)|(?:we|one|you|i) (?:can|"
        r"could) (?:reasonably )?(?:infer|deduce|conclude|assume|surmise)|(?:is|are|was|were) "
        r"(?:strongly |heavily |clearly |also )?(?:implied|suggested|inferred)|most likely|more "
        r"likely than not|(?:is|are|was|were) (?:very |quite |most )?likely|probably|presumably|"
        r"must have been|(?:best|reasonable) (?:inference|guess)|the (?:likely|probable) answer)\b",
        guards=(),
        declines=(
            "The text does not state her job. It mentions that she walked to the station every "
            "morning. It is possible that she worked in the city, but the text does not confirm "
            "this.",
            "Unfortunately I do not have enough context to definitively state where the Tristens "
            "live. Based on the snippets provided, it seems they may live in Russia, but more "
            "context would be needed to confirm that.",
        ),
        answers=(
            "The text does not state her job. However, it mentions that she worked night shifts "
            "on the children's ward, so she was most likely a nurse.",
            "The novel doesn't state Hannah's age. It mentions that she finished high school that "
            "spring. Therefore, she is probably eighteen when she leaves for college.",
        ),
        note="after a decline and a report of the source, the answer inferred from it",
    ),
    Rule(
        "gives-up",
        RuleKind.GIVES_UP,
        r"^(?:i am |i'm |we are )?(?:unable|not able) to answer\b|\b(?:cannot|can't|can not|"
        r"unable to|not able to|could not|couldn't) (?:\w+ ){0,2}?(?:answer|respond to) (?:the|this|"
        r"your|that) question\b|\b(?:so|therefore|thus|hence) (?:i|we) (?:cannot|can't|can not|am "
        r"unable to|are unable to|could not|couldn't) (?:\w+ )?answer (?=(?:how|what|which|who|"
        r"whom|when|where|whether|why)\b)|\b(?:the|this|your) question (?:cannot|can't|can not|could not) be "
        r"answered\b|" + GIVES_UP_QUESTION,
        guards=("answer", "respond", "address", "unable", "not able"),
        declines=(
            "He was born in Leeds and moved to London as a child. Unable to answer based on given passages.",
            (
                "The release gives 48,000 units sold worldwide. The UK is one of six markets. The"
                " release doesn't give it, so I can't answer how many were sold in the UK.",
                "How many kettles were sold in the UK?",
            ),
        ),
        answers=(
            "He was born in Leeds and moved to London. The question cannot be answered in more detail from the passages.",
        ),
    ),
    Rule(
        "gives-up-what-was-asked",
        RuleKind.GIVES_UP,
        NOT_WHAT_WAS_ASKED,
        guards=ASKED_GUARDS,
        declines=(
            "The only number she gave is the £1.2 billion for the programme. That tells you the"
            " funding, so I can't give you the figure you asked for.",
            "I can't find an MIC for MRSA in this paper. The authors report MICs against"
            " gram-negative bacteria (0.5 µg/ml against E. coli). So I can tell you the"
            " gram-negative values, but not the MRSA figure you're asking about.",
        ),
        answers=(
            "The report puts the share at roughly 40%. I can't give you the exact figure you"
            " asked for.",
            "That is not the only thing you asked about: the second part is answered below. The"
            " fee is $40.",
            "The fee is $40. You asked about refunds too: they take 5 days.",
        ),
        note="Closing an answer (or in place of an inference after a decline), what was asked"
        " named as not given: a give-up on the question itself",
    ),
)


def rules(kind: RuleKind) -> tuple[Rule, ...]:
    """The rows of ``kind``, in table order."""
    return tuple(r for r in RULES if r.kind is kind)


def rule(name: str) -> Rule:
    """The row called ``name``."""
    return _BY_NAME[name]


@functools.cache
def compiled(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled (once, when first needed)."""
    return re.compile(pattern)


_BY_NAME = {r.name: r for r in RULES}


def _trigger(words: set[str]) -> re.Pattern[str]:
    """One regex finding any of ``words`` (see :attr:`Rule.triggers`), grouped as a trie."""
    inside = sorted(w for w in words if "'" in w)
    star = sorted(w[:-1] for w in words if w.endswith("*"))
    plus = sorted(w[:-1] for w in words if w.endswith("+"))
    plain = sorted(w for w in words if "'" not in w and w[-1] not in "*+")
    bounded = [alt(plain)]
    if star:
        bounded.append(alt(star) + r"\w*")
    if plus:
        bounded.append(alt(plus) + r"\w+")
    return re.compile("|".join([*(re.escape(w) for w in inside), rf"\b(?:{'|'.join(bounded)})\b"]))


#: Every decline needs one of these words: a sentence without any is content, and the decline
#: patterns are not run on it (most sentences of most answers).
TRIGGER = _trigger({word for r in RULES for word in r.triggers})
#: Openings the streaming hold keeps back (the rows' openings, each once, in table order).
DECLINE_OPENINGS: tuple[str, ...] = tuple(dict.fromkeys(o for r in RULES for o in r.openings))
