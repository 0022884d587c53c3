"""Long whole-document answers: a decline that opens them, whatever follows, and answers with a gap.

The rule rows carry one example each way; these cases read the parts around the rows: an opening
markdown heading, a decline conceded before the answer, a clause that goes on declining, a
document named by its own kind, and the streaming hold in front of a heading.
"""

from __future__ import annotations

import pytest

import selfroute as sr
from selfroute._streaming import SentinelSniffer

SUMMARY = (
    "\n\nWhat the report does include:\n\n- Scope 1: 7.1 Mt CO2e in 2022.\n"
    "- Scope 2: 0.5 Mt CO2e in 2022.\n- A 2030 target of a 70% cut against 2019."
)

DECLINES = [
    "# Scope 3 emissions, 2022\n\nThe report does not disclose a Scope 3 total for 2022." + SUMMARY,
    "### Uptime SLA\n\nThe agreement does not define an uptime SLA.\n\n### Related terms\n\n"
    "- Support: 9am-6pm CET on business days.\n- Maintenance: 48 hours' notice.",
    "There's no information in the transcript about the size of the Series A. The founder "
    "mentions the round but never says how much was raised.\n\nHere's what she does say:\n\n"
    "- The company bootstrapped for 18 months.\n- The seed round came from angels.",
    "The notice does not say how many units were affected." + SUMMARY,
    "The lease agreement does not specify a penalty for breaking the lease early." + SUMMARY,
    "The guideline is silent on a target for adults over 80." + SUMMARY,
    "The thesis does not give a figure for the monks at Rievaulx at its peak." + SUMMARY,
    "No specific monetary limit on gifts from suppliers is given in the code of conduct." + SUMMARY,
    "The minister did not commit to a number. The only number she gave is the £1.2 billion "
    "for the programme. That tells you the funding, so I can't give you the figure you asked for.",
]

ANSWERS = [
    "# Rent\n\nRent is $1,450 a month, due on the first. The lease doesn't state a late fee.",
    "## Answer\n\nShe moved to Paris in 1921." + SUMMARY,
    "The lease does not specify a pet deposit, but pets are allowed with written consent.",
    "The policy does not cover flood damage.",
    "The plan does not include dental cover, so you would pay for check-ups yourself.",
    "The release does not include the fix for the memory leak; that ships in 2.4.1.",
    "Nothing in the contract prevents early renewal, which takes 30 days' notice.",
    "Although the text does not name its author, the pamphlet's main argument is clear: it "
    "argues that enclosure is unjust.\n\nThe editor suggests a clergyman, but that is not "
    "confirmed.",
    "Although the guideline does not define frailty, it recommends a target of 7.5% for frail "
    "adults.",
    "The report puts the share at roughly 40%. I can't give you the exact figure you asked for.",
]


@pytest.mark.parametrize("text", DECLINES)
def test_an_opening_decline_stands_whatever_follows(text: str) -> None:
    assert sr.parse_verdict(text).declined, text


@pytest.mark.parametrize("text", ANSWERS)
def test_an_answer_with_a_gap_stays_an_answer(text: str) -> None:
    assert sr.parse_verdict(text).answered, text


def test_a_heading_alone_decides_nothing_and_is_held_while_a_decline_may_follow() -> None:
    text = DECLINES[1]
    sniffer = SentinelSniffer(hold_chars=120)
    released = "".join(sniffer.feed(text[i : i + 4]) for i in range(0, len(text), 4))
    assert released == ""
    answer = ANSWERS[0]
    sniffer = SentinelSniffer(hold_chars=120)
    shown = "".join(sniffer.feed(answer[i : i + 4]) for i in range(0, len(answer), 4))
    assert shown and answer.startswith(shown)


def test_a_long_heading_or_a_bold_line_is_not_a_title() -> None:
    bold = "**1972**\n\nThe passage does not give the exact day."
    assert sr.parse_verdict(bold).answered
    long_heading = "# " + " ".join(["word"] * 20) + "\n\nThe text does not say."
    assert sr.parse_verdict(long_heading).answered
