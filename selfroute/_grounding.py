"""Grounded mode: parse the quotes a model gives as support and find them in its context.

In grounded mode the prompt asks the model to copy, after its answer, the sentence or sentences
that support it, each on a line starting with ``Quote:`` (:data:`selfroute.GROUNDING_PREFIX`).
:func:`split_quotes` separates the answer from the quotes, whatever format the model used, and
:func:`check_grounding` looks every quote up in the text the model was given and returns
:class:`Citation` objects with character offsets into the *original* source text.

Matching is tolerant of case, punctuation and white space -- both sides are normalised (Unicode
NFKC, case folding, every character that is not a letter, digit or combining mark treated as a
separator; in scripts written without spaces, such as Chinese or Thai, each character is a word)
-- but a quote must be made of whole words that appear in that order in one source. An ellipsis
in a quote (``...``, ``…``, ``[...]``) skips text: each piece must appear, in order.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._result import Citation
from selfroute._verdict import strip_reasoning

__all__ = [
    "QUOTE_LABEL",
    "Citation",
    "Grounding",
    "GroundingSource",
    "check_grounding",
    "locate_quote",
    "split_quotes",
]

#: The label that starts each quote line in grounded mode.
QUOTE_LABEL = "Quote:"


# -- results ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GroundingSource:
    """A text the model was given (for example one retrieved passage).

    Attributes:
        text: The text, exactly as it appeared in the prompt.
        doc_id: An identifier reported in citations found in this source.
    """

    text: str
    doc_id: str | None = None


@dataclass(frozen=True)
class Grounding:
    """An answer with its checked citations.

    Attributes:
        answer: The answer text without the quote lines and labels.
        citations: One citation per quote, in the order the model gave them.
    """

    answer: str
    citations: tuple[Citation, ...]

    @property
    def grounded(self) -> bool:
        """True when there is at least one citation and every citation was found."""
        return bool(self.citations) and all(c.found for c in self.citations)

    @property
    def quotes(self) -> tuple[str, ...]:
        """The quotes, in order."""
        return tuple(c.quote for c in self.citations)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict: answer, grounded and the citations."""
        return {
            "answer": self.answer,
            "grounded": self.grounded,
            "citations": [c.to_dict() for c in self.citations],
        }


# -- normalisation ------------------------------------------------------------------------------
# Pieces of text: runs of ASCII letters/digits (fast path), or runs of non-ASCII characters
# (optionally with the ASCII letter before them, so that "e" + combining accent stays together).
# What lies between pieces is ASCII punctuation or white space: a separator.
_PIECE = re.compile(r"(?P<ascii>[A-Za-z0-9]+)(?![^\x00-\x7f])|(?P<other>[A-Za-z0-9]?[^\x00-\x7f]+)")


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "M"


# Scripts written without spaces between words (Thai, Lao, Myanmar, Khmer, kana, CJK
# ideographs): each character (with its combining marks) counts as a word of its own.
_UNSPACED = re.compile(
    "[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\U00020000-\U0003ffff]"
)


@functools.lru_cache(maxsize=8192)
def _fold(cluster: str) -> str:
    """NFKC + casefold one character cluster; non-word characters become a space."""
    folded = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", cluster).casefold())
    out = "".join(ch if ch.isalnum() or _is_mark(ch) else " " for ch in folded)
    return f" {out} " if _UNSPACED.match(out) else out


