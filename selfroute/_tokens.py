"""Counting tokens before a call.

After a call, the provider's reported usage is authoritative. Before a call (to fit a document into
a window, or to price the always-long-context counterfactual) selfroute counts with ``tiktoken``
(a declared dependency) and the ``o200k_base`` encoding that ships inside the package
(``selfroute/data``), so the count is the same on every install, online or not, whatever else is
installed. Other encodings are used when ``TIKTOKEN_CACHE_DIR`` (or llama-index-core's cache) holds
them; without ``tiktoken`` it falls back to a labelled characters-per-token heuristic. Counts carry
a ``source`` and every counter a ``name`` (``tiktoken:o200k_base``), so estimates stay labelled.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import os
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "HeuristicCounter",
    "TiktokenCounter",
    "TokenCounter",
    "default_token_counter",
]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts and cuts text in tokens."""

    #: ``tokenizer`` for a real tokenizer, ``heuristic`` for an estimate.
    source: str
    name: str

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...

    def head(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` with at most ``max_tokens`` tokens."""
        ...

    def tail(self, text: str, max_tokens: int) -> str:
        """The longest suffix of ``text`` with at most ``max_tokens`` tokens."""
        ...


class HeuristicCounter:
    """A rough estimate: one token per ``chars_per_token`` characters (4 by default)."""

    source = "heuristic"

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token
        self.name = f"heuristic:{chars_per_token:g}cpt"

    def count(self, text: str) -> int:
        if not text:
            return 0
        return max(1, round(len(text) / self.chars_per_token))

    def head(self, text: str, max_tokens: int) -> str:
        return text[: max(0, int(max_tokens * self.chars_per_token))]

    def tail(self, text: str, max_tokens: int) -> str:
        n = max(0, int(max_tokens * self.chars_per_token))
        return text[len(text) - n :] if n else ""


#: o200k_base's pre-tokeniser pattern, one alternative per line (tiktoken_ext.openai_public).
_O200K_PIECES = (
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
)

#: Where a text can be cut with its token count unchanged (``count(a + b) == count(a) +
#: count(b)``), for the split pattern below: (1) after a line break, before a character that is
#: not white space and not ``/``; (2) after ``.``, ``!`` or ``?``, before a space. Proof: tiktoken
#: never merges across its pre-tokeniser's pieces, and no piece of this pattern holds (1) a line
#: break followed by anything but white space or ``/`` (letters, digits and contractions never
#: hold one; punctuation runs may end in ``[\r\n/]*``; the rest is white space), nor (2) a
#: punctuation mark followed by a space (a punctuation run stops at white space; a leading mark
#: before letters needs a letter next). So the cut is a piece boundary in ``a + b``; the piece
#: holding ``a``'s last character ends there too (a greedy punctuation run, or a greedy run of
#: white space ending in a line break: neither can go on), no piece before it can reach the cut,
#: and there is no look-behind: ``b`` is split as on its own. ``tests/unit/selfroute/
#: test_tokens.py`` checks it against whole encodes.
_SAFE_CUT = re.compile(r"\n(?=[^\s/])|[.!?](?= )")
#: Split patterns (tiktoken's ``pat_str``) for which :data:`_SAFE_CUT` is proven and tested:
#: o200k_base's (other encodings are counted whole).
_CUTTABLE_PATTERNS = frozenset({"|".join(_O200K_PIECES)})
#: Bodies at least this long are counted by parts (:func:`count_in_prompt`): a document, or a
#: passage of a RAG prompt (prompts share them: other questions, other methods).
_BODY_FROM = 512
#: Bodies at least this long are also remembered by identity.
_SEGMENT_FROM = 16_384
#: The longest text remembered by identity (kept alive while among the last :data:`_RECENT`).
_REMEMBER_UP_TO = 4_000_000
#: How many long texts are remembered by identity.
_RECENT = 8
#: How far from its end a body's last safe cut is looked for (then the body is counted whole).
_TAIL_WINDOW = 65_536
#: Texts shorter than this are remembered by content (kept: at most ``cache_size`` of them).
_SHORT_UP_TO = 1024
#: Characters of short bodies (passages) whose cuts and inner count are remembered by content.
_BODIES_UP_TO = 4_000_000


#: How far after a body the next safe cut is looked for (its glue: a passage separator).
_GLUE_UP_TO = 16


def _unit_end(text: str, at: int, body: str) -> int | None:
    """Where the unit of ``body`` (at ``at`` in ``text``) ends: the first safe cut at or after
    the body's end, within :data:`_GLUE_UP_TO` characters (``None``: the body does not start at
    a safe cut, or none follows it closely)."""
    if at > 0:
        before = _SAFE_CUT.match(text, at - 1, at + 1)
        if before is None or before.end() != at:
            return None
    end = at + len(body)
    if end >= len(text):
        return len(text)
    after = _SAFE_CUT.search(text, end - 1, end + _GLUE_UP_TO)
    return None if after is None else after.end()


def _outer_cuts(body: str) -> tuple[int, int] | None:
    """The first and last safe cut of ``body`` (``None``: fewer than two, or none near the end)."""
    first = _SAFE_CUT.search(body)
    if first is None:
        return None
    for window in (2_048, 16_384, _TAIL_WINDOW):
        last = None
        for m in _SAFE_CUT.finditer(body, max(first.end(), len(body) - window)):
            last = m
        if last is not None:
            return (first.end(), last.end()) if last.end() > first.end() else None
    return None


class TiktokenCounter:
    """Exact counts for OpenAI encodings via ``tiktoken`` (an estimate for other providers)."""

    source = "tokenizer"

    def __init__(self, encoding: Any, name: str, *, cache_size: int = 4096) -> None:
        self._enc = encoding
        self.name = f"tiktoken:{name}"
        # A document is counted on every call (to fit it, or to price always-LC), and a prompt is
        # a document plus a few new lines: count_located counts a prompt as its document (or
        # passages) plus the rest, cut where counts add up exactly (_SAFE_CUT). Counts are
        # remembered by a digest of the content (never the text itself, so a 200 MB document is
        # not kept alive by the cache), least recently used dropped first. The last few long
        # texts counted are also remembered by identity (a prompt is counted where it is sent and where its usage is reported; a document where it
        # is fitted and where it is priced), which costs no hashing.
        self._cache_size = cache_size
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self._cuttable = getattr(encoding, "_pat_str", None) in _CUTTABLE_PATTERNS
        self._recent: OrderedDict[int, tuple[str, int]] = OrderedDict()
        self._recent_short: OrderedDict[int, tuple[str, int]] = OrderedDict()
        self._inners: OrderedDict[int, tuple[str, int]] = OrderedDict()
        # passages (bodies under _SEGMENT_FROM) by content: a prompt's passages are new string
        # objects each time (split from it), and its hash costs less than a digest or a search
        self._bodies: dict[str, tuple[int, int, int] | None] = {}
        self._bodies_chars = 0
        self._units: dict[tuple[str, str], int] = {}
        self._short: dict[str, int] = {}
        self._units_chars = 0
        self._long_units: OrderedDict[int, tuple[str, str, int]] = OrderedDict()

    def _encode_len(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def _cached(self, text: str) -> int:
        """``text``'s count, from the digest cache or encoded (and remembered)."""
        if len(text) < _SHORT_UP_TO:  # a prompt's own lines: by content (str hash, no digest)
            found = self._short.get(text)
            if found is None:
                found = self._encode_len(text)
                with self._lock:
                    self._short[text] = found
                    if len(self._short) > self._cache_size:
                        del self._short[next(iter(self._short))]
            return found
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20).digest()
        with self._lock:
            if key in self._counts:
                self._counts.move_to_end(key)
                return self._counts[key]
        tokens = self._encode_len(text)
        with self._lock:
            self._counts[key] = tokens
            while len(self._counts) > self._cache_size:
                self._counts.popitem(last=False)
        return tokens

    def remembered(self, text: str) -> int | None:
        """``text``'s count if this very object was counted lately (no hashing at all), else
        ``None``."""
        pool = self._recent if len(text) >= _SEGMENT_FROM else self._recent_short
        hit = pool.get(id(text))
        if hit is not None and hit[0] is text:
            with self._lock:  # least recently used first out: a document counted on every call
                if id(text) in pool:  # stays, however many prompts are counted in between
                    pool.move_to_end(id(text))
            return hit[1]
        return None

    def remember(self, text: str, tokens: int) -> None:
        """Remember ``text``'s count by identity (long texts only; see :meth:`remembered`).
        Documents and long-context prompts, and shorter prompts, have a memory each: the RAG
        prompts of a run do not push its document out."""
        if len(text) <= _REMEMBER_UP_TO:
            pool = self._recent if len(text) >= _SEGMENT_FROM else self._recent_short
            with self._lock:
                pool[id(text)] = (text, tokens)
                pool.move_to_end(id(text))
                while len(pool) > _RECENT:
                    pool.popitem(last=False)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) < 2048:
            return self._cached(text)  # encodes below 256 characters, else by digest
        hit = self.remembered(text)
        if hit is not None:
            return hit
        tokens = self._cached(text)
        self.remember(text, tokens)
        return tokens

    @property
    def cuttable(self) -> bool:
        """Whether texts can be counted by parts (the encoding's split pattern is one whose safe
        cuts are proven, :data:`_SAFE_CUT`)."""
        return self._cuttable

    def _inner(self, body: str, first: int, last: int) -> int:
        """The count of ``body[first:last]``, remembered under ``body`` itself and by digest."""
        hit = self._inners.get(id(body))
        if hit is not None and hit[0] is body:
            with self._lock:
                if id(body) in self._inners:
                    self._inners.move_to_end(id(body))
            return hit[1]
        inner = self._cached(body[first:last])
        if len(body) >= _SEGMENT_FROM:  # long bodies: remembered by identity (no hashing)
            with self._lock:
                self._inners[id(body)] = (body, inner)
                while len(self._inners) > _RECENT:
                    self._inners.popitem(last=False)
        return inner

    def _passage(self, body: str) -> tuple[int, int, int] | None:
        """A short body's outer safe cuts and the count between them (``None``: no two cuts),
        remembered by content (a bounded number of characters, oldest dropped first)."""
        try:
            return self._bodies[body]
        except KeyError:
            pass
        cuts = _outer_cuts(body)
        parts = None if cuts is None else (*cuts, self._cached(body[cuts[0] : cuts[1]]))
        with self._lock:
            self._bodies[body] = parts
            self._bodies_chars += len(body)
            while self._bodies_chars > _BODIES_UP_TO:
                self._bodies_chars -= len(next(iter(self._bodies)))
                del self._bodies[next(iter(self._bodies))]
        return parts

    def _unit(self, body: str, glue: str) -> int:
        """The count of ``body + glue`` (a body standing between two safe cuts of its prompt),
        remembered by content for short bodies, by identity for long ones."""
        if len(body) >= _SEGMENT_FROM:
            hit = self._long_units.get(id(body))
            if hit is not None and hit[0] is body and hit[1] == glue:
                with self._lock:
                    if id(body) in self._long_units:
                        self._long_units.move_to_end(id(body))
                return hit[2]
            tokens = self._cached(body + glue)
            with self._lock:
                self._long_units[id(body)] = (body, glue, tokens)
                self._long_units.move_to_end(id(body))
                while len(self._long_units) > _RECENT:
                    self._long_units.popitem(last=False)
            return tokens
        key = (body, glue)
        found = self._units.get(key)
        if found is not None:
            return found
        tokens = self._cached(body + glue)
        with self._lock:
            self._units[key] = tokens
            self._units_chars += len(body)
            while self._units_chars > _BODIES_UP_TO:
                oldest = next(iter(self._units))
                self._units_chars -= len(oldest[0])
                del self._units[oldest]
        return tokens

    def count_located(self, text: str, located: Sequence[tuple[int, str]]) -> int:
        """Tokens in ``text``, exactly, where ``located`` gives ``(offset, body)`` of texts it
        holds (in order, not overlapping). A body that starts at a safe cut of ``text``
        (:data:`_SAFE_CUT`) and is followed by one within a few characters (a passage between
        line breaks) is counted with those few characters as one unit, once per content; any
        other body, between its own first and last safe cut, once per content. Only the text
        around them (and such a body's first and last sentence) is encoded again."""
        if not self._cuttable:
            return self.count(text)
        total, pos = 0, 0
        for at, body in located:
            stop = _unit_end(text, at, body) if at >= pos else None
            if stop is not None:
                total += self.count(text[pos:at]) + self._unit(body, text[at + len(body) : stop])
                pos = stop
                continue
            if len(body) < _SEGMENT_FROM:
                parts = self._passage(body)
                if parts is None or at < pos:
                    continue  # counted with the text around it
                first, last, inner = parts
            else:
                cuts = _outer_cuts(body)
                if cuts is None or at < pos:
                    continue
                first, last = cuts
                inner = self._inner(body, first, last)
            total += self.count(text[pos : at + first]) + inner
            pos = at + last
        return total + self.count(text[pos:])

    def count_parts(self, prefix: str, body: str, suffix: str) -> int:
        """Tokens in ``prefix + body + suffix``, exactly, with ``body`` tokenised once per
        content (see :meth:`count_located`)."""
        return self.count_located(prefix + body + suffix, [(len(prefix), body)])

    def head(self, text: str, max_tokens: int) -> str:
        toks = self._enc.encode(text, disallowed_special=())
        if len(toks) <= max_tokens:
            return text
        return str(self._enc.decode(toks[: max(0, max_tokens)]))

    def tail(self, text: str, max_tokens: int) -> str:
        toks = self._enc.encode(text, disallowed_special=())
        if len(toks) <= max_tokens:
            return text
        return (
            str(self._enc.decode(toks[len(toks) - max(0, max_tokens) :])) if max_tokens > 0 else ""
        )


def _llama_index_tiktoken_cache() -> str | None:
    """Find llama-index-core's bundled tiktoken cache without importing llama_index."""
    for entry in sys.path:
        candidate = Path(entry or ".") / "llama_index" / "core" / "_static" / "tiktoken_cache"
        if candidate.is_dir():
            return str(candidate)
    return None


_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


def _on_disk(encoding: str, cache_dir: str) -> bool:
    """Whether tiktoken's cache in ``cache_dir`` holds ``encoding`` (named as tiktoken names it)."""
    key = hashlib.sha1(_BLOB_URL.format(encoding).encode(), usedforsecurity=False).hexdigest()
    return os.path.isfile(os.path.join(cache_dir, key))


_DATA = Path(__file__).resolve().parent / "data"

#: The encodings shipped in ``selfroute/data``: the split pattern, special tokens and the SHA-256
#: of the rank file, as tiktoken's own ``tiktoken_ext.openai_public`` defines them.
_BUNDLED: dict[str, dict[str, Any]] = {
    "o200k_base": {
        "pat_str": "|".join(_O200K_PIECES),
        "special_tokens": {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
        "sha256": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        # the file with this hash lists its tokens by rank, 0, 1, 2, ... (tests/unit/selfroute/
        # test_tokens.py parses the rank column to check): the ranks need not be parsed
        "ranks_in_order": True,
    }
}


def _bundled_encoding(tiktoken: Any, encoding: str) -> Any:
    """``encoding`` built from the rank file shipped in ``selfroute/data`` (checked by hash)."""
    spec = _BUNDLED[encoding]
    raw = gzip.decompress((_DATA / f"{encoding}.tiktoken.gz").read_bytes())
    if hashlib.sha256(raw).hexdigest() != spec["sha256"]:
        raise ValueError(f"selfroute/data/{encoding}.tiktoken.gz is damaged (hash mismatch)")
    # "TOKEN_BASE64 RANK" per line; split and decoded in bulk (3-4x faster than a loop of
    # base64.b64decode: this load is most of a command-line ask's counting cost)
    fields = raw.split()
    if len(fields) % 2:
        raise ValueError(f"selfroute/data/{encoding}.tiktoken.gz is damaged (odd field count)")
    tokens = map(binascii.a2b_base64, fields[0::2])
    if spec.get("ranks_in_order"):
        ranks = dict(zip(tokens, range(len(fields) // 2), strict=True))
    else:  # pragma: no cover - every bundled file lists its ranks in order
        ranks = dict(zip(tokens, map(int, fields[1::2]), strict=True))
    return tiktoken.Encoding(
        name=encoding,
        pat_str=spec["pat_str"],
        mergeable_ranks=ranks,
        special_tokens=dict(spec["special_tokens"]),
    )


def _cached_encoding(tiktoken: Any, encoding: str) -> Any | None:
    """``encoding`` from tiktoken's on-disk cache, never downloading it."""
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    cache_dir = previous or _llama_index_tiktoken_cache()
    if not cache_dir or not _on_disk(encoding, cache_dir):
        return None
    os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
    try:
        return tiktoken.get_encoding(encoding)
    except Exception:  # a damaged cache: fall back, labelled heuristic
        return None
    finally:
        if previous is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)


_lock = threading.Lock()
_cache: dict[str, TokenCounter] = {}


def default_token_counter(encoding: str = "o200k_base") -> TokenCounter:
    """The counter used before calls: tiktoken ``encoding``, offline; else a heuristic.

    ``o200k_base`` (the default, GPT-4o family) is built from the copy shipped in the package,
    so every install counts the same. Another encoding (``cl100k_base``) is read from
    ``TIKTOKEN_CACHE_DIR`` if set, else from the cache ``llama-index-core`` ships. Never
    downloads: an encoding that is not on disk gives a :class:`HeuristicCounter` (its ``name``
    says so).

    Args:
        encoding: ``o200k_base`` or another tiktoken encoding name.
    """
    found = _cache.get(encoding)  # built once: no lock to read it
    if found is not None:
        return found
    with _lock:
        if encoding in _cache:
            return _cache[encoding]
        counter: TokenCounter = HeuristicCounter()
        try:
            import tiktoken
        except ImportError:
            tiktoken = None  # type: ignore[assignment]
        if tiktoken is not None:
            if encoding in _BUNDLED:
                enc = _bundled_encoding(tiktoken, encoding)
            else:
                enc = _cached_encoding(tiktoken, encoding)
            if enc is not None:
                counter = TiktokenCounter(enc, encoding)
        _cache[encoding] = counter
        return counter


def count_in_prompt(counter: TokenCounter, prompt: str, *bodies: str) -> int:
    """Tokens in ``prompt``, which holds ``bodies`` (its document, or its passages) in order:
    exactly ``counter.count(prompt)``. With a tiktoken counter each body is tokenised once per
    content (:meth:`TiktokenCounter.count_located`), so a prompt over a known document or known
    passages costs its own few lines."""
    if not isinstance(counter, TiktokenCounter) or not counter.cuttable:
        return counter.count(prompt)
    hit = counter.remembered(prompt)
    if hit is not None:  # the same prompt, counted where it was sent
        return hit
    located: list[tuple[int, str]] = []
    pos = 0
    for body in bodies:
        if len(body) < _BODY_FROM:
            continue
        at = prompt.find(body[:64], pos)
        while at >= 0 and not prompt.startswith(body, at):
            at = prompt.find(body[:64], at + 1)
        if at < 0:
            continue
        located.append((at, body))
        pos = at + len(body)
    tokens = counter.count_located(prompt, located)
    counter.remember(prompt, tokens)
    return tokens
