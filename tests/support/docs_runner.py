"""Find and run every code block of README.md and docs/*.md, offline, as written.

Conventions (for everyone who writes docs):

* ```` ```python ```` blocks run, page by page, in order, in one namespace per page (like a
  notebook), in a sandbox folder laid out like a checkout (``docs/``, ``tests/fixtures/docs/``).
  Pages with their own runner (:data:`PAGE_RUNNERS`: their examples need names the page says the
  reader brings, or scripted models) are run by that test instead.
* ```` ```bash ```` / ```` ```sh ```` blocks run as one ``bash -e`` script in the sandbox (jobs
  a block starts in the background are killed when it ends).
  Install lines (``python3 -m venv``, ``. .venv/bin/activate``, ``pip install ...``) are not run
  (they need the registry): their extras are checked against pyproject.toml here, and
  ``tests/integration/test_fresh_install.py`` runs the installs in fresh virtual environments.
* ```` ```console ```` blocks are transcripts: each ``$ command`` runs and its output must match
  the block, after :func:`normalise` (timings, rates). ``python -m tests.support.docs_runner
  --write`` regenerates them; transcripts are never pasted by hand.
* Other languages (``text``, ``toml``, ...) are output, syntax or configuration: not run.
* Model calls go to loopback servers (:func:`sandbox_env`): ``OPENAI_BASE_URL`` /
  ``OPENAI_API_BASE`` (an OpenAI-compatible server) and ``GOOGLE_GEMINI_BASE_URL`` (Gemini), with
  dummy keys; both answer with selfroute's :class:`~selfroute.ExtractiveReader`. Only environment
  variables differ from what a reader types.
* A marker comment on the line right before a block changes that:
  ``<!-- run: skip REASON -->`` (not meant to run; the reason is required and shown) or
  ``<!-- run: copy-of PATH -->`` (the block is a verbatim copy of a block of PATH, which runs).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Pages whose examples another test runs, with names the page says the reader brings.
PAGE_RUNNERS = {
    "docs/langchain.md": "tests/integration/langchain_selfroute/test_docs.py",
    "docs/llamaindex.md": "tests/integration/llamaindex_selfroute/test_docs_examples.py",
    "docs/batch.md": "tests/integration/batch/test_docs_batch.py",  # needs the Batch API server
    "docs/tracing.md": "tests/integration/test_docs_tracing.py",  # needs an OTLP receiver
    "docs/serve.md": "tests/integration/serve/test_docs_serve.py",  # needs a running serve
}

_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_MARKER = re.compile(r"<!--\s*run:\s*(skip|copy-of)\b\s*(.*?)\s*-->\s*$")
_INSTALL = re.compile(
    r"^\s*(python3? -m venv\b|\. \S*activate\b|source \S*activate\b|pip install\b)"
)
_EXTRAS = re.compile(r"\[([\w,-]+)\]")

RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    lang: str
    code: str
    marker: str | None = None
    marker_arg: str = ""

    @property
    def kind(self) -> str:
        """``python``, ``bash``, ``console`` or ``other``."""
        if self.lang == "console":
            return "console"
        return RUNNABLE.get(self.lang, "other")

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages_with(kind: str) -> list[str]:
    """The pages that have at least one unmarked block of ``kind``."""
    return [p for p in pages() if any(b.kind == kind and b.marker is None for b in blocks(p))]


def pages() -> list[str]:
    """README.md and every page of docs/, relative to the repository."""
    return ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]


def blocks(page: str) -> list[Block]:
    """The fenced blocks of ``page``, with the marker comment right before each, if any."""
    text = (ROOT / page).read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        found.append(
            Block(
                page=page,
                line=text.count("\n", 0, match.start()) + 1,
                lang=match.group(1).lower(),
                code=match.group(2),
                marker=marker.group(1) if marker else None,
                marker_arg=marker.group(2) if marker else "",
            )
        )
    return found


def install_lines(code: str) -> tuple[list[str], list[str]]:
    """``(install lines, other lines)`` of a shell block (``&&`` chains are split)."""
    installs, rest = [], []
    for line in _logical_lines(code):
        for part in (p.strip() for p in line.split(" && ")):
            (installs if _INSTALL.match(part) else rest).append(part)
    return installs, [r for r in rest if r]


def _logical_lines(code: str) -> list[str]:
    """Lines with ``\\`` continuations joined; comments and blank lines dropped."""
    joined = code.replace("\\\n", " ")
    out = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            out.append(stripped)
    return out


def check_install_line(line: str, extras: set[str]) -> str | None:
    """Why an install line would not work from a checkout, or ``None``."""
    if not line.startswith("pip install"):
        return None
    words = shlex.split(line, comments=True)
    targets = [w for w in words[2:] if not w.startswith("-")]
    for target in targets:
        if target.startswith("selfroute["):
            return f"{line!r}: selfroute is installed from a checkout or a wheel, not by name"
        names = _EXTRAS.search(target)
        for extra in names.group(1).split(",") if names else []:
            if extra not in extras:
                return f"{line!r}: no extra {extra!r} in pyproject.toml"
    return None


# -- transcripts --------------------------------------------------------------------------------
_VOLATILE = [
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "N s"),  # durations
    (re.compile(r"\b[\d,]+(?:\.\d+)? (chunks|files|run|items)/s\b"), r"N \1/s"),  # rates
]


def normalise(text: str) -> str:
    """A transcript with what changes from run to run (timings, rates) replaced by ``N``."""
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def parse_transcript(code: str) -> list[tuple[str, str]]:
    """``[(command, output), ...]`` of a console block (``$ `` starts a command)."""
    steps: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return [(cmd, "\n".join(out).strip("\n")) for cmd, out in steps]


def run_shell(command: str, cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run one command line in bash; returns ``(status, output)`` (stdout and stderr
    interleaved, as a terminal shows them)."""
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    return done.returncode, done.stdout


