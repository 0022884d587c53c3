"""A built-in offline reader: answers with the sentence of its prompt that best covers the question.

:class:`ExtractiveReader` needs no model, no key and no network, so ``selfroute ask --model
offline`` (and ``sr.self_route(question, text, ExtractiveReader())``) show the whole Self-Route
loop -- retrieval, a real decline, the long-context fallback, the token ledger -- on your own
documents before you configure a model. It is a **toy-quality reader**: it copies one sentence,
it does not reason, paraphrase or combine facts, and it declines whenever no single sentence of
what it was shown covers enough of the question's terms. Use a real model for real answers.

How it reads a prompt: it takes the question from the last ``Question:`` line and the text between
``Passage:``/``Document:`` and that line (the layout of :class:`~selfroute.Prompts`' defaults;
any other prompt is read whole), splits the text into sentences, weighs each question term by
its inverse sentence frequency in that text (terms the text never contains weigh the most), and
picks the sentence that covers the largest share of the question's weight. Below
``min_coverage`` it writes the decline word the prompt asks for (``"unanswerable"`` by default).
In grounded mode (the prompt starts with :data:`~selfroute.GROUNDING_PREFIX`) it quotes the
sentence it copied.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from selfroute._prompts import DEFAULT_SENTINEL, GROUNDING_PREFIX
from selfroute._text import terms

__all__ = ["ExtractiveReader"]

_ANSWER_CUE = re.compile(r"\n\s*Answer:\s*$")
_CONTEXT = re.compile(r"(?:^|\n)(?:Passage|Document|Excerpts|Context):\s*\n", re.IGNORECASE)
_SENTINEL = re.compile(r'write "([^"]+)" and nothing else', re.IGNORECASE)
# A sentence ends at . ! ? (optionally closed by a quote or bracket) followed by white space, or
# at a blank line / line break (headings, list items, table rows).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n\s*\n|\n(?=\s*[-*#|>\d])")
_SPACE = re.compile(r"\s+")


def _stem(term: str) -> str:
    """A light suffix strip, so 'decides'/'decide'/'deciding' and 'routes'/'routing' meet."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(term) > len(suffix) + 3 and term.endswith(suffix):
            term = term[: -len(suffix)]
            break
    return term[:-1] if len(term) > 4 and term.endswith("e") else term


def _stems(text: str) -> list[str]:
    return [_stem(t) for t in terms(text)]


# "how long", "how many" ...: the second word asks for a kind of answer; it is not looked up.
_HOW = re.compile(r"\bhow\s+(?:long|many|much|often|far|old|big|large|early|late)\b", re.I)


def _question_stems(question: str) -> set[str]:
    return set(_stems(_HOW.sub(" ", question)))


@dataclass(frozen=True)
class ExtractiveReader:
    """A keyless, offline reader that copies the best-matching sentence or declines.

    Call it with a prompt, like any ``generate`` function of :func:`~selfroute.self_route`.

    Args:
        min_coverage: Share of the question's term weight (0..1) that one sentence must contain
            for the reader to answer; below it, the reader declines. Fixed a priori at one half,
            not tuned on any data set.
        max_words: Longest answer in words; a longer sentence is cut with ``...``.

    Example:
        >>> reader = ExtractiveReader()
        >>> reader('Passage:\\nMara kept the lamp for 31 years.\\n\\nQuestion: Who kept the lamp?')
        'Mara kept the lamp for 31 years.'
    """

    min_coverage: float = 0.5
    max_words: int = 60

    #: The name it reports as its model.
    name: str = "offline-extractive"

    def __call__(self, prompt: str) -> str:
        """Answer ``prompt`` with one of its sentences, or the prompt's decline word."""
        sentinel_match = _SENTINEL.search(prompt)
        sentinel = sentinel_match.group(1) if sentinel_match else DEFAULT_SENTINEL
        question, context = self.split_prompt(prompt)
        sentence, coverage = self.best_sentence(question, context)
        if sentence is None or coverage < self.min_coverage:
            return sentinel
        answer = self._shorten(sentence)
        if prompt.startswith(GROUNDING_PREFIX):
            return f"{answer}\nQuote: {sentence}"
        return answer

    @staticmethod
    def split_prompt(prompt: str) -> tuple[str, str]:
        """``(question, context)`` of a prompt laid out like the default templates."""
        body = prompt[len(GROUNDING_PREFIX) :] if prompt.startswith(GROUNDING_PREFIX) else prompt
        at = body.rfind("Question:")
        if at < 0 or (at > 0 and body[at - 1] != "\n"):
            return body.strip(), body
        question = _ANSWER_CUE.sub("", body[at + len("Question:") :]).strip()
        before = body[:at]
        openings = list(_CONTEXT.finditer(before))
        context = before[openings[-1].end() :] if openings else before
        return question, context

    def best_sentence(self, question: str, context: str) -> tuple[str | None, float]:
        """The sentence of ``context`` covering the largest share of ``question``'s term weight,
        and that share (0..1)."""
        wanted = _question_stems(question)
        sentences = [_SPACE.sub(" ", s).strip() for s in _SENTENCE_END.split(context)]
        sentences = [s for s in sentences if len(s.split()) >= 3]
        if not wanted or not sentences:
            return None, 0.0
        bags = [set(_stems(s)) for s in sentences]
        df = Counter(t for bag in bags for t in bag if t in wanted)
        n = len(sentences)
        # BM25's inverse document frequency over sentences: a term in every sentence weighs
        # (almost) nothing, a term the text never contains weighs the most.
        weight = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in wanted}
        total = sum(weight.values())
        if total <= 1e-9:  # pragma: no cover - log(1 + x) > 0 for every x > 0
            return None, 0.0
        best, best_cover = None, 0.0
        for sentence, bag in zip(sentences, bags, strict=True):
            cover = sum(weight[t] for t in wanted & bag) / total
            if cover > best_cover:
                best, best_cover = sentence, cover
        return best, best_cover

    def _shorten(self, sentence: str) -> str:
        words = sentence.split()
        if len(words) <= self.max_words:
            return sentence
        return " ".join(words[: self.max_words]) + " ..."
