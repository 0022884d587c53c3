"""Sentinel sniffing for streamed RAG answers.

The RAG step's tokens are held back while the text so far could still be the start of a decline
(the sentinel, "The text does not mention ...", "I cannot ...", a reasoning block, an ``Answer:``
label). As soon as it cannot, the held text and every later token flow through. Both adapters use
this one sniffer through the core's drivers.
"""

from __future__ import annotations

import re
import sys

from selfroute._prompts import DEFAULT_SENTINEL
from selfroute._verdict import (
    DeclineDetector,
    check_detector,
    complete_sentences,
    could_start_decline,
    parse_verdict,
    says_nothing_yet,
    strip_reasoning,
)

__all__ = ["SentinelSniffer"]

_TRAILING_MARKUP = "*_`"
_LABELS = ("answer:", "final answer:", "short answer:", "response:", "a:")
_LEADING_LABEL = re.compile(
    r"^\s*(?:(?:\*\*|__)\s*)?(?:final\s+answer|short\s+answer|answer|response|a)\s*(?:(?:\*\*|__)\s*)?[:：]"
    r"\s*(?:(?:\*\*|__)\s*)?",
    re.IGNORECASE,
)


def _stream_clean(raw: str) -> tuple[str, bool]:
    """Prefix-stable cleaning: reasoning removed, leading white space and one label dropped.

    Returns the cleaned text and whether more input is needed before anything can be said
    (inside a reasoning block, or a possible tag/label still forming).
    """
    body, inside = strip_reasoning(raw)
    if inside:
        return "", True
    stripped = body.lstrip()
    low = stripped.lower()
    if low.startswith("<") and ">" not in low:
        return "", True  # a tag such as <think> may be forming
    bare = low.lstrip("*_#> ")
    if bare and any(label.startswith(bare) and len(bare) < len(label) for label in _LABELS):
        return "", True  # "**Answer" may become "**Answer:**" or a heading
    heading = _HEADING.match(stripped)
    if heading is not None:  # "## Answer" on its own line: the detector skips it too
        if "\n" not in heading.group(0):
            return "", True
        stripped = stripped[heading.end() :]
    stripped = _LEADING_LABEL.sub("", stripped, count=1)
    return stripped, False


#: A heading line that only labels what follows ("## Answer", "**Response**").
_HEADING = re.compile(
    r"^[*_#> ]*(?:final |short |my )?(?:answer|response|reply|summary|result|conclusion)"
    r"[*_:. ]*(?:\n\s*|$)",
    re.IGNORECASE,
)


#: Characters after which :func:`_stream_clean` of a longer text may differ from the shorter
#: text's cleaning plus what was added: a reasoning tag (``<``, ``>``) or a label's colon.
_UNSTABLE = frozenset("<>:：")
#: The longest reasoning tag (``</reflection>``): a ``<`` this close to the end may still open one.
_TAG_REACH = 16

#: Characters a chunk must not hold for the held text's sentence check to look at a window only
#: (a line break ends a sentence; the others may change how the text is cleaned).
_WINDOW_UNSAFE = frozenset("\n<>:：")
#: Terminal punctuation: a window must not start inside a run of it.
_TERMINALS = frozenset(".!?;")
#: How much of the held text before a chunk its sentence check reads. A sentence end's reading
#: looks 12 characters back ("approx." and its word boundary) and 2 ahead; the window's first
#: 12 characters are only context (an abbreviation cut there may read as an end).
_WINDOW = 32
_CONTEXT = 12

_SPACE = re.compile(r"\s")
_WORD = re.compile(r"[^\W_]")  # a letter or digit: text with none is not judged yet ("* ", "1.")


