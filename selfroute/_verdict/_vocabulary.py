"""The decline vocabulary: every word list the decline rules, the grammar and the streaming hold read.

Two families of lists live here, each named for what reads it:

- the **grammar** lists (:data:`SOURCE_HEADS`, :data:`INFO_VERBS`, :data:`ABSENCE_NOUNS`, ...) feed
  the shapes of :mod:`selfroute._verdict._rules` and the streaming hold's source-phrase automaton;
- the **phrase** lists (:data:`PHRASE_SOURCE_NOUNS`, :data:`PHRASE_INFO_VERBS`,
  :data:`PHRASE_PARTICIPLES`) feed the older phrase rules, which allow any two words between the
  source and the verb: they stay narrower on purpose (a wider list there reads more sentences as
  declines). Each phrase word is a grammar word (a test checks it), and the verb forms come from
  :data:`INFO_VERBS`, so the two families cannot drift apart.

The regular-expression fragments built from the lists (``HEAD``, ``BASE``, ``PHRASE_SUBJECT``,
...) are compiled into the rules' patterns; a list is written as a trie (:func:`alt`) so that a
hundred words cost the regex engine little more than one.
"""

from __future__ import annotations

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
#: Heads of a source named by its own kind of document ("the thesis", "the datasheet", "the
#: minutes"): documents that *describe* what they hold, so that any verb of information negated
#: after them ("the manual does not include a wiring diagram") says the document lacks it.
DOCUMENT_KINDS: tuple[str, ...] = (
    "thesis", "dissertation", "manual", "manuals", "handbook", "guidebook", "textbook", "notice",
    "script", "screenplay", "biography", "memoir", "autobiography", "datasheet", "whitepaper",
    "readme", "documentation", "brochure", "audit", "memorandum", "email", "e-mail", "emails",
    "interview", "interviews", "hearing", "testimony", "speech", "lecture", "presentation",
    "slides", "deck", "podcast", "episode", "notes", "opinion", "judgment", "judgement", "ruling",
    "decision", "complaint", "review", "newsletter", "announcement", "bulletin", "faq", "blog",
    "diary", "journal", "prospectus", "overview", "writeup", "write-up", "recording", "video",
    "guide", "guides", "booklet", "leaflet", "pamphlet", "catalogue", "catalog", "factsheet",
    "speeches", "lectures", "remarks", "deposition", "affidavit", "circular", "changelog",
    "sheet", "10-k", "10-q", "8-k", "file", "draft", "assessment", "sop", "sops", "eis", "eia",
    "anthology",
)  # fmt: skip
#: Heads of a person whose words are the source (a transcript's, a hearing's): "the interviewee
#: never says how much he was paid".
SPEAKER_HEADS: tuple[str, ...] = (
    "interviewee", "interviewer", "narrator", "witness", "presenter", "panelist", "panellist",
    "respondent", "commentator", "spokesperson", "spokesman", "spokeswoman",
)  # fmt: skip
SOURCE_HEADS = (*SOURCE_HEADS, *DOCUMENT_KINDS, *SPEAKER_HEADS)
#: Heads of a document that *prescribes* or *grants* (a contract, a policy, a standard): "the
#: policy does not cover flood damage" and "the lease does not include parking" state what it
#: grants, an answer, so only a verb of *speech* (:data:`SPEECH_VERBS`) negated after one of these
#: says the document is silent ("the lease does not say who pays for water").
INSTRUMENT_HEADS: tuple[str, ...] = (
    "agreement", "agreements", "contract", "contracts", "lease", "policy", "policies", "terms",
    "clause", "clauses", "bylaws", "by-laws", "charter", "deed", "ordinance", "regulation",
    "regulations", "statute", "act", "bill", "treaty", "licence", "license", "warranty",
    "constitution", "code", "covenant", "amendment", "addendum", "schedule", "rules", "plan",
    "guideline", "guidelines", "guidance", "protocol", "procedure", "procedures", "standard",
    "specification", "specifications", "spec", "specs", "rfc", "patent", "proposal", "release",
    "form", "application", "call", "order", "directive", "framework", "handover",
    "conditions", "tos", "eula", "sla", "nda", "rulebook",
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
POST = (
    r"(?: (?:\d+|[ivx]+|\[\d+\]|#\d+|[a-e])(?:(?:,| and|, and|,? or|,? &) \d+){0,5})?"
    r"(?: (?:provided|given|supplied|above|below|here|retrieved|shown|shared|quoted|listed|"
    r"in question|at hand|available|(?:that |which )?(?:you|i|we)(?:'ve| have| were| was)? "
    r"(?:provided|shared|given|supplied|read|reviewed|have)(?: me| us)?|"
    r"as (?:provided|given|shared|supplied|sent|written|published)|"
    r"(?:from|of|in) (?:the |this |these |your )?(?:\w+ ){0,2}?(?:text|paper|report|document|"
    r"article|book|filing|study|statement|passages?|context|chunks?)|"
    # a document named with its subject: "the code of conduct", "the terms of service"
    r"of (?:conduct|service|use|practice|business|procedure|ethics|reference|work|engagement|"
    r"sale|carriage|employment|association|incorporation|understanding|operation))"
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
    "commit to": ("commits to", "committed to", "committed to"),
    "settle on": ("settles on", "settled on", "settled on"),
    "break out": ("breaks out", "broke out", "broken out"),
    "put a figure on": ("puts a figure on", "put a figure on", "put a figure on"),
    "put a number on": ("puts a number on", "put a number on", "put a number on"),
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
#: Verbs of information by which a document *says* something, not grants it: the verbs
#: :data:`INSTRUMENT_HEADS` negate in a decline (a selection of :data:`INFO_VERBS` without
#: *provide*, *contain*, *include*, *give*, *offer*, *cover*, *hold*, *feature*, *deal with*,
#: *present*, *establish*, *answer*, *record*, *document*, *supply*, *list*, which state what an
#: instrument grants or holds).
SPEECH_VERBS: tuple[str, ...] = (
    "mention", "specify", "state", "say", "discuss", "detail", "describe", "address", "indicate",
    "reveal", "explain", "elaborate", "disclose", "tell", "name", "identify", "refer",
    "reference", "clarify", "define", "quantify", "spell out", "touch on", "talk about",
    "speak to", "go into", "comment on", "make clear", "make it clear", "itemize", "pinpoint",
    "break out", "put a figure on", "put a number on",
)  # fmt: skip
#: Nouns whose absence is a decline ("there is no *mention* of ...").
ABSENCE_NOUNS: tuple[str, ...] = (
    "mention", "mentions", "information", "info", "discussion", "discussions", "detail",
    "details", "specifics", "data", "reference", "references", "indication", "indications",
    "description", "explanation", "answer", "answers", "record", "records", "figure", "figures",
    "statement", "specification", "context", "clue", "clues", "hint", "note", "numbers",
    "breakdown", "elaboration", "clarification", "direct answer", "definitive answer",
    "documentation", "data points", "text", "passage", "evidence in the", "content",
    "count", "number", "date", "amount", "total", "estimate", "rate",
)  # fmt: skip
#: Verbs a speaker fails to do when declining ("I could not *find* ...").
SEEK = (
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


def alt(words: Iterable[object]) -> str:
    """A regex alternation of ``words`` (escaped, spaces literal), written as a trie.

    ``(?:mention(?:s|ed|)|...)`` matches what ``(?:mentioned|mentions|mention|...)`` matches, in
    the same order of preference (where several words fit at one place, one is a prefix of the
    other, and both forms try the longer first), but the regex engine tests each character once
    instead of once per word: a list of a hundred words costs little more than one word.
    """
    return "(?:" + "|".join(_branches(_trie({str(w) for w in words}))) + ")"


HEAD = alt(SOURCE_HEADS)
IHEAD = alt(INSTRUMENT_HEADS)
#: The verbs of :data:`SPEECH_VERBS`: base forms, and third person singular and past tense.
SPEECH = alt(SPEECH_VERBS)
SPEECH_FINITE = alt(form for base in SPEECH_VERBS for form in INFO_VERBS[base][:2])
RHEAD = alt(RETRIEVAL_HEADS)
ADV = alt(ADVERBS)
ADVS = rf"(?: {ADV}){{0,3}}"
BASE = alt(INFO_VERBS)
THIRD = alt(v[0] for v in INFO_VERBS.values())
PAST = alt(v[1] for v in INFO_VERBS.values())
PARTICIPLE_INFO = alt(v[2] for v in INFO_VERBS.values())
ANY_VERB = alt([*INFO_VERBS, *(f for v in INFO_VERBS.values() for f in v)])
ABSENT = alt(ABSENCE_NOUNS)
#: Nouns of the information a how-question asks for ("no specific *instructions* are given").
INFO_NOUN = alt(
    ["instructions", "guidance", "guidelines", "recommendations", "directions", "steps", "tips",
     "advice", "examples", "specific instructions", "suggestions", "explanations", "descriptions"]
)  # fmt: skip
#: Modifiers and post-modifiers that make a source one handed to the model ("the provided data").
HANDED = ("provided", "given", "supplied", "retrieved", "above", "attached", "shared", "following")
#: Verbs that state content, but a decline only of a source handed to the model.
WEAK_VERB = alt(["show", "display", "depict", "illustrate", "capture", "feature"])
#: Participles that state absence in a passive ("X is not *mentioned*", "no date is *given*").
SHAPE_PARTICIPLE = (
    r"(?:" + PARTICIPLE_INFO[3:-1] + r"|found|known|available|present|contained|covered|"
    r"visible|evident|apparent|clear|determinable|answerable|touched upon|included|explored|"
    r"examined|investigated|evaluated|measured|tested|studied|analy[sz]ed|considered|"
    r"quantified|itemi[sz]ed|broken down|spelled out|spelt out)"
)
#: A subject that can stand for the source in a decline.
#: ("The passages provided *all* fail to mention ...": a floating quantifier after it.)
SHAPE_SUBJECT = rf"(?:\b{HEAD}{POST}(?: all| both| each)?|\b(?:it|they))"
NEGATION = (
    r"(?:does not|doesn't|does n't|do not|don't|do n't|did not|didn't|cannot|can't|can not|"
    r"could not|couldn't|will not|won't|would not|wouldn't|may not|might not|fails? to|"
    r"failed to|seems? not to|appears? not to|never)"
)

#: Heads of a source that can *report* what it says ("the paper mentions that ..."): a selection
#: of :data:`SOURCE_HEADS` without the things a story holds (a letter, a meeting, a record), whose
#: report is the story's content, not the source's.
REPORTING_HEADS: tuple[str, ...] = (
    "text", "texts", "passage", "passages", "context", "document", "documents", "article",
    "excerpt", "excerpts", "extract", "chunk", "chunks", "snippet", "snippets", "section",
    "sections", "paragraph", "paragraphs", "source", "sources", "material", "paper", "study",
    "report", "filing", "book", "novel", "story", "narrative", "transcript", "content",
    "information", "summary", "chapter", "chapters", "abstract", "author", "authors", "writer",
)  # fmt: skip
#: Verbs of information by which a source reports what it holds without disclosing an answer
#: ("it mentions that ...", "the paper describes ..."): a selection of :data:`INFO_VERBS` (not
#: *reveal*, *confirm*, *identify*, *name*, *specify*, *indicate*, *explain*, *make clear*, which
#: state the answer itself), and :data:`NARRATION_VERBS`.
REPORT_VERBS: tuple[str, ...] = (
    "mention", "discuss", "state", "say", "detail", "describe", "list", "report", "note", "cite",
    "outline", "touch on", "talk about", "go into", "delve into", "comment on", "refer",
    "reference",
)  # fmt: skip
#: Verbs of information that report only with a noun subject: with "it" they are as often said
#: of the thing asked about ("It contains a ring and a letter").
NOUN_REPORT_VERBS: tuple[str, ...] = (
    "provide", "contain", "include", "give", "offer", "cover", "present", "tell", "deal with",
)  # fmt: skip
#: Verbs by which a source narrates or dwells on something (not verbs of information).
NARRATION_VERBS: tuple[str, ...] = (
    "focuses on", "focused on", "focus on", "highlights", "highlighted", "recounts", "recounted",
    "narrates", "depicts", "portrays", "emphasizes", "emphasises", "centers on", "centres on",
    "revolves around", "concentrates on",
)  # fmt: skip


#: Source nouns the phrase rules accept after their determiners ("the provided *text* does not
#: mention"): a selection of :data:`SOURCE_HEADS`, in the order the patterns try them.
PHRASE_SOURCE_NOUNS: tuple[str, ...] = (
    "text", "texts", "passage", "passages", "context", "contexts", "document", "documents",
    "article", "articles", "excerpt", "excerpts", "chunk", "chunks", "information", "source",
    "sources", "material", "paper", "story", "stories", "book", "novel", "narrative",
    "transcript", "content", "snippet", "snippets", "section", "sections", "summary", "chapter",
    "data", "details",
)  # fmt: skip
#: Verbs of information the phrase rules negate ("does not *mention*"): base form -> whether its
#: third person (from :data:`INFO_VERBS`) is accepted too.
PHRASE_INFO_VERBS: dict[str, bool] = {
    "mention": True, "contain": True, "provide": True, "include": True, "say": True,
    "specify": True, "state": True, "discuss": True, "give": True, "offer": True,
    "address": True, "indicate": True, "describe": True, "reveal": True, "explain": True,
    "refer": False, "reference": False, "identify": False, "tell": False, "answer": False,
    "clarify": False, "list": False, "name": False, "report": False, "detail": False,
    "cover": False, "disclose": False, "establish": False, "make clear": False,
    "make it clear": False,
}  # fmt: skip
#: Participles the phrase rules read as absence ("X is not *mentioned*"): participles of
#: :data:`INFO_VERBS` and a few words of :data:`SHAPE_PARTICIPLE` (*found*, *known*, *available*).
PHRASE_PARTICIPLES: tuple[str, ...] = (
    "mentioned", "stated", "specified", "provided", "given", "named", "revealed", "described",
    "discussed", "indicated", "identified", "explained", "reported", "listed", "addressed",
    "included", "detailed", "established", "disclosed", "clarified", "found", "known",
    "available", "present", "contained", "said", "covered", "shown", "recorded",
)  # fmt: skip
#: Adverbs the phrase rules allow before a verb or participle ("not *explicitly* mentioned").
PHRASE_ADVERBS: tuple[str, ...] = (
    "explicitly", "directly", "clearly", "specifically", "definitively", "actually", "really",
    "exactly", "precisely",
)  # fmt: skip


def _plain(words: Iterable[str]) -> str:
    """An alternation of ``words`` in their order (the phrase rules' fragments)."""
    return "(?:" + "|".join(words) + ")"


PHRASE_SOURCE_NOUN = _plain(PHRASE_SOURCE_NOUNS)
#: Up to six determiners and modifiers before the noun: a bounded repetition, so that a search
#: stays linear on "the the the ..." (an unbounded one fails after every start: quadratic).
PHRASE_SOURCE = (
    r"(?:provided |given |above |supplied |retrieved |available |following |these |this |the |"
    r"that |those |its |any ){0,6}" + PHRASE_SOURCE_NOUN
)
PHRASE_SUBJECT = (
    rf"(?:{PHRASE_SOURCE}|it|they|the author|the authors|the writer|the paper's authors)"
)
PHRASE_NEGATION = (
    r"(?:does not|doesn't|do not|don't|did not|didn't|does n't|is not|isn't|are not|aren't|"
    r"fails? to|never|cannot|can't)"
)
PHRASE_INFO_VERB = _plain(
    form
    for base, third in PHRASE_INFO_VERBS.items()
    for form in ((base, INFO_VERBS[base][0]) if third else (base,))
)
PHRASE_ADVERB = _plain(PHRASE_ADVERBS)
PHRASE_PARTICIPLE = _plain(PHRASE_PARTICIPLES)
#: The speaker's inability ("I *could not* ...", "we *are unable to* ...").
INABILITY = (
    r"(?:cannot|can't|can not|could not|couldn't|am unable to|'m unable to|am not able to|"
    r"'m not able to|was unable to|were unable to|are unable to|do not|don't|did not|didn't|"
    r"will not be able to|won't be able to|unable to)"
)

#: A head that reports (:data:`REPORTING_HEADS`) and its verbs in any form
#: (:data:`REPORT_VERBS`, :data:`NARRATION_VERBS`).
REPORTING_HEAD = alt(REPORTING_HEADS)
#: What "it" or "they" can report by (:data:`REPORT_VERBS`, :data:`NARRATION_VERBS`, any form).
PRONOUN_REPORT_VERB = alt(
    [*(form for base in REPORT_VERBS for form in (base, *INFO_VERBS[base])), *NARRATION_VERBS]
)
#: What a source noun can report by: those and :data:`NOUN_REPORT_VERBS`.
REPORT_VERB = alt(
    [
        *(
            form
            for base in (*REPORT_VERBS, *NOUN_REPORT_VERBS)
            for form in (base, *INFO_VERBS[base])
        ),
        *NARRATION_VERBS,
    ]
)