class _Normalised:
    """A text normalised for matching, with a map back to the original offsets.

    ``text`` is ``" word word ... word "`` (single spaces, one at each end, so a search for
    ``" " + phrase + " "`` only matches whole words). ``starts[i]`` / ``ends[i]`` are the original
    offsets of the character (cluster) that produced ``text[i]``.
    """

    __slots__ = ("ends", "starts", "text")

    def __init__(self, original: str) -> None:
        parts: list[str] = [" "]
        starts = array("q", [0])
        ends = array("q", [0])
        emitted = False  # a word character has been written
        pending = False  # a separator is due before the next word character
        last = 0
        for m in _PIECE.finditer(original):
            s, e = m.span()
            if s > last:
                pending = True
            last = e
            if m.lastgroup == "ascii":
                if pending and emitted:
                    parts.append(" ")
                    starts.append(s)
                    ends.append(s)
                pending = False
                emitted = True
                parts.append(m.group().lower())
                starts.extend(range(s, e))
                ends.extend(range(s + 1, e + 1))
                continue
            i = s
            while i < e:
                j = i + 1
                while j < e and _is_mark(original[j]):
                    j += 1
                for ch in _fold(original[i:j]):
                    if ch == " ":
                        pending = True
                        continue
                    if pending and emitted:
                        parts.append(" ")
                        starts.append(i)
                        ends.append(i)
                    pending = False
                    emitted = True
                    parts.append(ch)
                    starts.append(i)
                    ends.append(j)
                i = j
        parts.append(" ")
        starts.append(len(original))
        ends.append(len(original))
        self.text = "".join(parts)
        self.starts = starts
        self.ends = ends


def _words(text: str) -> str:
    """The normalised words of ``text``, joined by single spaces."""
    return _Normalised(text).text.strip()


# -- locating -----------------------------------------------------------------------------------
_ELLIPSIS = re.compile(r"[\[(]\s*(?:\.(?:\s?\.){2,}|[…⋯])\s*[\])]|\.(?:\s?\.){2,}|[…⋯]")


def _fragments(quote: str) -> list[str]:
    """The normalised, non-empty pieces of ``quote`` between ellipses."""
    out: list[str] = []
    for piece in _ELLIPSIS.split(quote):
        words = _words(piece)
        if words:
            out.append(words)
    return out


def _check_min_words(min_words: int) -> None:
    if isinstance(min_words, bool) or not isinstance(min_words, int) or min_words < 1:
        raise ConfigurationError(f"min_words must be a positive integer, got {min_words!r}")


def _find(fragments: Sequence[str], source: _Normalised) -> tuple[int, int] | None:
    """Original-text span of ``fragments`` found in order in ``source``, or None."""
    hay = source.text
    patterns = [f" {f} " for f in fragments]
    positions: list[int] = []
    pos = 0
    for pat in patterns:
        at = hay.find(pat, pos)
        if at < 0:
            return None
        positions.append(at)
        pos = at + len(pat) - 1  # the next piece may start at this piece's trailing space
    # Tighten: move earlier pieces as late as possible before the next one (smallest span that
    # ends where the forward search ended).
    for k in range(len(patterns) - 2, -1, -1):
        positions[k] = hay.rfind(patterns[k], positions[k], positions[k + 1] + 1)
    first = positions[0] + 1
    last = positions[-1] + len(patterns[-1]) - 2
    return source.starts[first], source.ends[last]


def locate_quote(quote: str, text: str, *, min_words: int = 3) -> tuple[int, int] | None:
    """Find ``quote`` in ``text``, tolerating case, punctuation and white-space differences.

    A quote may skip text with an ellipsis (``...``, ``…``, ``[...]``, ``(...)``): every piece
    must then be found, in order.

    Args:
        quote: The quote (surrounding quote marks are ignored like any punctuation).
        text: The text to search.
        min_words: Quotes with fewer normalised words than this are not verifiable.

    Returns:
        ``(start, end)`` offsets into the original ``text`` (from the first quoted word to the
        end of the last), or ``None`` when the quote is not found, empty or too short.

    Raises:
        ConfigurationError: ``min_words`` is not a positive integer.
    """
    _check_min_words(min_words)
    fragments = _fragments(quote)
    if sum(f.count(" ") + 1 for f in fragments) < min_words:
        return None
    return _find(fragments, _Normalised(text))


