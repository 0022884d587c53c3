"""Check that two ``selfroute eval`` output folders hold the same results, byte for byte.

Used to show that a change to the harness's speed changed none of its outputs: run the same
command with the old and the new code into two folders, then
``python -m benchmarks.eval_outputs_check OLD NEW``. ``results.jsonl`` and the figures must be
identical bytes; ``summary.json`` and ``report.md`` too once the run's wall time (and measured,
not simulated, call latencies) are blanked, since those measure the machine, not the results.
Exit status 0 when identical, 1 (naming the files) when not.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["compare", "main"]

_TIMED = ("wall_time_s", "latency_s", "mean_latency_s", "p50_latency_s", "p95_latency_s")


def _blank(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (None if k in _TIMED else _blank(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return value


def _normal(name: str, data: bytes, simulated: bool) -> bytes:
    if name == "summary.json":
        return json.dumps(_blank(json.loads(data)), sort_keys=True).encode()
    if name == "results.jsonl" and not simulated:
        rows = [_blank(json.loads(line)) for line in data.splitlines() if line.strip()]
        return "\n".join(json.dumps(r, sort_keys=True) for r in rows).encode()
    if name == "report.md":
        text = data.decode("utf-8")
        text = re.sub(r"\d+(\.\d+)? s\b", "<seconds>", text)  # latencies and wall time
        return text.encode("utf-8")
    return data


def compare(old: Path, new: Path) -> list[str]:
    """The files that differ between the folders ``old`` and ``new`` (empty: identical)."""
    names = sorted({p.name for p in old.iterdir()} | {p.name for p in new.iterdir()})
    summary = json.loads((old / "summary.json").read_text(encoding="utf-8"))
    simulated = bool(summary.get("latency_simulated"))
    differ = []
    for name in names:
        a, b = old / name, new / name
        if not (a.is_file() and b.is_file()):
            differ.append(f"{name} (only in one folder)")
        elif _normal(name, a.read_bytes(), simulated) != _normal(name, b.read_bytes(), simulated):
            differ.append(name)
    return differ


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    old, new = Path(args[0]), Path(args[1])
    differ = compare(old, new)
    files = sorted(p.name for p in old.iterdir())
    if differ:
        print(f"DIFFERENT: {', '.join(differ)}")
        return 1
    print(f"identical: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
