"""A BM25 index over a collection's chunks, searched with ``bm25s`` and persisted beside the store.

The index is saved in a folder named after a *fingerprint* of the committed documents, so a
reader can tell whether it is current without reading it: if the collection changed (a new or
removed document), the fingerprint differs. Writes go to a temporary folder that is renamed into
place, so a crash never leaves a half-written index behind.

Beside ``bm25s``'s score matrix the folder keeps every row's token ids (``selfroute-tokens.npz``).
:meth:`BM25Index.updated` then drops the rows of removed documents and tokenizes only the new
chunks; the score matrix (Okapi BM25, Lucene variant, ``k1=1.5``, ``b=0.75``: ``bm25s``'s
defaults, so scores match a from-scratch ``bm25s`` index) is recomputed from the token ids with a
few vectorized NumPy passes, without reading or tokenizing the unchanged chunks again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from selfroute._errors import MissingDependencyError
from selfroute.stores._ties import chunk_order, more_ties

__all__ = ["BM25Index", "TokenRows", "fingerprint"]

_IDS_FILE = "selfroute-ids.json"
_TOKENS_FILE = "selfroute-tokens.npz"
_FORMAT = 1
_K1, _B = 1.5, 0.75


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


def _flatten(rows: Sequence[Sequence[int]]) -> tuple[Any, Any]:
    import numpy as np

    lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.fromiter(
        (t for r in rows for t in r), dtype=np.int32, count=int(offsets[-1]) if len(rows) else 0
    )
    return flat, offsets


def _score_matrix(flat: Any, offsets: Any, n_vocab: int) -> dict[str, Any]:
    """``bm25s``'s CSC score matrix (token x document) from the rows' token ids."""
    import numpy as np

    n_docs = len(offsets) - 1
    lengths = np.diff(offsets)
    avg = float(lengths.mean()) if n_docs else 0.0
    rows = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    pairs, tf = np.unique(rows * n_vocab + flat.astype(np.int64), return_counts=True)
    doc = pairs // n_vocab
    token = pairs % n_vocab
    df = np.bincount(token, minlength=n_vocab)
    idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
    tf32 = tf.astype(np.float32)
    tfc = tf32 / (_K1 * ((1 - _B) + _B * lengths[doc] / avg) + tf32)
    scores = (idf[token] * tfc).astype(np.float32)
    order = np.argsort(token, kind="stable")  # documents stay in order within a token
    indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return {
        "data": scores[order],
        "indices": doc[order].astype(np.int32),
        "indptr": indptr,
        "num_docs": n_docs,
    }


def _model(flat: Any, offsets: Any, vocab: dict[str, int]) -> Any:
    """A ``bm25s.BM25`` over the rows, as ``BM25().index(...)`` would build it."""
    model = _bm25s().BM25()
    if "" not in vocab:
        vocab[""] = max(vocab.values(), default=-1) + 1
    model.scores = _score_matrix(flat, offsets, max(vocab.values()) + 1)
    model.vocab_dict = vocab
    model.unique_token_ids_set = set(vocab.values())
    model.nonoccurrence_array = None  # the Lucene variant has none
    return model


class TokenRows:
    """Chunk texts tokenized batch by batch as an ``index`` run writes them, so the run's BM25
    index is built without tokenizing (or reading back) every chunk at the end. Tokenizing in
    batches with one tokenizer gives the token ids one call over all the texts would."""

    def __init__(self) -> None:
        _bm25s()
        self.tokenizer = _tokenizer()
        self._ids: list[str] = []
        self._parts: list[tuple[Any, Any]] = []  # (flat token ids, row lengths) per batch

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Tokenize ``texts`` (the rows of chunks ``ids``)."""
        import numpy as np

        if len(ids) != len(texts):
            raise ValueError("ids and texts must have the same length")
        if not texts:
            return
        rows = self.tokenizer.tokenize(
            list(texts), update_vocab=True, return_as="ids", show_progress=False
        )
        flat, offsets = _flatten(rows)
        self._parts.append((flat, np.diff(offsets)))
        self._ids.extend(ids)

    def index(self, keep: Callable[[str], bool], fingerprint: str) -> BM25Index:
        """The index of the rows whose chunk id passes ``keep``."""
        import numpy as np

        if not self._parts:
            return BM25Index([], None, self.tokenizer, fingerprint)
        flat = np.concatenate([f for f, _ in self._parts])
        lengths = np.concatenate([n for _, n in self._parts])
        mask = np.fromiter((keep(i) for i in self._ids), dtype=bool, count=len(self._ids))
        ids = [i for i, m in zip(self._ids, mask.tolist(), strict=True) if m]
        if not ids:
            return BM25Index([], None, self.tokenizer, fingerprint)
        kept_flat = flat[np.repeat(mask, lengths)].astype(np.int32)
        kept_lengths = lengths[mask]
        offsets = np.zeros(len(kept_lengths) + 1, dtype=np.int64)
        np.cumsum(kept_lengths, out=offsets[1:])
        model = _model(kept_flat, offsets, self.tokenizer.word_to_id)
        return BM25Index(ids, model, self.tokenizer, fingerprint, (kept_flat, offsets))