def check_grounding(
    answer: str,
    quotes: Sequence[str],
    sources: Sequence[GroundingSource | str],
    *,
    min_words: int = 3,
) -> Grounding:
    """Look every quote up in the sources; the first source that contains it wins.

    A quote must be found within one source: text that only exists across the boundary of two
    sources is not found. Each source is normalised at most once per call.

    Args:
        answer: The answer text (as returned by :func:`split_quotes`).
        quotes: The quotes the model gave.
        sources: The texts the model was given, in order (plain strings have no ``doc_id``).
        min_words: Quotes with fewer normalised words than this are reported as ``too_short``.

    Returns:
        The answer with one :class:`Citation` per quote.

    Raises:
        ConfigurationError: ``min_words`` is not a positive integer.
    """
    _check_min_words(min_words)
    items = [s if isinstance(s, GroundingSource) else GroundingSource(text=s) for s in sources]
    normalised: dict[int, _Normalised] = {}
    citations: list[Citation] = []
    for raw in quotes:
        quote = _unwrap(raw)
        fragments = _fragments(quote)
        n_words = sum(f.count(" ") + 1 for f in fragments)
        if n_words == 0:
            citations.append(Citation(quote, False, None, None, None, None, "empty"))
            continue
        if n_words < min_words:
            citations.append(Citation(quote, False, None, None, None, None, "too_short"))
            continue
        citation = Citation(quote, False, None, None, None, None, "not_found")
        for index, source in enumerate(items):
            if index not in normalised:
                normalised[index] = _Normalised(source.text)
            span = _find(fragments, normalised[index])
            if span is not None:
                citation = Citation(quote, True, index, source.doc_id, span[0], span[1])
                break
        citations.append(citation)
    return Grounding(answer=answer.strip(), citations=tuple(citations))


# -- parsing ------------------------------------------------------------------------------------
_MD = r"(?:[*_]{1,3})?"
_LABEL_WORDS = (
    r"(?:(?:supporting|direct|exact|verbatim|relevant|source)\s+)?"
    r"(?:quotes?|quotations?|quote\(s\)|evidence|citations?|"
    r"supporting\s+(?:sentences?|sentence\(s\)|text|passages?))"
    r"(?:\s*#?\s*\d{1,2})?"  # "Quote 1", "Quote #2"
    r"(?:\s+from\s+(?:the\s+)?(?:passages?|documents?|sources?|texts?|context|excerpts?)"
    r"(?:\s*#?\s*\d{1,3})?)?"  # "Quote from passage 2"
    r"(?:\s*\([^()\n]{0,40}\))?"  # "Quote (passage 2)"
)
# "Quote: ...", "**Quote:** ...", "**Quotes**:", "Supporting quote 1: ...".
_QUOTE_LINE = re.compile(
    rf"^(?:#{{1,6}}\s*)?{_MD}\s*{_LABEL_WORDS}\s*{_MD}\s*[:：]\s*{_MD}\s*", re.IGNORECASE
)
# A heading made of the label alone: "### Quotes", "**Supporting quotes**".
_QUOTE_HEADER = re.compile(rf"^(?:#{{1,6}}\s*)?{_MD}\s*{_LABEL_WORDS}\s*{_MD}\s*$", re.IGNORECASE)
# A quote label in the middle of a line, after the end of a sentence.
_INLINE_LABEL = re.compile(
    r"(?<=[.!?\"”’)\]*])[^\S\n]+(?=(?:\*\*|__)?(?:supporting\s+)?quotes?(?:\*\*|__)?\s*[:：])",
    re.IGNORECASE,
)
_ANSWER_LABEL = re.compile(
    rf"^\s*(?:#{{1,6}}\s*)?{_MD}\s*(?:final\s+answer|short\s+answer|answer|response)\s*{_MD}"
    rf"\s*[:：]\s*{_MD}[^\S\n]*",
    re.IGNORECASE,
)
_BLOCK = re.compile(r"^\s*>(?:\s*>)*[^\S\n]?")
_BULLET = re.compile(r"^\s*(?:[-*•+‣▪◦–—]|\d{1,2}[.)]|\(\d{1,2}\))\s+")

