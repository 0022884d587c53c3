"""Property tests of the decline grammar (issue #15).

Sentences are built from the grammar of a decline -- a source noun phrase (any determiner,
modifiers, a head noun, a post-modifier) x a negated verb of information (any adverbs) x an object
-- and from absence constructions, apologies and pointers elsewhere. The vocabulary here is written
from the issue's description of how models decline, not imported from the detector, and includes
modifiers and objects the detector has never seen (random words).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import selfroute as sr

SCALE = int(os.environ.get("SELFROUTE_HYPOTHESIS_SCALE", "1"))
GRAMMAR = settings(
    max_examples=200 * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

HEADS = [
    "text", "passage", "passages", "context", "document", "documents", "article", "paper",
    "report", "filing", "statement", "statements", "excerpt", "excerpts", "book", "transcript",
    "chunks", "text chunks", "snippets", "sources", "material", "study", "section", "chapter",
]  # fmt: skip
DETERMINERS = ["The", "These", "This", "The provided", "The given", "The retrieved", "Your"]
POST = [
    "", " provided", " given", " above", " you shared", " from the paper", " in question",
    " you've given me", " given above",
]  # fmt: skip
NUMBERED = [
    "Paper 2", "Passage 3", "Document 1", "Chunk 4", "Section 5", "Passages 1 and 3",
    "Passages 1, 2 and 3", "Documents 2, 4, and 5",
]  # fmt: skip
NEGATIONS = ["does not", "doesn't", "did not", "didn't", "do not", "don't", "fails to", "cannot"]
ADVERBS = ["", " explicitly", " directly", " specifically", " clearly", " actually", " really"]
VERBS = [
    "mention", "discuss", "provide", "specify", "state", "say", "contain", "include", "detail",
    "describe", "address", "cover", "indicate", "reveal", "give", "explain", "list", "elaborate on",
    "report", "disclose", "identify", "clarify", "outline", "talk about", "touch on",
]  # fmt: skip
THIRD_PERSON = [
    "mentions", "discusses", "provides", "specifies", "states", "says", "contains", "includes",
    "details", "describes", "addresses", "covers", "indicates", "reveals", "gives", "explains",
    "lists", "reports", "discloses",
]  # fmt: skip
LEADS = [
    "", "Unfortunately, ", "Based on the passages, ", "I apologize, but ", "I'm sorry, but ",
    "After reviewing the passages, ", "According to the context, ", "However, ",
]  # fmt: skip
AFTER = [
    "",
    " It focuses on the history of the company.",
    " The report primarily discusses other matters.",
    " You may need to consult other sources.",
    " Please provide more context.",
    " I recommend checking the official website.",
]
ABSENCE_NOUNS = [
    "mention", "information", "discussion", "details", "data", "reference", "indication",
    "description", "explanation", "specific figures",
]  # fmt: skip
PARTICIPLES = ["mentioned", "specified", "provided", "stated", "given", "described", "reported"]

word = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=3, max_size=8)
modifiers = st.lists(word, max_size=2).map(lambda ws: "".join(f" {w}" for w in ws))
objects = st.one_of(
    st.builds(lambda w: f"the name of the {w}", word),
    st.builds(lambda w, v: f"{w} {v}", word, word),
    st.sampled_from(["his age", "the cost", "when the company was founded", "who won the award"]),
)


def _source(det: str, mods: str, head: str, post: str) -> str:
    return f"{det}{mods} {head}{post}"


sources = st.one_of(
    st.builds(
        _source,
        st.sampled_from(DETERMINERS),
        modifiers,
        st.sampled_from(HEADS),
        st.sampled_from(POST),
    ),
    st.sampled_from(NUMBERED),
)


def _lower_first(text: str) -> str:
    return text[0].lower() + text[1:] if text else text


@st.composite
def source_declines(draw: st.DrawFn) -> str:
    """Source phrase x negated verb of information x object, with a lead and a follow-up."""
    lead = draw(st.sampled_from(LEADS))
    source = draw(sources)
    source = _lower_first(source) if lead else source
    if draw(st.booleans()):
        verb = f"{draw(st.sampled_from(NEGATIONS))}{draw(st.sampled_from(ADVERBS))} "
        verb += draw(st.sampled_from(VERBS))
    else:
        verb = f"never {draw(st.sampled_from(THIRD_PERSON))}"
    return f"{lead}{source} {verb} {draw(objects)}.{draw(st.sampled_from(AFTER))}"


@st.composite
def absence_declines(draw: st.DrawFn) -> str:
    """Negative existentials, bare absences, inability and apology + absence."""
    noun = draw(st.sampled_from(ABSENCE_NOUNS))
    part = draw(st.sampled_from(PARTICIPLES))
    src = _lower_first(draw(sources))
    obj = draw(objects)
    shapes = [
        f"There is no {noun} of {obj} in {src}.",
        f"There is no specific {noun} about {obj}.",
        f"No {noun} about {obj} is {part} in {src}.",
        f"No specific figures were {part} in {src} to answer this.",
        f"None {part}.",
        f"Not {part} in {src}.",
        f"I could not find any {noun} about {obj} in {src}.",
        f"I do not see any {noun} of {obj} in {src}.",
        f"I apologize, but there is no {noun} in {src} about {obj}.",
        f"None of the passages {draw(st.sampled_from(VERBS))} {obj}.",
        f"Nothing in {src} {draw(st.sampled_from(THIRD_PERSON))} {obj}.",
        f"{draw(sources)} makes no mention of {obj}.",
        f"Unable to answer based on given passages.",  # noqa: F541 - the RAGTruth sentinel
        f"The answer to this question is not {part} in {src}.",
    ]
    return draw(st.sampled_from(shapes)) + draw(st.sampled_from(AFTER))


WH_QUESTIONS = ["What is {x}?", "Who is {x}?", "When was {x} founded?", "How much is {x}?"]


@GRAMMAR
@given(text=source_declines())
def test_every_source_phrase_negated_verb_object_declines(text: str) -> None:
    assert sr.parse_verdict(text).declined, text


@GRAMMAR
@given(text=absence_declines())
def test_every_absence_construction_declines(text: str) -> None:
    assert sr.parse_verdict(text).declined, text


@GRAMMAR
@given(text=st.one_of(source_declines(), absence_declines()), q=st.sampled_from(WH_QUESTIONS))
def test_declines_still_decline_a_wh_question(text: str, q: str) -> None:
    assert sr.parse_verdict(text, question=q.format(x="the director")).declined, text


@GRAMMAR
@given(
    source=sources,
    neg=st.sampled_from(NEGATIONS[:6]),
    adverb=st.sampled_from(ADVERBS),
    verb=st.sampled_from([*VERBS, "use", "evaluate", "train", "compare"]),
    obj=objects,
    aux=st.sampled_from(["Does", "Did", "Do"]),
)
def test_no_source_does_not_verb_x_answers_a_yes_no_question_about_x(
    source: str, neg: str, adverb: str, verb: str, obj: str, aux: str
) -> None:
    src = _lower_first(source)
    text = f"No, {src} {neg}{adverb} {verb} {obj}."
    question = f"{aux} {src} {verb} {obj}?"
    assert sr.parse_verdict(text, question=question).answered, (text, question)
    if verb in VERBS:  # the same words without the question escalate (the safe default)
        assert sr.parse_verdict(text).declined, text


@GRAMMAR
@given(text=source_declines(), cut=st.integers(1, 6))
def test_a_streamed_grammar_decline_is_never_shown(text: str, cut: int) -> None:
    """The sniffer holds every prefix of a grammar decline: nothing reaches the user."""
    sniffer = sr.flow.SentinelSniffer()
    pieces = [text[i : i + cut] for i in range(0, len(text), cut)]
    shown = "".join(sniffer.feed(p) for p in pieces)
    assert shown == "" and not sniffer.released, (text, shown)


@pytest.mark.parametrize(
    "text",
    [
        "The text chunks provided do not mention the director.",
        "The provided financial statement does not list the CEO's salary.",
        "Paper 2 does not discuss the baseline.",
        "Based on the provided chunks from the paper, there is no discussion of the dataset size.",
        "After reviewing the passages, I do not see any mention of his wife.",
        "The text provided does not mention his age.",
        "None mentioned.",
        "No specific figures were provided in the given chunks to determine the growth.",
        "The model has not been explicitly evaluated on French in the provided paper.",
        "I apologize, but there is no specific discussion in the provided text about the budget.",
        "The report does not specify the revenue. It focuses on the company's strategy.",
        "The filing does not give the figure; you may need to consult other reports.",
        "Sure! Here's the answer based on the given passages: the passages do not mention it.",
        "Passage 1 discusses yoga. Passage 2 describes breathing. Unable to answer based on given "
        "passages.",
        "The passages are not specific about the dosage.",
        "I looked through the passages but couldn't find the answer.",
    ],
)
def test_the_issue_families_decline(text: str) -> None:
    assert sr.parse_verdict(text).declined


@pytest.mark.parametrize(
    "text",
    [
        "The passages do not directly state the date. However, passage 2 says it was June 2010.",
        "The passage does not explicitly state the cost, but it suggests a price of about $50.",
        "Passage 1 states that a roof costs $5,000. Passage 3 does not mention the cost.",
        "There is no cure for the common cold, but symptoms can be managed with rest.",
        "He was not born in France; he was born in Belgium.",
        "Paper 2 reports an F1 of 0.8.",
        "Sure! Based on the passages provided, here's the answer: 12 minutes.",
    ],
)
def test_committed_answers_after_or_beside_a_decline_answer(text: str) -> None:
    assert sr.parse_verdict(text).answered


@pytest.mark.parametrize(
    ("text", "question", "declined"),
    [
        # The question's item declared absent after a partial answer: escalate.
        ("He died in 1972. The passages do not mention the cause.", "How did he die?", True),
        ("He died in 1972. The cause is not mentioned.", "When did he die?", False),
        ("They use SQuAD. The baselines are not specified.", "What baselines do they use?", True),
        ("They use SQuAD. The hardware is not specified.", "Which datasets do they use?", False),
        # Another passage answered: a per-passage decline is not the item declared absent.
        ("Passage 1 says $50. Passage 2 does not mention the price.", "What is the price?", False),
        # Yes/no questions: "No, ..." answers; "the paper does not mention X" answers "Does the
        # paper mention X?" but declines "Did they use X?".
        ("No, the paper does not mention BERT.", "Did they use BERT?", False),
        ("The paper does not mention BERT.", "Does the paper mention BERT?", False),
        ("The paper does not mention BERT.", "Did they use BERT?", True),
        ("No information is provided about BERT.", "Did they use BERT?", True),
    ],
)
def test_what_the_question_adds(text: str, question: str, declined: bool) -> None:
    assert sr.parse_verdict(text, question=question).declined is declined
    # Without the question the partial answers are answers and "No, ..." escalates.
    if text.startswith("No,"):
        assert sr.parse_verdict(text).declined


#: How current models decline in RAG answers, written from knowledge of their habits (Llama-2/3-chat,
#: Mistral, GPT-4o, Claude, Gemini, Qwen) before any held-out output was read.
RAG_DECLINES = [
    "Unable to answer based on given passages.",
    "Unable to answer based on given passages. The passages do not provide information on the cost of a new roof.",
    'Based on the given passages, I am unable to answer the question "how much does a roof cost" as there is no information provided about roofing costs.',
    "I apologize, but the passages provided do not contain information about the population of Denver. Therefore, I am unable to answer your question based on the given passages.",
    "I apologize, but I cannot provide an answer to your question as the passages provided do not mention the boiling point.",
    "Based on the passages provided, there is no direct answer to the question of how long to bake salmon.",
    "The passages do not provide a clear answer to the question of what causes hiccups.",
    "Sure, I'd be happy to help! Based on the passages provided, I must inform you that the passages do not provide information about the price of the ticket.",
    "Thank you for providing the passages. Unfortunately, the question cannot be answered based on the given passages as they do not discuss the topic.",
    "Passage 1 does not mention the salary. Passage 2 talks about the job description. Passage 3 is about benefits.",
    "The question cannot be answered based on the given passages as they do not provide the necessary information.",
    "Based on the given passages, it is not possible to determine the exact date of the event.",
    "None of the passages provide information on the side effects of the drug.",
    "Unfortunately, none of the passages provide a direct answer to the question.",
    "I'm sorry, but I couldn't find any information in the given passages that answers the question.",
    "The passages provided do not contain enough information to answer the question.",
    "I cannot answer this question based on the given passages as the information is not provided.",
    "The given passages do not directly address the question of whether cats can eat grapes.",
    "Sure! Here's the answer to your question based on the given passages: Unfortunately, the passages do not mention the capital.",
    "Based on the provided passages, there is no information about the author of the book.",
    "The passages do not provide enough information to determine the average salary.",
    "Unable to answer based on given passages. The passages discuss the history of the company but do not mention its founder.",
    "I'm unable to answer the question based on the given passages as they do not provide information about the topic.",
    "Passage 1 discusses the benefits of yoga. Passage 2 describes breathing techniques. Unable to answer based on given passages.",
    "The provided passages do not mention anything about the weather in Paris in May.",
    "After carefully reviewing the passages, I could not find any mention of the actor's age.",
    "The information you are looking for is not present in the given passages.",
    "Based on the passages, the specific cost is not mentioned.",
    "There is no mention of the cost in any of the passages.",
    "The passages only discuss the symptoms of the disease and do not mention its treatment.",
    "Hmm, the passages don't seem to say anything about that.",
    "I'm afraid the provided context doesn't include the answer to this question.",
    "The answer to this question is not contained in the provided passages.",
    "Nowhere in the passages is the founding year mentioned.",
    "The context you provided doesn't specify the version number.",
    "The text chunks do not give the exact figure; you may want to check the company's annual report.",
    "The 10-K filing excerpt provided does not break down revenue by region.",
    "Paper 2 does not report results on the test set.",
    "Based on the provided chunks from the paper, there is no discussion of hyperparameters.",
    "The transcript does not indicate who chaired the meeting.",
    "The provided financial statements do not include the CEO's compensation. They focus on the balance sheet and cash flows.",
    "The documents don't really go into the reasons for the merger.",
    "I looked through the passages but couldn't find the answer.",
    "The passages provided are about a different topic and do not answer the question.",
    "The retrieved excerpts make no reference to the treaty.",
    "The provided passages contain no information regarding the event.",
    "It is not clear from the passages who won the award.",
    "The passages are not specific about the dosage.",
    "I do not have enough information from the passages to answer this question.",
    "The passages do not have any information on the topic.",
    "No information is provided in the passages about the price.",
    "There is no information in the given passages about the topic.",
    "The given passages do not explicitly state the number of employees, but they do mention the company is large.",
    "The given passages do not provide information on how to reset the router. You may need to consult the manufacturer's manual.",
    "Not in the text.",
    "Not found in the context.",
    "There's nothing about the budget in the passages.",
    "The given context is insufficient to answer the question.",
    "The passages are unrelated to the question.",
    "The passages are not relevant to the query.",
    "Can't answer from the given passages.",
    "Answer not found in the passages.",
    "The question is asking for the population, but the passages only mention the area.",
    "Based on the given passages, there isn't any information regarding the price.",
    "The answer is not in the passages.",
    "The information you are looking for is not in the provided documents.",
    "The passages do not relate to the question.",
    "I don't have information about the price in the provided context.",
    "No relevant information found.",
    "Based on the passages provided, the answer to the question is: Unable to answer based on given passages.",
    "The answer is: Unable to answer based on given passages.",
    "Answer: Unable to answer based on given passages.",
    '"Unable to answer based on given passages."',
    "Passage 1 does not mention the cost. Passage 2 does not mention the cost either.",
    "Based on the information provided in the passages, the answer to the question is unable to be determined.",
    "The question cannot be answered based on the given passages. Passage 1 talks about X and passage 2 about Y.",
    "Based on the given passages, it appears that the passages do not provide information on the cost.",
    "To answer your question, the passages do not provide a direct answer.",
]
#: Answers that contain refusal words, a hedge, or a partial decline next to a committed answer.
RAG_ANSWERS = [
    'Based on the given passages, the answer to the question "how long to bake salmon" is 12 to 15 minutes at 400 degrees Fahrenheit.',
    "Sure! Based on the passages provided, here's the answer to your question: The population of Denver is about 715,000.",
    "According to passage 2, the boiling point of water is 100 degrees Celsius at sea level.",
    "Passage 1 states that the cost of a new roof ranges from $5,000 to $10,000. Passage 3 does not mention the cost.",
    "The cost of a roof is between $5,000 and $10,000. However, the passages do not mention the cost of labor.",
    "Hiccups are caused by involuntary contractions of the diaphragm.",
    "No, cats should not eat grapes because grapes can cause kidney failure.",
    "Yes, the passages mention that the treaty was signed in 1648.",
    "The passage does not explicitly state the cost, but it suggests a price of around $50.",
    "The passages do not directly state the date. However, passage 2 says the event took place in June 2010.",
    "There is no cure for the common cold, but symptoms can be managed with rest and fluids.",
    "The average salary is $55,000 per year, according to the passages.",
    "The drug does not cause drowsiness, according to passage 1.",
    "Based on the passages, the main side effects include nausea, headache and dizziness.",
    "The term refers to a type of tax that is not collected by the federal government.",
    "There are no fees for opening an account.",
    "The president does not have the power to dissolve parliament.",
    "He was not born in France; he was born in Belgium.",
    "The treatment was not approved by the FDA until 2005.",
    "The recipe does not include eggs, so it is suitable for vegans.",
    "Passage 3 discusses the symptoms of flu, which include fever, cough and fatigue.",
    "No, it is not safe to eat raw chicken.",
    "It is not recommended to take ibuprofen on an empty stomach.",
    "The recommended dose is not more than 4 grams per day.",
    "Based on the passages, a passport is not required for travel between the two countries.",
    "According to passage 1, the fee is not refundable.",
    "The cost is not specified, but it typically ranges from $100 to $200.",
    "The passages do not provide a specific number, but they suggest that the average is around 10.",
    "Sure! Based on the given passages, the answer to your question is: 15 minutes.",
    "Thank you for providing the passages! Based on passage 1, a tsunami is a series of waves.",
    'Based on the given passages, the answer to the question "what is a tsunami" is not explicitly stated. However, passage 2 mentions that a tsunami is a series of ocean waves.',
    'The term "escrow" is not defined in the passages, but it generally refers to a legal arrangement.',
    "The data does not show a significant difference between the groups.",
    "The study did not find any link between coffee and cancer.",
    "The report found no evidence of fraud.",
    "The book does not have a happy ending.",
    "The law does not apply to small businesses.",
    "Water does not contain calories.",
    "The passage explains that the drug does not cause drowsiness.",
    "The text states that he never mentioned his wife.",
    "The law does not specify a minimum age, so anyone can apply.",
    "Tax is not included in the price.",
    "The price does not include tax.",
    "Salmon is done when it flakes easily; the passages do not mention a thermometer.",
    'In the passages, the author does not use the word "love", which suggests detachment.',
    "No data was lost during the migration.",
    "No fee is charged for the first withdrawal.",
    "There are no side effects reported in the passages for this drug, making it safe.",
    "I'm just an AI, I don't have access to real-time information. However, based on the passages provided, the cost is $50.",
    "Unable to answer based on given passages. However, passage 2 mentions that the fee is $20.",
]


@pytest.mark.parametrize("text", RAG_DECLINES)
def test_rag_style_declines(text: str) -> None:
    assert sr.parse_verdict(text).declined


@pytest.mark.parametrize("text", RAG_ANSWERS)
def test_rag_style_answers(text: str) -> None:
    assert sr.parse_verdict(text).answered


# -- families added from held-out set 2's errors (promoted to tuning) and current models' habits --
#: Sentences that decide nothing: a restatement of the question, a heading, a description of
#: what the source covers. What follows them decides.
OPENERS = [
    "You asked about {x}.",
    "The question asks about {x}.",
    "The user wants to know {x}.",
    "{X}?",
    "To answer this, I would need to know {x}.",
    "## Answer\n\n",
    "**Response**\n",
    "The provided context appears to be about the company's history.",
    "The report provides an overview of the company's finances.",
    "The excerpts discuss the {w} programme.",
    "1.",
]
#: How current models (GPT-4o, Claude 3.5, Gemini 1.5, Llama 3.x, Qwen2.5, Mistral-NeMo) word a
#: decline in a RAG answer: written from their habits, each a family of the grammar.
CURRENT_DECLINES = [
    "The provided context does not contain information about {x}.",
    "Based on the given excerpts, it is not possible to determine {x}.",
    "The document doesn't specify {x}.",
    "I don't have enough information in the provided text to determine {x}.",
    "There's no mention of {x}.",
    "Unfortunately, the passages don't say anything about {x}.",
    "The excerpts focus on the {w} and do not address {x}.",
    "The passages focus on the {w} rather than {x}.",
    "The provided context primarily discusses the {w}, not {x}.",
    "The context talks about the {w} but says nothing about {x}.",
    "The context covers the {w} but doesn't break down {x}.",
    "The passages discuss the {w}, but none of them mention {x}.",
    "Not specified in the text.",
    "N/A",
    "There does not appear to be any information about {x} in the context.",
    "There doesn't seem to be any mention of {x} in the documents.",
    "The information requested is not in the provided context.",
    "The answer to your question isn't in the provided text.",
    "The excerpts do not allow me to determine {x}.",
    "Nowhere does the text mention {x}.",
    "That's not something the provided documents cover.",
    "The financial statement you shared doesn't show {x}.",
    "The report is unclear about {x}.",
    "The context is insufficient.",
    "I reviewed the documents carefully but found no mention of {x}.",
    "I wasn't able to find {x} in the provided context.",
    "The passages don't get into {x}.",
    "Unfortunately, the provided passages do not shed any light on {x}.",
    "Based on the provided passages, it is unable to answer the question of {x}.",
    "Nothing about {x}.",
    "{X} is unavailable in the provided documents.",
    "{X} is missing from the provided context.",
    "{X} remains unspecified.",
    "{X} goes unmentioned in the documents.",
    "{X} is absent from the provided text.",
    "This falls outside the provided context.",
    "Unclear from the context.",
    "I have no information about {x} in the provided context.",
    "I have no way of knowing {x} from these documents.",
    "{X} isn't something the context covers.",
]
#: Negative statements that answer (no question known): the negation is the content.
CURRENT_ANSWERS = [
    "The report states that revenue did not increase in {w}.",
    "The company did not disclose a loss in 2019; it reported a profit of $2 million.",
    "The treaty was not signed until 1648.",
    "The authors did not evaluate on French.",
    "According to the text, he never returned to {w}.",
    "There were no survivors.",
    "The study found no significant difference between the groups.",
    "None of the patients experienced side effects.",
    "Neither model outperformed the baseline.",
    "I found the answer in passage 2: the {w} costs $5.",
    "The data does not show a significant difference between the groups.",
    "The passages provide enough information to answer the question: the {w} costs $5.",
    "The {w} went missing in 1921, and the police searched the river.",
    "Her father's name is unknown to the other characters until the last chapter.",
]
WORDS = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=3, max_size=8)
ITEMS = st.one_of(
    st.builds(lambda w: f"the {w} budget", WORDS),
    st.builds(lambda w: f"the name of the {w}", WORDS),
    st.sampled_from(["the CEO's salary", "his age", "when the plant was built"]),
)


def _fill(template: str, item: str, word: str) -> str:
    return template.format(x=item, X=item[:1].upper() + item[1:], w=word)


@GRAMMAR
@given(template=st.sampled_from(CURRENT_DECLINES), item=ITEMS, word=WORDS)
def test_current_model_declines_decline(template: str, item: str, word: str) -> None:
    text = _fill(template, item, word)
    assert sr.parse_verdict(text).declined, text
    assert sr.parse_verdict(text, question=f"What is {item}?").declined, text


@GRAMMAR
@given(template=st.sampled_from(CURRENT_ANSWERS), word=WORDS)
def test_current_model_negative_answers_answer(template: str, word: str) -> None:
    text = _fill(template, "", word)
    assert sr.parse_verdict(text).answered, text


@GRAMMAR
@given(
    opener=st.sampled_from(OPENERS),
    decline=st.one_of(source_declines(), st.sampled_from(CURRENT_DECLINES[:12])),
    item=ITEMS,
    word=WORDS,
)
def test_a_decline_after_a_restatement_heading_or_description_declines(
    opener: str, decline: str, item: str, word: str
) -> None:
    # A description then a per-passage remark ("The excerpts discuss X. Paper 2 never mentions
    # Y.") is an answer by design: the description may itself be the answer.
    assume(opener not in OPENERS[7:10] or not any(n.lower() in decline.lower() for n in NUMBERED))
    first = _fill(opener, item, word)
    sep = "" if first.endswith("\n") else " "
    text = first + sep + _fill(decline, item, word)
    assert sr.parse_verdict(text).declined, text


@GRAMMAR
@given(opener=st.sampled_from(OPENERS[:4] + OPENERS[6:10]), item=ITEMS, word=WORDS)
def test_a_restatement_or_description_then_content_answers(
    opener: str, item: str, word: str
) -> None:
    text = f"{_fill(opener, item, word)} It was built in 1901 by the {word} company."
    assert sr.parse_verdict(text).answered, text


TERSE = ["Not specified.", "Not mentioned in the context.", "None given.", "N/A", "Not stated."]


@GRAMMAR
@given(
    labels=st.lists(WORDS, min_size=1, max_size=4),
    terse=st.lists(st.sampled_from(TERSE), min_size=4, max_size=4),
    marker=st.sampled_from(["- ", "* ", "1. ", ""]),
    bold=st.booleans(),
)
def test_a_list_of_labels_whose_values_decline_declines(
    labels: list[str], terse: list[str], marker: str, bold: bool
) -> None:
    b = "**" if bold else ""
    lines = [f"{marker}{b}{label.title()}:{b} {t}" for label, t in zip(labels, terse, strict=False)]
    assert sr.parse_verdict("\n".join(lines)).declined, lines
    answered = [f"{marker}{b}Total:{b} $5,000.", *lines]  # content first: an answer
    assert sr.parse_verdict("\n".join(answered)).answered, answered


@GRAMMAR
@given(
    item=ITEMS,
    lead=st.sampled_from(["No, ", "No. ", "No, based on the passages, "]),
    undecided=st.sampled_from(
        [
            "it is not clear whether {x} changed.",
            "the passages do not say whether {x} changed.",
            "I cannot determine if {x} changed.",
            "there is no information about {x}.",
        ]
    ),
)
def test_no_then_an_open_question_declines_a_yes_no_question(
    item: str, lead: str, undecided: str
) -> None:
    """ "No, it is not clear whether X" is no answer to "Did X change?" (unlike "No, X did not")."""
    text = lead + undecided.format(x=item)
    question = f"Did {item} change?"
    assert sr.parse_verdict(text, question=question).declined, text
    assert sr.parse_verdict(f"No, {item} did not change.", question=question).answered


ANSWER = "Here are the steps: 1. Mix the cement. 2. Pour it into the mould. 3. Let it set."
RAGTRUTH_SENTINEL = "Unable to answer based on given passages"


@GRAMMAR
@given(
    word=WORDS,
    scope=st.sampled_from(["whether {w} cement is stronger", "regarding the {w} variant"]),
    sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]),
)
def test_a_give_up_scoped_to_something_else_leaves_the_answer_standing(
    word: str, scope: str, sentinel: str | None
) -> None:
    """Content, then "Unable to answer ... whether X": X declined, not the question (unless X is
    what the question asks); bare, the give-up is the verdict; in a hypothetical, it is none."""
    kw = {"sentinel": sentinel} if sentinel else {}
    scoped = f"{ANSWER}\n\n{RAGTRUTH_SENTINEL} {scope.format(w=word)}."
    assert sr.parse_verdict(scoped, **kw).answered, scoped
    assert sr.parse_verdict(scoped, question="how to make concrete", **kw).answered, scoped
    asked = f"how to make {word} cement stronger" if "whether" in scope else f"{word} variant"
    assert sr.parse_verdict(scoped, question=asked, **kw).declined, (scoped, asked)
    bare = f"{ANSWER}\n\nNote: {RAGTRUTH_SENTINEL}."
    assert sr.parse_verdict(bare, **kw).declined, bare
    listed = f"{ANSWER}\n\n{RAGTRUTH_SENTINEL}:\n\n* whether {word} cement is stronger"
    assert sr.parse_verdict(listed, **kw).answered, listed
    hypothetical = (
        f"{ANSWER} If the passages did not contain the information needed to answer the "
        f'question, my response would be "{RAGTRUTH_SENTINEL}."'
    )
    assert sr.parse_verdict(hypothetical, **kw).answered, hypothetical
    partial = f"{ANSWER} However, I am unable to answer those parts of the question."
    assert sr.parse_verdict(partial, **kw).declined, partial
    degree = f"{ANSWER} The passages do not give enough detail to answer the question in detail."
    assert sr.parse_verdict(degree, **kw).answered, degree


@GRAMMAR
@given(opener=st.sampled_from(OPENERS[:5]), item=ITEMS, cut=st.integers(1, 6))
def test_with_a_hold_a_restatement_then_a_decline_is_never_shown(
    opener: str, item: str, cut: int
) -> None:
    """The hold waits past a sentence that decides nothing: the decline after it is not shown."""
    text = f"{_fill(opener, item, 'x')} The provided context does not mention {item}."
    sniffer = sr.flow.SentinelSniffer(hold_chars=80)
    shown = "".join(sniffer.feed(text[i : i + cut]) for i in range(0, len(text), cut))
    assert shown == "", (text, shown)


@GRAMMAR
@given(
    word=WORDS,
    other=WORDS,
    clause=st.sampled_from(
        [
            "{S}, but the passages do not mention the {o} budget.",
            "{S}, but it does not specify the {o} budget.",
            "{S}, but the {o} budget is not given.",
            "The report says {s}, but doesn't give the {o} budget.",
        ]
    ),
)
def test_an_answer_but_an_absence_declines_only_when_the_absence_is_asked(
    word: str, other: str, clause: str
) -> None:
    """ "X, but the passages do not mention Y": with the question known, an answer when Y was not
    asked, a (partial) decline when it was; without the question, the safe default escalates."""
    assume(word != other)
    s = f"the {word} plant was built in 1901"
    text = clause.format(S=s[0].upper() + s[1:], s=s, o=other)
    assert sr.parse_verdict(text, question=f"When was the {word} plant built?").answered, text
    assert sr.parse_verdict(text, question=f"What is the {other} budget?").declined, text
    assert sr.parse_verdict(text).declined, text


@GRAMMAR
@given(word=WORDS, lead=st.sampled_from(["", "Based on the passages, "]))
def test_no_evidence_that_x_answers_a_yes_no_question_about_x(word: str, lead: str) -> None:
    text = f"{lead}There is no evidence in the text that the {word} was present."
    assert sr.parse_verdict(text, question=f"Was the {word} present?").answered, text
    open_question = f"{lead}There is no indication in the text whether the {word} was present."
    assert sr.parse_verdict(open_question, question=f"Was the {word} present?").declined


@GRAMMAR
@given(
    word=WORDS,
    label=st.sampled_from(["Answer:", "**Answer:**", "Final answer:", "The answer is:"]),
    verdict=st.sampled_from([*TERSE, "The provided context does not specify the {w} budget."]),
)
def test_a_labelled_verdict_after_reasoning_decides(word: str, label: str, verdict: str) -> None:
    """Reasoning first, then "Final answer: <decline>": the labelled verdict is the answer's."""
    reasoning = f"The excerpts cover the {word} programme and its staff. They list three sites."
    text = f"{reasoning}\n\n{label} {verdict.format(w=word)}"
    assert sr.parse_verdict(text).declined, text
    assert sr.parse_verdict(f"{reasoning}\n\n{label} $5,000.").answered
    # an answer to a question the model invented after answering is not its verdict
    invented = (
        f"{reasoning}\n\nQuestion: What is the {word} budget?\n{label} {verdict.format(w=word)}"
    )
    assert sr.parse_verdict(invented).answered, invented


