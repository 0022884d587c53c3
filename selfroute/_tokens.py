"""Counting tokens before a call.

After a call, the provider's reported usage is authoritative. Before a call (to fit a document into
a window, or to price the always-long-context counterfactual) selfroute counts with ``tiktoken``,
loaded offline from the encodings that ``llama-index-core`` ships, and otherwise falls back to a
labelled characters-per-token heuristic. Counts carry a ``source`` so estimates stay labelled.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections import OrderedDict
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


class TiktokenCounter:
    """Exact counts for OpenAI encodings via ``tiktoken`` (an estimate for other providers)."""

    source = "tokenizer"

    def __init__(self, encoding: Any, name: str, *, cache_size: int = 256) -> None:
        self._enc = encoding
        self.name = f"tiktoken:{name}"
        # A document is counted on every call (to fit it, or to price always-LC): long texts are
        # counted once, remembered by a digest of their content (never the text itself, so a
        # 200 MB document is not kept alive by the cache), least recently used dropped first.
        self._cache_size = cache_size
        self._counts: OrderedDict[bytes, int] = OrderedDict()
        self._lock = threading.Lock()

    def _encode_len(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def count(self, text: str) -> int:
        if not text:
            return 0
        if len(text) < 2048:
            return self._encode_len(text)
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


_lock = threading.Lock()
_cache: dict[str, TokenCounter] = {}


def default_token_counter(encoding: str = "o200k_base") -> TokenCounter:
    """The counter used before calls: tiktoken ``encoding`` offline, else a heuristic.

    Looks for encodings in ``TIKTOKEN_CACHE_DIR`` if set, else in the cache ``llama-index-core``
    ships. Never downloads: if the encoding is not on disk, returns a :class:`HeuristicCounter`.

    Args:
        encoding: ``o200k_base`` (GPT-4o family) or ``cl100k_base``.
    """
    with _lock:
        if encoding in _cache:
            return _cache[encoding]
        counter: TokenCounter = HeuristicCounter()
        try:
            import tiktoken
        except ImportError:
            tiktoken = None  # type: ignore[assignment]
        if tiktoken is not None:
            previous = os.environ.get("TIKTOKEN_CACHE_DIR")
            cache_dir = previous or _llama_index_tiktoken_cache()
            if cache_dir and _on_disk(encoding, cache_dir):  # never let tiktoken download
                os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
                try:
                    counter = TiktokenCounter(tiktoken.get_encoding(encoding), encoding)
                except Exception:  # offline and not cached: fall back, labelled heuristic
                    counter = HeuristicCounter()
                finally:
                    if previous is None:
                        os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        _cache[encoding] = counter
        return counter
