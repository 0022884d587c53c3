"""Reading a structured verdict while it streams: ``answerable`` first, then the ``answer`` text.

A structured RAG verdict (``{"answerable": bool, "answer": str}``, see
:func:`~selfroute.verdict_schema`) arrives as JSON text in pieces: the content of a JSON-schema
response, or the argument deltas of a tool call. :class:`VerdictStream` reads those pieces once
each (linear in the text, never re-parsing what it has seen): it knows the verdict as soon as the
``answerable`` value is complete, and from then on hands out the ``answer`` string's decoded text
as it arrives (escapes, ``\\uXXXX`` and surrogate pairs split anywhere across pieces).

It only previews: the object the provider returns at the end still decides the route (the flow
classifies it with :func:`~selfroute.parse_structured_verdict`). Anything it cannot read safely --
``answerable`` not the first key, a value that is not a boolean, text before the object, a syntax
error -- makes it *hold*: it hands out nothing more, and the caller waits for the whole object.
"""

from __future__ import annotations

import json
import re
from enum import Enum

__all__ = ["JsonStringDecoder", "StreamStatus", "VerdictStream", "complete_object"]

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_SPECIAL = re.compile(r'["\\]')
_HEX = frozenset("0123456789abcdefABCDEF")
_SPACE = frozenset(" \t\r\n")
_LITERAL = re.compile(r"[A-Za-z0-9.+\-]*")


class JsonStringDecoder:
    """Decodes the body of one JSON string (after its opening quote) piece by piece.

    :meth:`feed` takes the next piece of raw JSON text and returns how much of it belongs to the
    string (the rest follows the closing quote) and the text decoded from it. A high surrogate
    escape is held until the next escape says whether it is half of a pair, so a pair split
    across pieces decodes to one character, as :func:`json.loads` reads it; a lone surrogate is
    kept as :func:`json.loads` keeps it.

    Attributes:
        done: The closing quote has been read.
        error: The text is not a valid JSON string (an unknown escape, a bad ``\\u`` digit).

    Examples:
        >>> d = JsonStringDecoder()
        >>> d.feed('caf\\\\u00')
        (7, 'caf')
        >>> d.feed('e9!" tail')
        (4, 'é!')
        >>> d.done
        True
    """

    def __init__(self) -> None:
        self.done = False
        self.error = False
        self._escape = False
        self._hex: str | None = None  # digits of a \\u escape being read
        self._high: str | None = None  # a high surrogate waiting for its low half

    def _flush_high(self, out: list[str]) -> None:
        if self._high is not None:
            out.append(self._high)
            self._high = None

    def _unicode(self, code: int, out: list[str]) -> None:
        if 0xDC00 <= code <= 0xDFFF and self._high is not None:
            high = ord(self._high) - 0xD800
            out.append(chr(0x10000 + (high << 10) + (code - 0xDC00)))
            self._high = None
            return
        self._flush_high(out)
        if 0xD800 <= code <= 0xDBFF:
            self._high = chr(code)
        else:
            out.append(chr(code))

    def _escaped(self, text: str, i: int, out: list[str]) -> int:
        """Read escape characters from ``text[i]``; return the index after what was read."""
        if self._hex is None:
            ch = text[i]
            self._escape = False
            if ch == "u":
                self._hex = ""
                return i + 1
            if ch not in _ESCAPES:
                self.error = True
                return i
            self._flush_high(out)
            out.append(_ESCAPES[ch])
            return i + 1
        take = text[i : i + 4 - len(self._hex)]
        if not all(c in _HEX for c in take):
            self.error = True
            return i
        self._hex += take
        i += len(take)
        if len(self._hex) == 4:
            code, self._hex = int(self._hex, 16), None
            self._unicode(code, out)
        return i

    def feed(self, text: str) -> tuple[int, str]:
        """Read ``text``; return ``(characters consumed, decoded text)``.

        Consumption stops after the closing quote (``done``) or at an error (``error``).
        """
        out: list[str] = []
        i, n = 0, len(text)
        while i < n and not self.done and not self.error:
            if self._escape or self._hex is not None:
                i = self._escaped(text, i, out)
                continue
            m = _SPECIAL.search(text, i)
            end = m.start() if m is not None else n
            if end > i:
                self._flush_high(out)
                out.append(text[i:end])
                i = end
            if m is None:
                break
            if text[i] == '"':
                self._flush_high(out)
                self.done = True
            else:
                self._escape = True
            i += 1
        return i, "".join(out)