# -- the set-3 round: narrower readings (docs/verdict.md, "The set-3 round") --------------------
ONE_PASSAGE = st.sampled_from(["passage 2", "Passage 3", "passage II", "the second passage"])


@GRAMMAR
@given(word=WORDS, passage=ONE_PASSAGE, sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]))
def test_a_give_up_about_one_passage_leaves_the_answer_standing(
    word: str, passage: str, sentinel: str | None
) -> None:
    """After an answer, "<passage N> does not give enough to answer the question" or "I am unable
    to answer the question based on this passage alone" gives up on that passage, not on the
    question: another passage answered. Said of the passages, it is the verdict."""
    kw = {"sentinel": sentinel} if sentinel else {}
    question = "how to make concrete"
    for text in (
        f"{ANSWER}\n\nUnfortunately, {passage} does not provide enough information to answer "
        f"the question. It only describes the {word} kiln.",
        f"{ANSWER}\n\n{passage.capitalize()}: This passage describes the {word} kiln instead. "
        "Therefore, I am unable to answer the question based on this passage alone.",
    ):
        assert sr.parse_verdict(text, **kw).answered, text
        assert sr.parse_verdict(text, question=question, **kw).answered, text
    for text in (
        f"{ANSWER}\n\nUnfortunately, the passages do not provide enough information to answer "
        "the question.",
        f"{ANSWER}\n\nThe passages describe the {word} kiln instead. Therefore, I am unable to "
        "answer the question.",
    ):
        assert sr.parse_verdict(text, **kw).declined, text
        assert sr.parse_verdict(text, question=question, **kw).declined, text


