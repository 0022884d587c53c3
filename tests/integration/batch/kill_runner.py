"""A batch job in its own process, for the kill-and-resume tests.

``python -m tests.integration.batch.kill_runner --base-url URL --job FILE --out FILE
[--provider openai|gemini] [--count N] [--kill-at KIND:N] [--spans FILE]`` runs
:meth:`SelfRoute.batch_job` on the scripted workload and writes one JSON line per question; with
``--kill-at`` it SIGKILLs itself at the N-th progress event of that kind (right after the job file
was written for it); with ``--spans`` tracing is on and each span is appended to FILE as it ends
(one JSON line: name, ids, parent, question, ``selfroute.batch``, process id).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from typing import Any

from tests.integration.batch.corpus import comparable, inputs


def _span_file(path: str) -> Any:
    """A tracer provider appending each ended span to ``path`` at once (survives SIGKILL)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    class _Lines(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            with open(path, "a", encoding="utf-8") as fh:
                for s in spans:
                    row = {
                        "name": s.name,
                        "trace": s.context.trace_id,
                        "span": s.context.span_id,
                        "parent": s.parent.span_id if s.parent is not None else None,
                        "question": s.attributes.get("input.value"),
                        "batch": s.attributes.get("selfroute.batch"),
                        "pid": os.getpid(),
                    }
                    fh.write(json.dumps(row) + "\n")
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_Lines()))
    return provider


def _route(provider: str, base_url: str, tracing: Any = False) -> Any:
    from langchain_selfroute import SelfRoute

    if provider == "gemini":
        from langchain_google_genai import ChatGoogleGenerativeAI

        def make(model: str) -> Any:
            return ChatGoogleGenerativeAI(
                model=model, google_api_key="k", base_url=base_url, max_retries=1
            )

        llm, lc = make("gemini-2.5-flash"), make("gemini-2.5-pro")
    else:
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(model="gpt-4o-mini", api_key="k", base_url=base_url, max_retries=0)
        lc = ChatOpenAI(model="gpt-4o", api_key="k", base_url=base_url, max_retries=0)
    return SelfRoute(llm=llm, long_context_llm=lc, k=2, chunk_words=60, tracing=tracing)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--provider", default="openai")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--kill-at", default=None)
    parser.add_argument("--spans", default=None)
    args = parser.parse_args()
    kind, _, nth = (args.kill_at or "::").partition(":")
    seen = {"n": 0}

    def on_event(event: Any) -> None:
        if event.kind == kind:
            seen["n"] += 1
            if seen["n"] == int(nth):
                os.kill(os.getpid(), signal.SIGKILL)

    tracing = _span_file(args.spans) if args.spans else False
    job = _route(args.provider, args.base_url, tracing).batch_job(
        inputs(args.count), job_file=args.job, poll_interval_s=0.01, on_event=on_event
    )
    with open(args.out, "w", encoding="utf-8") as fh:
        for outcome in job.results():
            row = {"id": outcome.id, "error": outcome.error}
            row["result"] = comparable(outcome.result) if outcome.result else None
            fh.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