_OPENERS = "\"'“‘«„‚「『"
_CLOSERS = "\"'”’»“‘」』"
_DOUBLE_OPENERS = '"“«„「『'
_CLOSER_OF = {'"': '"', "“": "”", "«": "»", "„": "“”", "「": "」", "『": "』"}
# Each quoted segment of a line (double quotes of any style).
_SEGMENT = re.compile(r'"([^"\n]+)"|“([^“”\n]+)”|«([^«»\n]+)»|„([^„“”\n]+)[“”]|「([^「」\n]+)」')
# What may stand between or after quoted segments: separators, "and", source references.
_FILLER = re.compile(
    r"\([^()\n]*\)|\[[^\[\]\n]*\]|\b(?:and|or)\b|"
    r"[-–—]+\s*(?:passage|document|doc|source|chunk|excerpt|context|section|paragraph)s?\b"
    r"(?:\s*#?\s*\d+)?",
    re.IGNORECASE,
)
_TRAILING_REF = re.compile(
    r"(?:[(\[](?:passage|document|doc|source|chunk|excerpt|p)\.?[^\S\n]?#?[^\S\n]?\d+[)\]]|"
    r"\[\d{1,3}\])$",
    re.IGNORECASE,
)
# What a model writes instead of a quote when it has none.
_PLACEHOLDER = re.compile(
    r"(?:none|n/?a|nil|null|nothing|not applicable|no (?:quotes?|quotations?|support)"
    r"(?: (?:available|needed|found))?|-+)[.!]?",
    re.IGNORECASE,
)
_MD_WRAP = re.compile(r"^(\*\*|__|\*|_|`)(.+)\1$", re.DOTALL)
_WORD_CHAR = re.compile(r"[^\W_]")


def _unwrap(text: str) -> str:
    """Strip white space, markdown emphasis and surrounding quote marks."""
    text = text.strip()
    for _ in range(4):
        before = text
        m = _MD_WRAP.match(text)
        if m is not None:
            text = m.group(2).strip()
        if len(text) >= 2 and text[0] in _OPENERS and text[-1] in _CLOSERS:
            text = text[1:-1].strip()
        if text == before:
            break
    return text


def _contents(text: str) -> list[str]:
    """The quote(s) written after a label or bullet: one, or several each in double quotes."""
    text = text.strip()
    m = _MD_WRAP.match(text)
    if m is not None:
        text = m.group(2).strip()
    segments = [next(g for g in seg.groups() if g is not None) for seg in _SEGMENT.finditer(text)]
    if segments and text[:1] in _DOUBLE_OPENERS:
        rest = _FILLER.sub(" ", _SEGMENT.sub(" ", text))
        if not _WORD_CHAR.search(rest):
            return [q for q in (_unwrap(s) for s in segments) if q]
    text = text.rstrip()
    ref = _TRAILING_REF.search(text)
    if ref is not None:
        text = text[: ref.start()]
    quote = _unwrap(text)
    return [quote] if quote and not _PLACEHOLDER.fullmatch(quote) else []


def _unclosed(text: str) -> str:
    """The double quote mark that ``text`` opens and does not close (a quote wrapped onto the
    next lines), or ``""``."""
    text = text.strip().lstrip("*_")
    if not text or text[0] not in _CLOSER_OF:
        return ""
    return "" if any(c in text[1:] for c in _CLOSER_OF[text[0]]) else text[0]


def _clean_answer(text: str) -> str:
    text = text.strip()
    return _ANSWER_LABEL.sub("", text, count=1).strip()


def _label(line: str) -> tuple[str, str | None]:
    """Split a line into (marker-free body, text after a quote label or None if unlabelled).

    A bare header (``Quotes:``, ``### Quotes``) gives an empty string after the label.
    """
    body = _BULLET.sub("", _BLOCK.sub("", line), count=1).strip()
    m = _QUOTE_LINE.match(body)
    if m is not None:
        return body, body[m.end() :]
    if _QUOTE_HEADER.match(body):
        return body, ""
    return body, None