@GRAMMAR
@given(
    word=WORDS,
    closing=st.sampled_from(
        [
            "Please note that I cannot provide medical advice.",
            "4. Unknown.",
            "Not specified.",
            "I cannot give professional advice.",
        ]
    ),
)
def test_with_the_question_a_later_decline_must_name_what_is_missing(
    word: str, closing: str
) -> None:
    """The question turns an answer into a partial decline only when a later sentence names the
    missing item and that item is what is asked: a closing disclaimer or a bare "Unknown." in a
    list names nothing, and leaves the answer as it is without the question (answered)."""
    question = f"how to make {word} concrete"
    text = f"{ANSWER}\n\n{closing}"
    assert sr.parse_verdict(text).answered, text
    assert sr.parse_verdict(text, question=question).answered, text
    named = f"{ANSWER}\n\nHowever, the passages do not explain how to make {word} concrete."
    assert sr.parse_verdict(named, question=question).declined, named


@GRAMMAR
@given(word=WORDS, passage=ONE_PASSAGE, pronoun=st.sampled_from(["it", "this", "they"]))
def test_a_pronoun_for_one_passage_is_that_passage(word: str, passage: str, pronoun: str) -> None:
    """ "Passage 2 gives an overview. However, it does not give the steps.": like "Passage 2 does
    not give the steps", another passage may have answered, so the question does not make it a
    decline; after a sentence about the passages, "it" or "they" is the passages ("this does
    not ..." is read as one source either way)."""
    question = f"how to make {word} concrete"
    verb = "do" if pronoun == "they" else "does"
    text = (
        f"Passage 1 gives the steps: mix the cement, pour it and let it set. "
        f"{passage.capitalize()} gives an overview of the {word} kiln. However, {pronoun} {verb} "
        f"not provide instructions for making {word} concrete. Based on these, mix and pour."
    )
    assert sr.parse_verdict(text, question=question).answered, text
    about_all = text.replace(f"{passage.capitalize()} gives", "The passages give")
    if pronoun != "this":
        assert sr.parse_verdict(about_all, question=question).declined, about_all