class BM25Index:
    """Okapi BM25 over chunks (``bm25s``), mapping rows back to chunk ids.

    Build with :meth:`build`, persist with :meth:`save`, reopen with :meth:`load`.

    Attributes:
        ids: Chunk ids, one per indexed row.
        fingerprint: Fingerprint of the documents the index was built from.
    """

    def __init__(
        self,
        ids: Sequence[str],
        model: Any,
        tokenizer: Any,
        fingerprint: str,
        tokens: tuple[Any, Any] | None = None,
    ) -> None:
        self.ids = list(ids)
        self.fingerprint = fingerprint
        self._model = model
        self._tokenizer = tokenizer
        self._tokens = tokens

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def build(cls, ids: Sequence[str], texts: Sequence[str], fingerprint: str = "") -> BM25Index:
        """Index ``texts`` (row ``i`` is chunk ``ids[i]``)."""
        if len(ids) != len(texts):
            raise ValueError("ids and texts must have the same length")
        _bm25s()
        tokenizer = _tokenizer()
        if not texts:
            return cls([], None, tokenizer, fingerprint)
        rows = tokenizer.tokenize(list(texts), return_as="ids", show_progress=False)
        flat, offsets = _flatten(rows)
        model = _model(flat, offsets, tokenizer.word_to_id)
        return cls(ids, model, tokenizer, fingerprint, (flat, offsets))

    @property
    def can_update(self) -> bool:
        """Whether :meth:`updated` can work from this index (it has its rows' tokens)."""
        return self._tokens is not None or not self.ids

    def updated(
        self,
        keep: Callable[[str], bool],
        ids: Sequence[str],
        texts: Sequence[str],
        fingerprint: str,
    ) -> BM25Index:
        """A new index: the rows whose chunk id passes ``keep``, plus ``texts`` as ``ids``.

        Only ``texts`` are tokenized; the score matrix is recomputed from the stored token ids.

        Raises:
            ValueError: This index has no stored tokens (:attr:`can_update` is false).
        """
        import numpy as np

        if len(ids) != len(texts):
            raise ValueError("ids and texts must have the same length")
        if not self.ids:
            return BM25Index.build(ids, texts, fingerprint)
        if self._tokens is None:
            raise ValueError("this BM25 index has no stored tokens; rebuild it")
        flat, offsets = self._tokens
        mask = np.fromiter((keep(i) for i in self.ids), dtype=bool, count=len(self.ids))
        lengths = np.diff(offsets)
        kept_flat = flat[np.repeat(mask, lengths)]
        kept_lengths = lengths[mask]
        new_rows = (  # words the saved vocabulary lacks are added (not dropped as unknown)
            self._tokenizer.tokenize(
                list(texts), update_vocab=True, return_as="ids", show_progress=False
            )
            if texts
            else []
        )
        new_flat, new_offsets = _flatten(new_rows)
        all_lengths = np.concatenate([kept_lengths, np.diff(new_offsets)])
        all_offsets = np.zeros(len(all_lengths) + 1, dtype=np.int64)
        np.cumsum(all_lengths, out=all_offsets[1:])
        all_flat = np.concatenate([kept_flat, new_flat]).astype(np.int32)
        all_ids = [i for i, m in zip(self.ids, mask.tolist(), strict=True) if m] + list(ids)
        if not all_ids:
            return BM25Index([], None, self._tokenizer, fingerprint)
        model = _model(all_flat, all_offsets, self._tokenizer.word_to_id)
        return BM25Index(all_ids, model, self._tokenizer, fingerprint, (all_flat, all_offsets))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The top ``k`` chunk ids with a positive BM25 score, best first; equal scores in
        :func:`~selfroute.stores._ties.chunk_order`, whichever of them the cut keeps (it widens
        past a run of equal scores at the ``k``-th)."""
        if self._model is None or not self.ids or k < 1:
            return []
        token_ids = self._tokenizer.tokenize(
            [query], update_vocab=False, return_as="ids", show_progress=False
        )[0]
        unknown = self._tokenizer.word_to_id.get("", None)
        if not [t for t in token_ids if t != unknown]:
            return []
        total = len(self.ids)
        asked = min(k + max(k, 8), total)
        while True:
            rows, scores = self._model.retrieve(
                [token_ids], k=asked, show_progress=False, n_threads=0
            )
            got = [float(score) for score in scores[0]]
            hits = [
                (self.ids[int(row)], score)
                for row, score in zip(rows[0], got, strict=False)
                if score > 0.0
            ]
            hits.sort(key=lambda h: (-h[1], chunk_order(h[0])))
            worst = min(got) if got else 0.0
            if asked >= total or worst <= 0.0:
                return hits[:k]
            if not more_ties([s for _, s in hits], k, len(got), asked, worst):
                return hits[:k]
            asked = min(asked * 2, total)

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
            if self._tokens is not None:
                import numpy as np

                np.savez(tmp / _TOKENS_FILE, flat=self._tokens[0], offsets=self._tokens[1])
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
            tokens = None
            if (folder / _TOKENS_FILE).is_file():
                import numpy as np

                with np.load(folder / _TOKENS_FILE) as saved:
                    tokens = (saved["flat"], saved["offsets"])
                if len(tokens[1]) != len(ids) + 1:
                    tokens = None
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return cls(ids, model, tokenizer, fingerprint, tokens)

    @staticmethod
    def saved_fingerprints(base: str | os.PathLike[str]) -> list[str]:
        """Fingerprints of the indexes saved under ``base``."""
        base_dir = Path(base)
        if not base_dir.is_dir():
            return []
        return sorted(
            p.name for p in base_dir.iterdir() if p.is_dir() and (p / _IDS_FILE).is_file()
        )
