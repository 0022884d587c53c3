"""11. ``selfroute eval`` against its irreducible work.

With the oracle reader an eval run calls no model, so its time is the harness's own. The
irreducible work of ``--methods lc,rag,self-route --k 5`` over a SQuAD 2.0 haystack is: tokenise
the document once, retrieve the top 5 chunks of every question with BM25 and tokenise each RAG
prompt. This benchmark times that work (in a fresh interpreter, imports and process start left
out: the baseline is only the work) and then the whole ``python -m selfroute.eval`` command (a
fresh process: start-up, the run, the report files and the figures included), interleaved,
``repeats`` times each, and reports the medians' ratio (wall time, and CPU time, which a busy
shared machine inflates far less). Data: the first 8 SQuAD 2.0 dev articles under
``squad_v2/`` (the bundled 3-article sample when that is absent), every question.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._common import REPO_ROOT, BenchContext, BenchResult, Row, markdown_table
from benchmarks.bench_startup import timed_cpu

__all__ = ["baseline_work", "run"]

KEY, TITLE = "12", "selfroute eval (oracle reader) against its irreducible work"
TARGET = 3.0


def baseline_work(path: str, haystack: bool, limit: int | None) -> dict[str, float]:
    """Time the irreducible work: tokenise the document once, BM25 top 5, tokenise RAG prompts."""
    from selfroute._chunking import chunk_text
    from selfroute._prompts import Prompts
    from selfroute._simple import LexicalIndex
    from selfroute._tokens import default_token_counter
    from selfroute.eval._data import load_dataset, load_sample

    t0 = time.process_time(), time.perf_counter()
    items = load_dataset(Path(path), haystack=haystack) if path else load_sample()
    items = items[:limit] if limit else items
    counter, prompts = default_token_counter(), Prompts()
    enc = counter._enc  # type: ignore[attr-defined]  # tiktoken is vendored
    counter.count("warm")  # the encoding is loaded by the import in both runs
    t1 = time.process_time(), time.perf_counter()
    counted: dict[str, int] = {}
    indexes: dict[str, LexicalIndex] = {}
    tokens = 0
    for item in items:
        if item.doc_id not in counted:
            counted[item.doc_id] = len(enc.encode(item.document, disallowed_special=()))
            indexes[item.doc_id] = LexicalIndex(chunk_text(item.document, doc_id=item.doc_id))
        passages = indexes[item.doc_id].search(item.question, 5)
        prompt = prompts.rag_prompt(item.question, [p.text for p in passages])
        tokens += len(enc.encode(prompt, disallowed_special=()))
    t2 = time.process_time(), time.perf_counter()
    return {
        "cpu_s": t2[0] - t1[0],
        "wall_s": t2[1] - t1[1],
        "load_s": t1[1] - t0[1],
        "items": len(items),
        "tokens": tokens,
    }


def _baseline(path: str, haystack: bool, limit: int | None) -> dict[str, float]:
    code = (
        "import json, sys; from benchmarks.bench_eval import baseline_work; "
        "print(json.dumps(baseline_work(sys.argv[1], sys.argv[2] == '1', "
        "int(sys.argv[3]) or None)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, path, "1" if haystack else "0", str(limit or 0)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=900,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _eval_argv(path: str, out: Path, limit: int | None) -> list[str]:
    data = [path, "--haystack"] if path else ["--sample"]
    argv = [sys.executable, "-m", "selfroute.eval", *data, "--reader", "oracle"]
    argv += ["--methods", "lc,rag,self-route", "--k", "5", "--no-cache", "--no-progress"]
    argv += ["--out", str(out)]
    return argv + (["--limit", str(limit)] if limit else [])


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(ctx: BenchContext) -> BenchResult:
    """Run the benchmark."""
    squad = ctx.data / "squad_v2" / "articles_as_documents.jsonl"
    path = str(squad) if squad.is_file() else ""
    limit = 200 if ctx.quick else None
    repeats = 1 if ctx.quick else 3
    result = BenchResult(KEY, TITLE)
    base: list[dict[str, float]] = []
    walls: list[float] = []
    cpus: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        for i in range(repeats):
            ctx.log(f"  eval benchmark: repeat {i + 1}/{repeats}")
            base.append(_baseline(path, bool(path), limit))
            wall, cpu, _ = timed_cpu(_eval_argv(path, cwd / f"out{i}", limit), cwd)
            walls.append(wall)
            cpus.append(cpu)
        figures = sorted(p.name for p in (cwd / "out0").glob("*.png"))
    b_wall = _median([b["wall_s"] for b in base])
    b_cpu = _median([b["cpu_s"] for b in base])
    e_wall, e_cpu = _median(walls), _median(cpus)
    items = int(base[0]["items"])
    result.rows = [
        Row(
            f"eval wall time / irreducible work ({items} questions)",
            f"{b_wall:.2f} s",
            f"{e_wall:.2f} s",
            f"{e_wall / b_wall:.2f}",
            f"<= {TARGET:g}",
            e_wall / b_wall <= TARGET,
        ),
        Row(
            "eval CPU time / irreducible work's CPU time",
            f"{b_cpu:.2f} s",
            f"{e_cpu:.2f} s",
            f"{e_cpu / b_cpu:.2f}",
            f"<= {TARGET:g}",
            e_cpu / b_cpu <= TARGET,
        ),
    ]
    data = "first 8 SQuAD 2.0 dev articles as one haystack" if path else "the bundled sample"
    result.notes.append(
        f"Data: {data}, every question, `--methods lc,rag,self-route --k 5 --reader oracle "
        f"--no-cache`; medians of {repeats} interleaved runs. The eval column is the whole "
        f"command in a fresh process (start-up, report files and figures {figures} included); "
        "the baseline is only the work (tokenise the document once, BM25 top 5 per question, "
        "tokenise each RAG prompt), imports left out."
    )
    result.details.append(
        markdown_table(
            ["run", "baseline wall", "baseline CPU", "eval wall", "eval CPU"],
            [
                [i + 1, f"{b['wall_s']:.2f} s", f"{b['cpu_s']:.2f} s", f"{w:.2f} s", f"{c:.2f} s"]
                for i, (b, w, c) in enumerate(zip(base, walls, cpus, strict=True))
            ],
        )
    )
    return result