@GRAMMAR
@given(word=WORDS, quote=st.sampled_from(['"{}"', "“{}”"]))
def test_a_verdict_given_as_a_quoted_sentence_decides(word: str, quote: str) -> None:
    """ "Therefore, the answer to the question "...?" is: "Unable to answer based on given
    passages."" declines (the quoted sentence is the model's verdict); a quoted content sentence
    there answers."""
    reasoning = f"The passages cover the {word} programme. 1. It has three sites. 2. It is new."
    lead = f'Therefore, the answer to the question "What is the {word} budget?" is:\n\n'
    declined = reasoning + "\n\n" + lead + quote.format(f"{RAGTRUTH_SENTINEL}.")
    assert sr.parse_verdict(declined).declined, declined
    assert sr.parse_verdict(declined, question=f"What is the {word} budget?").declined, declined
    answered = reasoning + "\n\n" + lead + quote.format(f"The {word} budget is $5,000.")
    assert sr.parse_verdict(answered).answered, answered


# -- the set-4 round (docs/verdict.md, "The set-4 round") --------------------------------------
MORE_STEPS = (
    "For quick-set {w} concrete, add the accelerator to the water first. Stir the {w} "
    "mix for two minutes. Pour it within ten minutes. Smooth the top with a trowel. Keep it damp "
    "for a day."
)