class SentinelSniffer:
    """Decides, chunk by chunk, when streamed RAG text can be shown.

    Args:
        sentinel: The decline word.
        strict: Only the sentinel counts as a decline (natural refusals stream through).
        min_chars: Never release fewer than this many characters of cleaned text, unless the
            stream ends (keeps one-token answers like "Un" from leaking before "answerable").
        hold_chars: Also hold text that no longer *opens* like a decline until
            :func:`~selfroute.parse_verdict` (the same detector that decides the route) reads
            what has arrived as an answer: once the first sentence has ended, the complete
            sentences so far; before that, the text so far once it is ``hold_chars`` long, and
            only if no opening of it (up to a word boundary) read as a decline ("His age is not
            mentioned" holds until its sentence ends, and is not shown if that sentence
            declines). ``0`` (the default here) releases as soon as the opening cannot be a
            decline; the flow's streams pass ``RouteConfig.stream_hold_chars``.
        question: The question, for the detector (a "No, ..." answering a yes/no question).
        detector: Your own decline detector (``RouteConfig.decline_detector``), part of the
            detector the hold asks. With a detector and ``hold_chars=0``, nothing is released
            before the first sentence has ended and reads as an answer (an arbitrary detector
            cannot judge half a sentence), or before the stream ends.
    """

    def __init__(
        self,
        *,
        sentinel: str = DEFAULT_SENTINEL,
        strict: bool = False,
        min_chars: int = 1,
        hold_chars: int = 0,
        question: str | None = None,
        detector: DeclineDetector | None = None,
    ) -> None:
        check_detector(detector)
        self.detector = detector
        # How long text with no decline in sight is held (see hold_chars); 0: not at all.
        self._hold_limit = hold_chars if hold_chars > 0 or detector is None else sys.maxsize
        self.sentinel = sentinel
        self.strict = strict
        self.min_chars = min_chars
        self.hold_chars = hold_chars
        self.question = question
        self._raw: list[str] = []  # the text so far, in pieces (joined when it is cleaned)
        self._raw_tail = ""  # its last _TAG_REACH characters
        self._open = False
        self._suspect = False
        self._checked = ""
        self._seen = 0
        self._emitted: list[str] = []
        self._emitted_len = 0
        # Whether the last full cleaning was settled (nothing more needed, the text shown is a
        # prefix of it): then text without _UNSTABLE characters only extends the cleaning.
        self._settled = False
        self._pending = ""  # cleaned text after the shown text: trailing markup, white space
        self._inside = False  # the text so far ends inside an unterminated reasoning block
        # The held text's cleaning has a word and no sentence end yet, and nothing can be shown
        # before one (a detector with no hold limit, or an opening that read as a decline): its
        # last _WINDOW + 1 cleaned characters, so a chunk that cannot end a sentence is only
        # looked at itself (None: the next chunk is judged with the whole text).
        self._quiet_tail: str | None = None

    @property
    def released(self) -> bool:
        """Whether any text has been released."""
        return self._open

    @property
    def emitted(self) -> str:
        """The text released so far."""
        if len(self._emitted) > 1:
            self._emitted = ["".join(self._emitted)]
        return self._emitted[0] if self._emitted else ""

    def _emit(self, text: str) -> str:
        self._emitted.append(text)
        self._emitted_len += len(text)
        return text

    def feed(self, delta: str) -> str:
        """Add streamed text; return the text that may be shown now (possibly empty).

        Linear in the length of the stream: once the text is released and its cleaning can no
        longer change (no reasoning tag or label forming), a chunk is only looked at itself.
        """
        if not delta:
            return ""
        tail = (self._raw_tail + delta)[-_TAG_REACH:]
        stable = _UNSTABLE.isdisjoint(delta) and "<" not in self._raw_tail
        if self._open and self._settled and stable:
            self._raw.append(delta)
            self._raw_tail = tail
            return self._extend(delta)
        if self._inside and ">" not in delta:
            # inside a reasoning block: only a closing tag (its ">") can change anything
            self._raw.append(delta)
            self._raw_tail = tail
            return ""
        if self._quiet_tail is not None and self._still_quiet(delta):
            self._raw.append(delta)
            self._raw_tail = tail
            return ""
        self._quiet_tail = None
        if not self._open and delta.isspace() and self._raw_tail[-1:].isspace():
            # white space after white space adds nothing to judge, and nothing to show (trailing
            # white space is held): the next chunk with text is judged with it
            self._raw.append(delta)
            self._raw_tail = tail
            return ""
        self._raw.append(delta)
        self._raw_tail = tail
        raw = "".join(self._raw)
        self._raw = [raw]
        self._settled = False
        self._inside = bool(strip_reasoning(raw)[1]) if "<" in raw else False
        cleaned, wait = _stream_clean(raw)
        if wait:
            return ""
        if not self._open:
            if len(cleaned.strip()) < self.min_chars:
                return ""
            # A word may be half-written: only judge once the prefix can no longer be a decline.
            if could_start_decline(cleaned, sentinel=self.sentinel, strict=self.strict):
                return ""
            if self._hold_limit > 0 and not self._reads_as_answer(cleaned):
                self._note_quiet(cleaned)
                return ""
            self._open = True
        if not cleaned.startswith(self.emitted):
            return ""  # cleaning changed earlier text (rare); the final answer settles it
        # Hold back trailing markup and white space (a closing ``**`` or backtick, or trailing
        # newlines, are stripped from the final answer); they are released with the next text,
        # or settled by :meth:`remainder`.
        shown = cleaned.rstrip(_TRAILING_MARKUP + " \t\r\n")
        self._settled = bool(cleaned)
        if len(shown) <= self._emitted_len:
            self._pending = cleaned[self._emitted_len :]
            return ""
        self._pending = cleaned[len(shown) :]
        return self._emit(shown[self._emitted_len :])

    def _note_quiet(self, cleaned: str) -> None:
        """After a full judgement that held ``cleaned``: whether later chunks may be judged by
        :meth:`_still_quiet` (see ``_quiet_tail``)."""
        forced = self._hold_limit == sys.maxsize or self._suspect
        if forced and _WORD.search(cleaned) and not complete_sentences(cleaned):
            self._quiet_tail = cleaned[-(_WINDOW + 1) :]

    def _still_quiet(self, delta: str) -> bool:
        """Whether the held text plus ``delta`` still has no sentence end (so nothing is shown),
        read from the last cleaned characters and ``delta`` alone.

        Such a chunk extends the cleaning by itself: it opens or closes no reasoning tag and
        adds no label colon, and the cleaning so far has a word (no leading label or markup is
        still forming). A sentence end it could make ends at most 2 characters before the old
        text's end, far enough into the window that the window reads it exactly as the whole
        text does. Ends the window finds in its first ``_CONTEXT`` characters are old text the
        whole text read as no end (an abbreviation cut off by the window); any other end the
        window finds (or thinks it finds) has the whole text judged.
        """
        tail = self._quiet_tail
        assert tail is not None
        if not _WINDOW_UNSAFE.isdisjoint(delta) or "<" in self._raw_tail:
            return False
        window = tail[-_WINDOW:]
        if len(tail) > _WINDOW and tail[0] in _TERMINALS and window[:1] in _TERMINALS:
            # the window would start inside a run of terminal punctuation: start after it
            window = window.lstrip("".join(_TERMINALS))
            if len(window) < _WINDOW - 6:
                return False
        window += delta
        ended = complete_sentences(window)
        if ended if len(tail) <= _WINDOW else len(ended) >= _CONTEXT:  # short: the whole text
            return False
        self._quiet_tail = (tail + delta)[-(_WINDOW + 1) :]
        return True

    def _extend(self, delta: str) -> str:
        """The released text grows by ``delta`` (its cleaning is the old one plus ``delta``)."""
        content = delta.rstrip(_TRAILING_MARKUP + " \t\r\n")
        if not content:
            self._pending += delta  # all trailing: held (each character once, when released)
            return ""
        out = self._pending + content
        self._pending = delta[len(content) :]
        return self._emit(out)

    def _declines(self, text: str) -> bool:
        verdict = parse_verdict(
            text,
            sentinel=self.sentinel,
            strict=self.strict,
            question=self.question,
            detector=self.detector,
        )
        return verdict.declined

    def _reads_as_answer(self, cleaned: str) -> bool:
        """Whether the held text ``cleaned`` may be shown (see ``hold_chars``)."""
        done = complete_sentences(cleaned)
        if _WORD.search(done):
            if done != self._checked:  # judged again only when another sentence has ended
                self._checked = done
                # "You asked about X." or "The report covers Y.": the next sentence decides
                self._suspect = self._declines(done) or says_nothing_yet(done)
            return not self._suspect
        if self._hold_limit == sys.maxsize:
            # nothing is shown before a sentence has ended, and that sentence is judged afresh:
            # what the openings read would decide nothing
            return False
        # Every opening of the sentence that ends a word, and the text so far as if its last word
        # were complete: "Her birth year is not mentioned" declines, and may arrive in one chunk
        # with what follows ("... mentioned in the").
        start = self._seen
        self._seen = len(cleaned)
        for m in _SPACE.finditer(cleaned, max(1, start)):
            if not self._suspect and _WORD.search(cleaned, 0, m.start()):
                self._suspect = self._declines(cleaned[: m.start()])
        if not self._suspect and _WORD.search(cleaned):
            self._suspect = self._declines(cleaned)
        return len(cleaned) >= self._hold_limit and not self._suspect

    def remainder(self, final_answer: str) -> str:
        """Text of ``final_answer`` not yet shown (called when the RAG answer was accepted)."""
        if final_answer.startswith(self.emitted):
            rest = final_answer[self._emitted_len :]
            self._emitted, self._emitted_len = [final_answer], len(final_answer)
            return rest
        return ""
