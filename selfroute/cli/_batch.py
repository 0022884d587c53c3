"""``selfroute ask --batch QUESTIONS.jsonl``: many questions through the provider's batch API.

The questions file holds one JSON object per line (``{"question": ..., "id": ...}``; ``id`` is
optional) or one JSON string per line. The job state lives next to it in
``QUESTIONS.jsonl.job.json``: run the same command again after an interruption and it resumes
(nothing finished is sent or paid for again). Progress (phases, polls) goes to stderr; the
answers (with ``--json``: one JSON object per question) and the cost table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from selfroute._batch import (
    BatchEvent,
    BatchJob,
    BatchOutcome,
    OpenAIBatchBackend,
    batch_cost_report,
)
from selfroute._batch._ledger import results_of
from selfroute._errors import ConfigurationError, InvalidInputError
from selfroute.cli._models import ModelSpec, credential
from selfroute.cli._output import printable

__all__ = [
    "CoreBatchRoute",
    "job_file_for",
    "openai_batch_backend",
    "read_questions",
    "run_ask_batch",
]


def openai_batch_backend(rag: ModelSpec, lc: ModelSpec, *, temperature: float) -> Any:
    """The OpenAI Batch API backend of ``ask --batch`` (an OpenAI-compatible server's with
    ``--base-url``), set as the LangChain adapter sets it for ``ChatOpenAI`` with the same model,
    server, key and temperature.

    Raises:
        MissingCredentialsError: No API key and no ``--base-url``.
    """
    # as ChatOpenAI: --base-url, else OPENAI_API_BASE (the SDK reads OPENAI_BASE_URL itself)
    base_url = rag.base_url or os.environ.get("OPENAI_API_BASE") or None
    return OpenAIBatchBackend(
        rag.name,
        long_context_model=lc.name,
        base_url=base_url,
        api_key=credential(rag, "--model"),
        options={"temperature": temperature},
    )


class CoreBatchRoute:
    """``ask``'s :class:`~selfroute.cli._route.CliRoute` as a batch job: the core's
    :class:`selfroute.BatchJob` with the same step handler (retrieval, long context) and settings.

    Args:
        route: The ``ask`` route (its ``config`` and ``handler``).
        backend: The provider's batch API.
    """

    def __init__(self, route: Any, backend: Any) -> None:
        self.route = route
        self.config = route.config
        self.backend = backend

    def batch_job(self, items: Any, **options: Any) -> BatchJob:
        """The job of ``items`` (``job_file``, ``on_event``: as :class:`selfroute.BatchJob`)."""
        return BatchJob(
            items, handler=self.route.handler, backend=self.backend, config=self.config, **options
        )


def job_file_for(questions: str | os.PathLike[str]) -> Path:
    """The job file of a questions file: ``QUESTIONS.jsonl.job.json`` beside it."""
    path = Path(questions)
    return path.with_name(path.name + ".job.json")


def read_questions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The questions of a JSONL file (objects with ``question`` and maybe ``id``, or strings).

    Raises:
        ConfigurationError: The file is missing or a line is not a question.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigurationError(f"--batch {p}: no such file")
    items: list[dict[str, Any]] = []
    for number, raw in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{p}:{number}: not JSON ({exc.msg})") from None
        if isinstance(value, str):
            value = {"question": value}
        if not isinstance(value, dict) or not isinstance(value.get("question"), str):
            raise ConfigurationError(
                f'{p}:{number}: each line must be {{"question": "...", "id": "..."}} or a JSON '
                "string"
            )
        item = {"question": value["question"], "id": str(value.get("id", f"{number}"))}
        items.append(item)
    if not items:
        raise InvalidInputError(f"{p} holds no questions")
    return items


class _Progress:
    """Phase and polling lines on stderr (a poll line only when the provider's state changes)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.last: dict[str | None, str] = {}

    def __call__(self, event: BatchEvent) -> None:
        if event.kind == "polled":
            state = event.poll.provider_state if event.poll is not None else ""
            if self.last.get(event.batch_id) == state:
                return
            self.last[event.batch_id] = state
            counts = ""
            if event.poll is not None and event.poll.total:
                counts = f" ({event.poll.completed or 0}/{event.poll.total} done)"
            line = f"phase {event.phase}: batch {event.batch_id} {state}{counts}"
        else:
            line = event.message
        print(f"[batch] {printable(line)}", file=self.out, flush=True)


def _line(outcome: BatchOutcome) -> str:
    """One question's printed line: its id (on one line) and answer with every terminal escape,
    control character and bidi override shown as text (:func:`~selfroute.cli._output.printable`)."""
    from selfroute.cli._output import format_answer

    qid = printable(outcome.id, one_line=True)
    if outcome.result is None:
        return f"[{qid}] error: {printable(str(outcome.error))}"
    r = outcome.result
    return f"[{qid}] {printable(format_answer(r))}  ({r.route.value}: {r.reason.value})"


def _budget_summary(outcomes: list[BatchOutcome]) -> None:
    """One stderr line when the long-context budget refused some questions' long-context call."""
    from selfroute.cli._output import budget_hint

    refused = [
        (o.id, hint) for o in outcomes if o.result is not None and (hint := budget_hint(o.result))
    ]
    if refused:
        ids = ", ".join(printable(i, one_line=True) for i, _ in refused[:5])
        ids += ", ..." if len(refused) > 5 else ""
        print(
            f"[batch] {len(refused)} of {len(outcomes)} questions over the long-context budget "
            f"({ids}): {refused[-1][1]}",
            file=sys.stderr,
        )


def run_ask_batch(args: argparse.Namespace, session: Any, out: TextIO | None = None) -> int:
    """Run (or resume) the batch job of ``args.batch`` with the session's Self-Route.

    Returns:
        0 when every question got an answer, 1 when some ended in an error.
    """
    if getattr(args, "stream", False):
        raise ConfigurationError("--batch answers once the batch is done: drop --stream")
    out = out if out is not None else sys.stdout
    items = read_questions(args.batch)
    job_file = job_file_for(args.batch)
    route = session.route
    job = route.batch_job(
        items,
        job_file=job_file,
        on_event=_Progress(sys.stderr),
        settings=getattr(session, "batch_settings", None) or None,
    )
    print(f"[batch] {len(items)} questions; job file {job_file}", file=sys.stderr, flush=True)
    for note in job.notes:
        print(f"[batch] note: {printable(note)}", file=sys.stderr)
    outcomes = job.results()
    for outcome in outcomes:
        if args.json:
            out.write(json.dumps(outcome.to_dict(), ensure_ascii=False, default=str) + "\n")
        else:
            out.write(_line(outcome) + "\n")
    prices = route.config.prices
    if prices is not None and not args.json:
        report = batch_cost_report(
            results_of(outcomes), prices, long_context_model=route.config.long_context_model
        )
        out.write("\n" + report.to_markdown() + "\n")
    _budget_summary(outcomes)
    failed = sum(1 for o in outcomes if not o.ok)
    if failed:
        print(f"[batch] {failed} of {len(outcomes)} questions failed", file=sys.stderr)
    return 1 if failed else 0