@GRAMMAR
@given(word=WORDS, sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]))
def test_a_give_up_the_answer_goes_on_from_leaves_the_answer_standing(
    word: str, sentinel: str | None
) -> None:
    """Content, a give-up, then the answer goes on (five sentences of content, ending the
    output): the give-up was an aside. Fewer sentences after it, or a closing decline, do not."""
    kw = {"sentinel": sentinel} if sentinel else {}
    give_up = (
        f"{RAGTRUTH_SENTINEL}. The passages do not provide steps for quick-set {word} concrete."
    )
    resumed = f"{ANSWER}\n\n{give_up}\n\n{MORE_STEPS.format(w=word)}"
    for question in (None, "how to make concrete"):
        assert sr.parse_verdict(resumed, question=question, **kw).answered, resumed
    short = (
        f"{ANSWER}\n\n{give_up} Stir the {word} mix for two minutes. Pour it soon after. "
        "Smooth the top with a trowel. Keep it damp for a day."
    )
    assert sr.parse_verdict(short, **kw).declined, short
    closed = f"{resumed} Therefore, I am unable to answer the question."
    assert sr.parse_verdict(closed, **kw).declined, closed
    # with the question, a partial decline the answer goes on from is an aside too
    absent = f"{ANSWER}\n\nThe passages do not explain how to make {word} concrete. " + (
        MORE_STEPS.format(w=word)
    )
    assert sr.parse_verdict(absent, question=f"how to make {word} concrete").answered, absent
    ends = f"{ANSWER}\n\nThe passages do not explain how to make {word} concrete."
    assert sr.parse_verdict(ends, question=f"how to make {word} concrete").declined, ends


