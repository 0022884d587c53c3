"""Differential check for the decline detector: every verdict on every real output held.

Writes one JSON line per (output, variant): the full verdict (declined, kind, reason, answer) with
and without the question, strict and not, plus the streaming sniffer's hold/release decisions fed
in fixed-size chunks. Run it before and after a change to the detector; the files must be
byte-identical (``cmp``), and ``--digest`` prints one SHA-256 over the whole output.

Usage::

    python -m benchmarks.verdict_digest OUT.jsonl [--sniffer-limit N]
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

from selfroute._streaming import SentinelSniffer
from selfroute._verdict import parse_verdict

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path("/work/shared/data")


def _sources() -> list[Path]:
    patterns = [
        ROOT / "tests/fixtures/refusals/*.jsonl",
        ROOT / "tests/fixtures/refusals/second/*.jsonl",
        ROOT / "tests/fixtures/eval/*.jsonl",
        SHARED / "refusals/*.jsonl",
    ]
    return [Path(p) for pattern in patterns for p in sorted(glob.glob(str(pattern)))]


def _records() -> Iterator[tuple[str, int, str, str | None]]:
    for path in _sources():
        name = os.path.relpath(path, ROOT) if ROOT in path.parents else str(path)
        with path.open(encoding="utf-8") as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    continue
                rec = json.loads(line)
                text = rec.get("prediction")
                if not isinstance(text, str):
                    continue
                q = rec.get("question")
                yield name, i, text, q if isinstance(q, str) else None


def _sniff(text: str, *, strict: bool, hold: int, question: str | None, step: int) -> list[int]:
    """Per chunk, how many characters the sniffer released (the hold/release decisions)."""
    sniffer = SentinelSniffer(strict=strict, hold_chars=hold, question=question)
    return [len(sniffer.feed(text[i : i + step])) for i in range(0, len(text), step)]


def main() -> None:
    """Write the verdict table."""
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sniffer-limit", type=int, default=4000, help="outputs also streamed")
    args = ap.parse_args()
    digest = hashlib.sha256()
    n = 0
    with open(args.out, "w", encoding="utf-8") as out:
        for name, line, text, question in _records():
            row: dict[str, object] = {"file": name, "line": line}
            for strict in (False, True):
                for q in (None, question) if question else (None,):
                    v = parse_verdict(text, strict=strict, question=q)
                    row[f"v_strict={strict}_q={q is not None}"] = repr(v)
            if n < args.sniffer_limit:
                for hold in (0, 120):
                    row[f"sniff_hold={hold}"] = _sniff(
                        text, strict=False, hold=hold, question=question, step=7
                    )
            n += 1
            s = json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
            digest.update(s.encode())
            out.write(s)
    print(f"{n} outputs, sha256 {digest.hexdigest()}")


if __name__ == "__main__":
    main()
