"""A BM25 index over a collection's chunks, built with ``bm25s`` and persisted beside the store.

The index is saved in a folder named after a *fingerprint* of the committed documents, so a
reader can tell whether it is current without reading it: if the collection changed (a new or
removed document), the fingerprint differs and the index is rebuilt. Writes go to a temporary
folder that is renamed into place, so a crash never leaves a half-written index behind.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from selfroute._errors import MissingDependencyError

__all__ = ["BM25Index", "fingerprint"]

_IDS_FILE = "selfroute-ids.json"
_FORMAT = 1


def fingerprint(doc_ids: Iterable[str], *extra: object) -> str:
    """A short, order-independent hash of the committed document ids (and settings)."""
    h = hashlib.sha256()
    h.update(f"bm25-v{_FORMAT}".encode())
    for item in extra:
        h.update(f"|{item}".encode())
    for doc_id in sorted(doc_ids):
        h.update(b"\n" + doc_id.encode())
    return h.hexdigest()[:20]


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise MissingDependencyError("bm25s", "cli") from exc
    return bm25s


def _tokenizer() -> Any:
    from bm25s.tokenization import Tokenizer

    return Tokenizer(lower=True, stopwords="en")


class BM25Index:
    """Okapi BM25 over chunks (``bm25s``), mapping rows back to chunk ids.

    Build with :meth:`build`, persist with :meth:`save`, reopen with :meth:`load`.

    Attributes:
        ids: Chunk ids, one per indexed row.
        fingerprint: Fingerprint of the documents the index was built from.
    """

    def __init__(self, ids: Sequence[str], model: Any, tokenizer: Any, fingerprint: str) -> None:
        self.ids = list(ids)
        self.fingerprint = fingerprint
        self._model = model
        self._tokenizer = tokenizer

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], fingerprint: str = "") -> BM25Index:
        """Index ``texts`` (row ``i`` is chunk ``ids[i]``)."""
        if len(ids) != len(texts):
            raise ValueError("ids and texts must have the same length")
        bm25s = _bm25s()
        tokenizer = _tokenizer()
        if not texts:
            return cls([], None, tokenizer, fingerprint)
        tokens = tokenizer.tokenize(list(texts), return_as="tuple", show_progress=False)
        model = bm25s.BM25()
        model.index(tokens, show_progress=False)
        return cls(ids, model, tokenizer, fingerprint)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top ``k`` chunk ids with a positive BM25 score, best first."""
        if self._model is None or not self.ids or k < 1:
            return []
        token_ids = self._tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )[0]
        unknown = self._tokenizer.word_to_id.get("", None)
        if not [t for t in token_ids if t != unknown]:
            return []
        rows, scores = self._model.retrieve(
            [token_ids], k=min(k, len(self.ids)), show_progress=False, n_threads=1
        )
        hits = [
            (self.ids[int(row)], float(score))
            for row, score in zip(rows[0], scores[0], strict=False)
            if float(score) > 0.0
        ]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits

    # -- persistence -----------------------------------------------------------------------------
    def save(self, base: str | os.PathLike[str]) -> Path:
        """Save under ``base/<fingerprint>/`` atomically; remove older fingerprints.

        Returns:
            The folder written.
        """
        base_dir = Path(base)
        base_dir.mkdir(parents=True, exist_ok=True)
        target = base_dir / self.fingerprint
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{self.fingerprint}-", dir=base_dir))
        try:
            if self._model is not None:
                self._model.save(str(tmp))
                self._tokenizer.save_vocab(str(tmp))
                self._tokenizer.save_stopwords(str(tmp))
            (tmp / _IDS_FILE).write_text(
                json.dumps({"format": _FORMAT, "fingerprint": self.fingerprint, "ids": self.ids}),
                encoding="utf-8",
            )
            if target.exists():
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        for other in base_dir.iterdir():
            if other.name != self.fingerprint and other.is_dir():
                if other.name.startswith(".tmp-"):
                    continue  # another writer's work in progress
                shutil.rmtree(other, ignore_errors=True)
        return target

    @classmethod
    def load(cls, base: str | os.PathLike[str], fingerprint: str) -> BM25Index | None:
        """Open the index saved for ``fingerprint``, or ``None`` if there is none (or it is
        unreadable)."""
        folder = Path(base) / fingerprint
        meta_file = folder / _IDS_FILE
        if not meta_file.is_file():
            return None
        try:
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            if meta.get("format") != _FORMAT or meta.get("fingerprint") != fingerprint:
                return None
            ids = list(meta["ids"])
            tokenizer = _tokenizer()
            if not ids:
                return cls([], None, tokenizer, fingerprint)
            model = _bm25s().BM25.load(str(folder), mmap=False)
            tokenizer.load_vocab(str(folder))
            tokenizer.load_stopwords(str(folder))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(ids, model, tokenizer, fingerprint)

    @staticmethod
    def saved_fingerprints(base: str | os.PathLike[str]) -> list[str]:
        """Fingerprints of the indexes saved under ``base``."""
        base_dir = Path(base)
        if not base_dir.is_dir():
            return []
        return sorted(
            p.name for p in base_dir.iterdir() if p.is_dir() and (p / _IDS_FILE).is_file()
        )