@GRAMMAR
@given(word=WORDS, gerund=st.sampled_from(["Providing", "Giving", "Listing", "Explaining"]))
def test_a_give_up_with_a_colon_then_what_it_could_not_do_is_scoped(word: str, gerund: str) -> None:
    """ "<answer> Unable to answer based on the given passages: Providing details on X, as ...":
    scoped to X like "... whether X" (asked-for X declines, with the question); a colon then a
    sentence ("...: I cannot provide X") is a reason, not a scope."""
    scoped = (
        f"{ANSWER}\n\nUnable to answer based on the given passages: {gerund} detailed information "
        f"on the {word} conditions it treats, as this is not stated in the passages."
    )
    assert sr.parse_verdict(scoped).answered, scoped
    assert sr.parse_verdict(scoped, question="how to make concrete").answered, scoped
    asked = f"what {word} conditions does it treat"
    assert sr.parse_verdict(scoped, question=asked).declined, (scoped, asked)
    reason = (
        f"{ANSWER}\n\nUnable to answer based on given passages: I cannot provide information on "
        f"the {word} conditions beyond what is covered in the passages."
    )
    assert sr.parse_verdict(reason).declined, reason


@GRAMMAR
@given(
    word=WORDS,
    case=st.sampled_from(
        [
            "a specific issue with the {w} valve, such as a leak",
            "individual types of {w} food",
            "the {w} plant during different seasons",
            "the {w} weather at different times of the year",
        ]
    ),
    sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]),
)
def test_a_bare_give_up_then_a_narrower_case_leaves_the_answer_standing(
    word: str, case: str, sentinel: str | None
) -> None:
    """ "<answer> Unable to answer ... The passages do not provide guidance on <a narrower case>":
    a situation, issue, season or time of what was answered is the give-up's scope. A category
    ("types of food", often the asked-for item), "other uses" or "nothing beyond these" is not, and
    the give-up stays the verdict."""
    kw = {"sentinel": sentinel} if sentinel else {}
    item = case.format(w=word)
    text = f"{ANSWER}\n\n{RAGTRUTH_SENTINEL}. The passages do not provide guidance on {item}."
    assert sr.parse_verdict(text, **kw).answered, text
    assert sr.parse_verdict(text, question="how to make concrete", **kw).answered, text
    for near in (
        f"types of {word} food",
        f"other uses of the {word} plant",
        f"the {word} plant beyond these basic steps",
        f"the specific {word} steps",
    ):
        miss = f"{ANSWER}\n\n{RAGTRUTH_SENTINEL}. The passages do not provide guidance on {near}."
        assert sr.parse_verdict(miss, **kw).declined, miss
    # a narrower case the question asks about is the question
    asked = f"how to care for the {word} plant during different seasons"
    seasons = (
        f"{ANSWER}\n\n{RAGTRUTH_SENTINEL}. The passages do not provide guidance on {asked[4:]}."
    )
    assert sr.parse_verdict(seasons, question=asked, **kw).declined, seasons