def run_script(lines: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
    """Run a shell block's command lines as one ``bash -e`` script (background jobs it starts are
    killed at its end); returns ``(status, output)``."""
    script = "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\nset -e\n" + "\n".join(lines)
    return run_shell(script, cwd, env)


def run_transcript(code: str, cwd: Path, env: dict[str, str]) -> str:
    """The console block ``code`` with every command's output generated afresh."""
    env = dict(env)
    parts = []
    for command, _ in parse_transcript(code):
        if command.startswith("export "):
            name, _, value = command[len("export ") :].partition("=")
            env[name] = os.path.expandvars(value.strip("'\""))
            parts.append(f"$ {command}")
            continue
        _, output = run_shell(command, cwd, env)
        parts.append(f"$ {command}\n{output.rstrip()}" if output.strip() else f"$ {command}")
    return "\n\n".join(parts) + "\n"


# -- the sandbox --------------------------------------------------------------------------------
def make_sandbox(target: Path) -> Path:
    """A folder laid out like a checkout for the docs' commands: ``docs/`` (this repository's
    pages), ``tests/fixtures/docs/`` (the vendored sample documents), and ``qasper.jsonl`` /
    ``my-data.jsonl`` (stand-ins in LongBench's format, made from the bundled SQuAD sample:
    the docs' eval examples name such files)."""
    from selfroute.eval import load_sample

    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "docs", target / "docs", dirs_exist_ok=True)
    shutil.copytree(
        ROOT / "tests" / "fixtures" / "docs", target / "tests" / "fixtures" / "docs",
        dirs_exist_ok=True,
    )  # fmt: skip
    items = load_sample(haystack=False)
    rows = [
        {"_id": it.id, "dataset": "qasper", "input": it.question, "context": it.document,
         "answers": list(it.answers) or ["Unanswerable"]}
        for it in items[::6]
    ]  # fmt: skip
    for name in ("qasper.jsonl", "my-data.jsonl"):
        (target / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return target


def sandbox_env(home: Path, openai_url: str, gemini_url: str) -> dict[str, str]:
    """The environment of every docs command: this checkout's code, loopback model servers."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SELFROUTE_", "OPENAI_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HOME=str(home),
        ANONYMIZED_TELEMETRY="False",
        OPENAI_API_KEY="dummy-key",
        OPENAI_BASE_URL=openai_url,
        OPENAI_API_BASE=openai_url,
        GOOGLE_API_KEY="dummy-key",
        GOOGLE_GEMINI_BASE_URL=gemini_url,
        COLUMNS="100",
    )
    env.pop("GEMINI_API_KEY", None)
    return env


@contextlib.contextmanager
def loopback_models() -> Iterator[tuple[str, str]]:
    """``(openai_base_url, gemini_base_url)`` of loopback servers answering with the extractive
    reader (the same prompts, the same answers, tokens counted by the servers)."""
    from tests.support._loopback import extractive_responder
    from tests.support.gemini_server import ScriptedGeminiServer
    from tests.support.openai_server import ScriptedOpenAIServer

    respond = extractive_responder()
    with ScriptedOpenAIServer(respond) as openai, ScriptedGeminiServer(respond) as gemini:
        yield openai.base_url, gemini.base_url


def regenerate(check: bool) -> int:
    """Regenerate (or, with ``check``, compare) every console transcript of the docs."""
    import tempfile

    stale = []
    with tempfile.TemporaryDirectory() as tmp, loopback_models() as (openai_url, gemini_url):
        for page in pages():
            found = [b for b in blocks(page) if b.kind == "console" and b.marker is None]
            if not found:
                continue
            text = (ROOT / page).read_text(encoding="utf-8")
            for block in found:
                box = make_sandbox(Path(tmp) / f"{Path(page).stem}-{block.line}")
                fresh = run_transcript(block.code, box, sandbox_env(box, openai_url, gemini_url))
                if normalise(fresh) != normalise(block.code):
                    stale.append(block.where)
                    text = text.replace(block.code, fresh, 1)
            if not check:
                (ROOT / page).write_text(text, encoding="utf-8")
    for where in stale:
        print(f"{'stale' if check else 'regenerated'}: {where}")
    return 1 if (check and stale) else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.docs_runner --write|--check``."""
    parser = argparse.ArgumentParser(description="Regenerate the docs' console transcripts.")
    parser.add_argument("--check", action="store_true", help="only report stale transcripts")
    parser.add_argument("--write", action="store_true", help="rewrite stale transcripts")
    args = parser.parse_args(argv)
    return regenerate(check=not args.write)


if __name__ == "__main__":
    raise SystemExit(main())