class StreamStatus(str, Enum):
    """What a :class:`VerdictStream` knows so far."""

    PENDING = "pending"
    """``answerable`` has not arrived yet."""
    DECLINED = "declined"
    """``answerable`` is false: nothing of the object will be shown."""
    ANSWERING = "answering"
    """``answerable`` is true: the ``answer`` text is handed out as it arrives."""
    HELD = "held"
    """The object cannot be read safely as it streams: wait for all of it."""


class _At(str, Enum):
    """Where the reader is in the object."""

    START = "start"
    FENCE = "fence"
    KEY_OR_END = "key_or_end"
    KEY = "key"
    COLON = "colon"
    VALUE = "value"
    AFTER_VALUE = "after_value"
    END = "end"


class VerdictStream:
    """Previews a streamed ``{"answerable": ..., "answer": ...}`` object (see the module doc).

    Feed it the object's JSON text piece by piece; each :meth:`feed` returns the ``answer`` text
    decoded from that piece once ``answerable`` is known to be true (empty otherwise).

    Examples:
        >>> s = VerdictStream()
        >>> s.feed('{"answerable": tr'), s.status.value
        ('', 'pending')
        >>> s.feed('ue, "answer": "Par'), s.status.value
        ('Par', 'answering')
        >>> s.feed('is"}')
        'is'
        >>> VerdictStream().feed('{"answer": "Paris", "answerable": true}')  # reordered: held
        ''
    """

    def __init__(self) -> None:
        self.status = StreamStatus.PENDING
        self.answer_done = False
        self._at = _At.START
        self._fence_used = False
        self._keys: list[str] = []
        self._key: JsonStringDecoder | None = None
        self._key_text: list[str] = []
        self._literal: list[str] | None = None  # the answerable value being read
        self._string: JsonStringDecoder | None = None  # a string value (answer, or skipped)
        self._skip_depth = 0  # nesting of a skipped array/object value

    def _hold(self) -> None:
        self.status = StreamStatus.HELD

    @property
    def complete(self) -> bool:
        """Whether the object's closing brace has been read."""
        return self._at is _At.END

    @property
    def live(self) -> bool:
        """Whether more of the object is still being read (not held, not finished)."""
        return self.status is not StreamStatus.HELD and self._at is not _At.END

    def feed(self, text: str) -> str:
        """Read the next piece of the object's JSON text; return newly decoded answer text."""
        out: list[str] = []
        i, n = 0, len(text)
        while i < n and self.live:
            i = self._step(text, i, out)
        return "".join(out)

    # -- the reader ----------------------------------------------------------------------------
    def _step(self, text: str, i: int, out: list[str]) -> int:
        at = self._at
        if at is _At.KEY:
            return self._read_key(text, i)
        if at is _At.VALUE:
            return self._read_value(text, i, out)
        if at is _At.FENCE:  # ```json up to the end of its line
            end = text.find("\n", i)
            if end < 0:
                return len(text)
            self._at = _At.START
            return end + 1
        ch = text[i]
        if ch in _SPACE:
            return i + 1
        if at is _At.START:
            return self._start(ch, i)
        if at is _At.KEY_OR_END:
            if ch == '"':
                self._at, self._key, self._key_text = _At.KEY, JsonStringDecoder(), []
            elif ch == "}" and not self._keys:
                self._at = _At.END
            else:
                self._hold()
            return i + 1
        if at is _At.COLON:
            if ch == ":":
                self._at = _At.VALUE
            else:
                self._hold()
            return i + 1
        # AFTER_VALUE
        if ch == ",":
            self._at = _At.KEY_OR_END
        elif ch == "}":
            self._at = _At.END
        else:
            self._hold()
        return i + 1

    def _start(self, ch: str, i: int) -> int:
        if ch == "{":
            self._at = _At.KEY_OR_END
        elif ch == "`" and not self._fence_used:
            self._fence_used = True
            self._at = _At.FENCE
        else:
            self._hold()  # prose before the object
        return i + 1

    def _read_key(self, text: str, i: int) -> int:
        assert self._key is not None
        used, part = self._key.feed(text[i:])
        self._key_text.append(part)
        if self._key.error:
            self._hold()
        elif self._key.done:
            key = "".join(self._key_text)
            if key in self._keys or (not self._keys and key != "answerable"):
                self._hold()  # a repeated key, or answerable not first: the object decides
            self._keys.append(key)
            self._at = _At.COLON
        return i + used

    def _read_value(self, text: str, i: int, out: list[str]) -> int:
        key = self._keys[-1]
        if self._literal is None and self._string is None and self._skip_depth == 0:
            ch = text[i]
            if ch in _SPACE:
                return i + 1
            if key == "answerable":
                if ch == '"':  # "true" / "yes" as a string: read whole, judged like a literal
                    self._string = JsonStringDecoder()
                    self._literal = []
                    return i + 1
                self._literal = []
            elif key == "answer":
                if ch != '"':
                    self._hold()
                    return i
                self._string = JsonStringDecoder()
                self._literal = None
                return i + 1
            else:
                return self._skip(text, i)
        if key == "answerable":
            return self._read_answerable(text, i)
        if key == "answer":
            return self._read_answer(text, i, out)
        return self._skip(text, i)

    def _read_answerable(self, text: str, i: int) -> int:
        assert self._literal is not None
        if self._string is not None:
            used, part = self._string.feed(text[i:])
            self._literal.append(part)
            if self._string.error:
                self._hold()
            elif self._string.done:
                self._string = None
                self._decide("".join(self._literal))
            return i + used
        m = _LITERAL.match(text, i)
        assert m is not None
        self._literal.append(m.group(0))
        if m.end() < len(text):  # a delimiter ends the literal
            self._decide("".join(self._literal))
        return m.end()

    def _decide(self, value: str) -> None:
        self._literal = None
        low = value.strip().lower()
        if low in ("true", "yes", "1"):
            self.status = StreamStatus.ANSWERING
        elif low in ("false", "no", "0"):
            self.status = StreamStatus.DECLINED
        else:
            self._hold()  # null, a number, a word: the object decides (garbled)
        self._at = _At.AFTER_VALUE

    def _read_answer(self, text: str, i: int, out: list[str]) -> int:
        assert self._string is not None
        used, part = self._string.feed(text[i:])
        if self._string.error:
            self._hold()
            return i + used
        if self.status is StreamStatus.ANSWERING and part:
            out.append(part)
        if self._string.done:
            self._string = None
            self.answer_done = True
            self._at = _At.AFTER_VALUE
        return i + used

    def _skip(self, text: str, i: int) -> int:
        """Skip another key's value (``quotes``, or one a model added)."""
        if self._string is not None:
            used, _ = self._string.feed(text[i:])
            if self._string.error:
                self._hold()
            elif self._string.done:
                self._string = None
                if self._skip_depth == 0:
                    self._at = _At.AFTER_VALUE
            return i + used
        ch = text[i]
        if ch == '"':
            self._string = JsonStringDecoder()
        elif ch in "[{":
            self._skip_depth += 1
        elif ch in "]}":
            if self._skip_depth == 0:  # the object's own end after a scalar
                self._at = _At.AFTER_VALUE
                return i
            self._skip_depth -= 1
            if self._skip_depth == 0:
                self._at = _At.AFTER_VALUE
        elif ch == "," and self._skip_depth == 0:
            self._at = _At.AFTER_VALUE
            return i
        return i + 1


_FENCED = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


def complete_object(text: str) -> bool:
    """Whether ``text`` is one whole JSON object (optionally in a code fence), read strictly.

    Client libraries repair a cut-off object (``{"answerable": true, "answer": "Thirty`` parses
    as ``{"answerable": True, "answer": "Thirty"}`` in their partial-JSON parsers); the verdict
    must not: a cut-off answer is no answer.

    Examples:
        >>> complete_object('{"answerable": true, "answer": "4"}')
        True
        >>> complete_object('{"answerable": true, "answer": "Thirty')
        False
    """
    body = text.strip()
    fenced = _FENCED.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        value = json.loads(body, strict=False)  # raw control characters are a model's habit
    except ValueError:
        return False
    return isinstance(value, dict)