def split_quotes(text: str) -> tuple[str, list[str]]:
    """Split a model output into (answer, quotes).

    Reasoning blocks are dropped. The answer is everything before the first quote line or quote
    header, stripped, without an ``Answer:`` label (if the model put its quotes first, a later
    ``Answer:`` line is used). Quotes may be written ``Quote: "..."``, ``Quote: ...``,
    ``**Quote:** ...``, or as a ``Quotes:`` header followed by bullets (``- "..."``, ``* ...``,
    ``1. ...``), blockquotes (``> ...``) or one quote per line; several quotes on one line must
    each be in double quotes. Surrounding quote marks of any style are removed.

    Args:
        text: The raw model output.

    Returns:
        The answer and the list of quotes (empty when the model quoted nothing; the answer is
        then the whole cleaned output).
    """
    cleaned, _ = strip_reasoning(text)
    cleaned = cleaned.replace("\r\n", "\n").replace("\r", "\n")
    lines: list[str] = []
    for line in cleaned.split("\n"):
        lines.extend(_INLINE_LABEL.sub("\n", line).split("\n"))
    first = next((i for i, line in enumerate(lines) if _label(line)[1] is not None), None)
    if first is None:
        return _clean_answer(cleaned), []
    answer = _clean_answer("\n".join(lines[:first]))

    quotes: list[str] = []
    late_answer: list[str] | None = None  # an "Answer:" line after the quotes
    in_section = False  # inside a run of quotes
    header = False  # the run was opened by a bare header ("Quotes:")
    items = 0  # quotes taken in this run
    blank = False  # a blank line since the last quote
    wrapped: list[str] | None = None  # a quote whose closing mark is on a later line
    closers = ""  # the closing marks that end ``wrapped``
    block: list[str] = []  # lines of a blockquote paragraph

    def flush_block() -> None:
        if block:
            quotes.extend(_contents(" ".join(block)))
            block.clear()

    def take(content: str) -> None:
        nonlocal wrapped, closers
        opener = _unclosed(content)
        if opener:
            wrapped, closers = [content.strip()], _CLOSER_OF[opener]
        else:
            quotes.extend(_contents(content))

    for line in lines[first:]:
        if wrapped is not None:
            wrapped.append(line.strip())
            if any(c in line for c in closers):
                quotes.extend(_contents(" ".join(wrapped)))
                wrapped = None
            continue
        if not line.strip():
            flush_block()
            blank = True
            continue
        body, after = _label(line)
        if after is not None:
            flush_block()
            late_answer = None
            in_section, blank = True, False
            header = not after.strip()
            items = 0
            if after.strip():
                take(after)
                items = 1
            continue
        if _ANSWER_LABEL.match(body):
            flush_block()
            in_section = False
            if not answer:
                late_answer = [line]
            continue
        if late_answer is not None:
            late_answer.append(line)
            continue
        if not in_section:
            continue
        if _BLOCK.match(line) and not _BULLET.match(line):
            content = _BLOCK.sub("", line).strip()
            if len(content) >= 2 and content[0] in _OPENERS and content[-1] in _CLOSERS:
                flush_block()
                quotes.extend(_contents(content))
            else:
                block.append(content)
        elif (
            _BULLET.match(line)
            or body[:1] in _OPENERS
            # a plain line right after a "Quotes:" header or after another quote line
            or (header and (items == 0 or not blank))
        ):
            flush_block()
            take(body)
        else:  # an explanation after the quotes
            flush_block()
            in_section = False
            continue
        items += 1
        blank = False
    if wrapped is not None:
        quotes.extend(_contents(" ".join(wrapped)))
    flush_block()
    if not answer and late_answer is not None:
        answer = _clean_answer("\n".join(late_answer))
    return answer, quotes