@GRAMMAR
@given(word=WORDS, punct=st.sampled_from(["", "?", "."]))
def test_an_output_that_only_echoes_the_question_declines_with_it(word: str, punct: str) -> None:
    """An output that is the question again, word for word, has no answer (with the question
    known); an answer that starts with the question's words, or a short answer, answers."""
    question = f"types of {word} food in france"
    echo = f"Types of {word} food in France{punct}"
    assert sr.parse_verdict(echo, question=question).declined, echo
    assert sr.parse_verdict(echo).answered, echo
    assert sr.parse_verdict(echo, question=question, strict=True).answered, echo
    longer = f"Types of {word} food in France: cheese, bread and wine."
    assert sr.parse_verdict(longer, question=question).answered, longer


@GRAMMAR
@given(word=WORDS, hedge=st.sampled_from(["potential", "possible"]))
def test_a_hedged_absence_of_the_asked_item_is_the_asked_item(word: str, hedge: str) -> None:
    """ "However, there is no mention of any potential side effects": with the question known,
    "potential" names nothing beyond "side effects"; a narrower item still answers."""
    question = f"benefits and side effects of {word} tea"
    answer = f"The benefits of {word} tea: it relieves stress and soothes pain."
    text = f"{answer} However, there is no mention of any {hedge} side effects in the passages."
    assert sr.parse_verdict(text, question=question).declined, text
    narrower = f"{answer} However, there is no mention of any {hedge} side effects in children."
    assert sr.parse_verdict(narrower, question=question).answered, narrower


@GRAMMAR
@given(
    word=WORDS,
    passage=st.sampled_from(["Passage 3", "Chunk 2", "Passage III", "**Passage 3**"]),
    sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]),
)
def test_a_give_up_that_opens_one_passage_section_is_about_that_passage(
    word: str, passage: str, sentinel: str | None
) -> None:
    """ "Passage 1: <steps> Passage 3: Unable to answer based on given passages.": the give-up is
    passage 3's section; passage 1 answered. After the sections, the give-up is the verdict."""
    kw = {"sentinel": sentinel} if sentinel else {}
    steps = f"Passage 1:\nMix the {word} cement. Pour it into the mould. Let it set.\n\n"
    give_up = f"{RAGTRUTH_SENTINEL}. The passages do not provide enough information to make it."
    text = f"{steps}{passage}:\n{give_up}"
    for question in (None, f"how to make {word} concrete"):
        assert sr.parse_verdict(text, question=question, **kw).answered, text
    after = f"{steps}Passage 2:\nIt sets in a day.\n\n{give_up}"
    assert sr.parse_verdict(after, **kw).declined, after
    titled = f"{steps}Cooking {word} cement:\n{give_up}"
    assert sr.parse_verdict(titled, **kw).declined, titled


@GRAMMAR
@given(
    word=WORDS,
    basis=st.sampled_from(
        ["based on this passage alone", "based on passage 2", "based on this passage"]
    ),
)
def test_a_closing_decline_based_on_one_passage_leaves_the_answer(word: str, basis: str) -> None:
    """A closing "Therefore, I cannot provide an answer based on this passage alone" after a
    committed answer and a remark on one passage concludes about that passage; based on the
    passages, it is the verdict."""
    answer = f"Passage 1 says the {word} plant was built in 1901. Passage 3 states it cost $5,000."
    remark = "As for Passage 2, it mentions a refund but gives no figure."
    text = f"{answer}\n\n{remark} Therefore, I cannot provide an answer {basis}."
    assert sr.parse_verdict(text).answered, text
    assert sr.parse_verdict(text, question=f"when was the {word} plant built").answered, text
    all_of = f"{answer}\n\n{remark} Therefore, I cannot provide an answer based on the passages."
    assert sr.parse_verdict(all_of).declined, all_of


@GRAMMAR
@given(word=WORDS, sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]))
def test_a_sentinel_in_parentheses_after_one_item_notes_that_item(
    word: str, sentinel: str | None
) -> None:
    """ "6. Avoid stress, as it can raise {word} levels (Unable to answer based on given
    passages).": a note on one item of the list, like "(Passage 3)"; on a line of its own, or
    closing the answer in its own sentence, the sentinel is the verdict."""
    kw = {"sentinel": sentinel} if sentinel else {}
    items = f"1. Drink water (Passage 1).\n2. Eat cherries (Passage 3).\n3. Avoid stress, as it can raise {word} levels"
    text = f"{items} ({RAGTRUTH_SENTINEL}).\n\nConsult a doctor before changing your diet."
    assert sr.parse_verdict(text, **kw).answered, text
    strict = sr.parse_verdict(text, sentinel=RAGTRUTH_SENTINEL, strict=True)
    assert strict.answered, text
    own_line = f"{items}.\n\n({RAGTRUTH_SENTINEL}.)"
    assert sr.parse_verdict(own_line, **kw).declined, own_line
    closing = f"{items}. {RAGTRUTH_SENTINEL}."
    assert sr.parse_verdict(closing, **kw).declined, closing


@GRAMMAR
@given(word=WORDS, noun=st.sampled_from(["types", "kinds", "aspects"]))
def test_other_types_of_the_item_is_a_narrower_case_other_items_are_not(
    word: str, noun: str
) -> None:
    """After a bare give-up, "The passages do not explain how to soften other types of sugar, such
    as {word} sugar" is scoped to the other types; "other uses of sugar" (nothing beyond what was
    said) is the question itself and keeps the give-up."""
    answer = "1. Put the brown sugar in a tin with bread. 2. Warm white sugar in the oven."
    lead = f"{answer}\n\n{RAGTRUTH_SENTINEL}. The passages do not provide information on"
    text = f"{lead} how to soften other {noun} of sugar, such as {word} sugar."
    assert sr.parse_verdict(text).answered, text
    assert sr.parse_verdict(text, question="how to soften sugar").answered, text
    more = f"{lead} other ways to soften sugar, such as {word} sugar."
    assert sr.parse_verdict(more).declined, more


