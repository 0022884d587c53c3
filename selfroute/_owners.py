"""Who owns a document id: the checks that keep one tenant's upload from replacing another's.

A shared vector store holds many owners' documents (a ``tenant`` metadata key, say). Document ids
are chosen by the caller, so two owners can pick the same one ("q3-report"). Replacing a document
by id must then never delete or overwrite a document that belongs to someone else. The adapters'
indexing helpers call :func:`owner_conflicts` before they replace anything:

* ``scope_keys=None`` (the owner keys are unknown): any difference in the document's metadata
  means the stored document may be someone else's, so the replacement is refused.
* ``scope_keys=("tenant",)``: documents are told apart by their id *and* these keys; only a
  difference in them is a conflict (a changed title is an ordinary update).
* ``scope_keys=()``: ids are global; replacing never conflicts.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from selfroute._errors import InvalidInputError

__all__ = ["owner_conflicts", "refuse_replacement", "scope_keys_of_filter", "scope_tag"]


def owner_conflicts(
    stored: Mapping[str, Any],
    new: Mapping[str, Any],
    scope_keys: Sequence[str] | None,
    *,
    ignore: Collection[str] = (),
) -> dict[str, tuple[Any, Any]]:
    """The metadata keys on which a stored document and its would-be replacement differ.

    Args:
        stored: Metadata of the document already in the store.
        new: Metadata of the document about to replace it.
        scope_keys: The owner keys (``None``: unknown, every key counts).
        ignore: Keys the indexing helper itself writes (chunk offsets, the id key).

    Returns:
        ``{key: (stored value, new value)}`` for every conflicting key (empty: no conflict).
    """
    keys: Iterable[str] = (set(stored) | set(new)) if scope_keys is None else scope_keys
    return {
        k: (stored.get(k), new.get(k))
        for k in sorted(keys)
        if k not in ignore and stored.get(k) != new.get(k)
    }


def refuse_replacement(
    doc_id: str, conflicts: Mapping[str, tuple[Any, Any]], *, where: str, hint: str
) -> InvalidInputError:
    """The error for a replacement that would delete another owner's document."""
    shown = ", ".join(f"{k}: {a!r} stored, {b!r} given" for k, (a, b) in conflicts.items())
    return InvalidInputError(
        f"{where} has the id {doc_id!r} of a stored document with other metadata ({shown}); "
        f"replacing it would delete that document. {hint}",
        doc_id=doc_id,
        conflicting_keys=sorted(conflicts),
    )


def scope_tag(metadata: Mapping[str, Any], scope_keys: Sequence[str]) -> str:
    """A short stable tag of the owner keys' values (part of a scoped chunk id)."""
    values = json.dumps([[k, metadata.get(k)] for k in scope_keys], sort_keys=True, default=str)
    return hashlib.sha256(values.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def scope_keys_of_filter(filter: object) -> tuple[str, ...] | None:
    """The keys a simple equality filter pins (``{"tenant": "acme"}`` -> ``("tenant",)``).

    Understands plain ``{key: value}`` / ``{key: {"$eq": value}}`` clauses and ``$and`` of them;
    anything else (``$or``, ``$in``, ranges) gives ``None``: the owner keys are unknown.
    """
    if not isinstance(filter, Mapping) or not filter:
        return None
    keys: list[str] = []
    for key, value in filter.items():
        if key == "$and" and isinstance(value, list):
            for clause in value:
                sub = scope_keys_of_filter(clause)
                if sub is None:
                    return None
                keys.extend(sub)
        elif str(key).startswith("$"):
            return None
        elif isinstance(value, Mapping):
            if set(value) != {"$eq"}:
                return None
            keys.append(str(key))
        else:
            keys.append(str(key))
    return tuple(dict.fromkeys(keys))