@GRAMMAR
@given(
    word=WORDS,
    clause=st.sampled_from(
        [
            "when they are not caused by {w} running",
            "after it has reached the {w} temperature",
            "once they have frozen in {w} weather",
            "without using {w} software",
        ]
    ),
    sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]),
)
def test_with_the_question_a_give_up_scoped_to_an_unasked_circumstance_answers(
    word: str, clause: str, sentinel: str | None
) -> None:
    """ "<answer> Unable to answer ... The passages do not explain how to relieve tight calves when
    they are not caused by running.": with the question known, the asked thing in a circumstance
    none of whose words is the question's is a case it did not ask, so the answer stands. A circumstance the question
    names, a noun phrase ("after the initial cut"), or no question keeps the give-up."""
    kw = {"sentinel": sentinel} if sentinel else {}
    question = "how to relieve tight calves"
    steps = "Here is how to relieve them:\n\n1. Stretch the calves.\n2. Massage them."
    lead = f"{steps}\n\n{RAGTRUTH_SENTINEL}. The passages do not"
    text = f"{lead} explain how to relieve tight calves {clause.format(w=word)}."
    assert sr.parse_verdict(text, question=question, **kw).answered, text
    assert sr.parse_verdict(text, **kw).declined, text
    asked = f"how to relieve tight calves {clause.format(w=word)}"
    assert sr.parse_verdict(text, question=asked, **kw).declined, (text, asked)
    noun = f"{lead} explain how to relieve tight calves after the initial {word} stretch."
    assert sr.parse_verdict(noun, question=question, **kw).declined, noun
    # the rest must be the question's thing: for another question the circumstance says nothing
    assert sr.parse_verdict(text, question="When was the bridge built?", **kw).declined, text


@GRAMMAR
@given(word=WORDS, strict=st.booleans())
def test_a_configured_sentinel_scoped_after_a_numbered_answer_reads_as_without_it(
    word: str, strict: bool
) -> None:
    """An answer that opens with a list number ("1. Mix ...") reads the same with the sentinel
    configured as without it: a scoped sentinel after it leaves the answer, a bare one declines."""
    steps = "1. Mix the cement.\n2. Pour it into the mould.\n3. Let it set."
    scoped = f"{steps}\n\n{RAGTRUTH_SENTINEL} whether {word} cement is stronger."
    kw = {"sentinel": RAGTRUTH_SENTINEL, "strict": strict}
    assert sr.parse_verdict(scoped, **kw).answered, scoped
    assert sr.parse_verdict(scoped).answered, scoped
    bare = f"{steps}\n\n{RAGTRUTH_SENTINEL}."
    assert sr.parse_verdict(bare, **kw).declined, bare
    assert sr.parse_verdict(bare).declined, bare


# -- verdict15g: a quoted question inside the verdict sentence; absences of information nouns --
INFO_NOUNS = ["instructions", "specific instructions", "recommendations", "guidelines", "steps"]
QUOTED = ["How often can {w} lay eggs?", "What is {w}?", "Why does my {w} hurt?"]


@GRAMMAR
@given(word=WORDS, q=st.sampled_from(QUOTED), colon=st.booleans(), therefore=st.booleans())
def test_a_verdict_after_a_quoted_question_is_one_sentence(
    word: str, q: str, colon: bool, therefore: bool
) -> None:
    """'... the answer to the question "How often ...?" is: <verdict>' is one sentence: its
    verdict decides, whether it gives up or answers (the "?" inside the quotes ends nothing)."""
    quoted = q.format(w=word)
    lead = "Passage 1 says hens lay in clutches. "
    lead += f'{"Therefore, the" if therefore else "The"} answer to the question "{quoted}" is'
    lead += ":" if colon else ""
    gives_up = f"{lead} unable to answer based on given passages."
    assert sr.parse_verdict(gives_up).declined, gives_up
    assert sr.parse_verdict(gives_up, question=quoted).declined, gives_up
    answers = f"{lead} about {len(word)} eggs a week, as passage 1 says."
    assert sr.parse_verdict(answers).answered, answers
    assert sr.parse_verdict(answers, question=quoted).answered, answers


@GRAMMAR
@given(
    noun=st.sampled_from(INFO_NOUNS),
    part=st.sampled_from(PARTICIPLES),
    src=sources,
    obj=objects,
    after=st.sampled_from(AFTER),
)
def test_no_information_noun_given_declines(
    noun: str, part: str, src: str, obj: str, after: str
) -> None:
    """ "There are no (specific) instructions provided for X", "... in the passages", "No mention
    is made of X", "Nothing is said about X" decline; a thing that is not information, reported
    absent, is an answer (there is none)."""
    for text in (
        f"There are no {noun} {part} for {obj}.",
        f"There are no {noun} {part} in {_lower_first(src)}.",
        f"There are no {noun} in the passages about {obj}.",
        f"No mention is made of {obj}.",
        f"Nothing is said about {obj} in {_lower_first(src)}.",
        f"The given passages seem to lack {obj}.",
    ):
        assert sr.parse_verdict(text + after).declined, text + after
    answer = f"There are no side effects {part} for this drug, so it is considered safe."
    assert sr.parse_verdict(answer).answered, answer


@GRAMMAR
@given(
    word=WORDS,
    extra=st.sampled_from(["specific impact", "exact effect", "particular methods"]),
    link=st.sampled_from(["regarding", "whether there is anything about", "about"]),
    sentinel=st.sampled_from([None, RAGTRUTH_SENTINEL]),
)
def test_a_give_up_scoped_mostly_in_the_questions_words_declines(
    word: str, extra: str, link: str, sentinel: str | None
) -> None:
    """Content, then "Unable to answer ... regarding <the question in its own words, plus a word or
    two>": the question given up (escalate); scoped to mostly other words, the answer stands."""
    kw = {"sentinel": sentinel} if sentinel else {}
    question = f"how does {word} loss affect sleeping and eating"
    answer = f"According to passage 3, {word} loss can affect sleep quality in several ways."
    asked = f"{answer}\n\n{RAGTRUTH_SENTINEL} {link} the {extra} of {word} loss on eating."
    assert sr.parse_verdict(asked, question=question, **kw).declined, asked
    other = f"{answer}\n\n{RAGTRUTH_SENTINEL} {link} the {extra} of vitamin pills on blood sugar."
    assert sr.parse_verdict(other, question=question, **kw).answered, other


@pytest.mark.parametrize(
    ("text", "declined"),
    [
        ("The price does not appear in any of the passages.", True),
        ("The price does not appear to be mentioned in the given passages.", True),
        ("The date doesn't show up anywhere in the text.", True),
        ("The passages are not helpful for answering this question.", True),
        ("The three passages provided all fail to mention the price.", True),
        ("The passages both never mention the price.", True),
        ("The drug does not appear in the list of banned substances.", False),
        ("The symptoms do not appear to be caused by stress.", False),
        ("The bird does not appear in winter.", False),
        ("The story does not occur in any book of the Bible.", False),
        ("The price does not appear in the provided report.", True),
        ("The passages all agree that the price is $5.", False),
    ],
)
def test_absent_from_the_source_by_not_appearing_in_it(text: str, declined: bool) -> None:
    """Absent because it does not appear in the source: a handed one ("any book of the Bible" and
    "the list of banned substances" are the world, not the passages)."""
    assert sr.parse_verdict(text).declined is declined, text
