"""Every Python example of ``docs/tracing.md`` runs as written, in order, like a notebook.

Nothing is substituted: the OTLP exporter reads its endpoint from
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as the page says, which points at a loopback OTLP/HTTP
receiver (:class:`~tests.support.otlp_collector.OTLPCollector`, standing in for Phoenix or
Langfuse); the real ``ChatOpenAI`` reaches the docs' loopback model server through
``OPENAI_BASE_URL``. The test then checks what the receiver got.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support import docs_runner as dr
from tests.support.otlp_collector import OTLPCollector

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

pytestmark = pytest.mark.integration

PAGE = "docs/tracing.md"


def test_tracing_page_runs_and_its_spans_reach_the_otlp_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = [b for b in dr.blocks(PAGE) if b.kind == "python" and b.marker is None]
    assert len(found) == 2
    with dr.loopback_models() as urls, OTLPCollector() as collector:
        box = dr.make_sandbox(tmp_path / "checkout")
        env = dr.sandbox_env(box, *urls)
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = collector.endpoint
        env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "Authorization=Basic cGs6c2s="  # Langfuse's
        monkeypatch.chdir(box)
        for key in [k for k in os.environ if k not in env]:
            monkeypatch.delenv(key)
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        namespace: dict[str, Any] = {"__name__": "__docs__"}
        out = io.StringIO()
        for block in found:
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile(block.code, block.where, "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{block.where} failed:\n{block.code}") from exc
        namespace["provider"].shutdown()
    printed = out.getvalue().splitlines()
    assert printed == [
        "rag The Zephyr charger needs 48 volts.",
        "['SelfRoute', 'selfroute.load_long_context', 'selfroute.rag', 'selfroute.retrieve']",
        "rag",
    ]

    roots = [s for s in collector.spans if s["name"] == "SelfRoute"]
    assert len(roots) == 1  # the in-memory example's spans stay in memory
    root = roots[0]
    assert root["resource"]["service.name"] == "manual-qa"
    assert root["resource"]["openinference.project.name"] == "manual-qa"
    assert root["headers"]["authorization"] == "Basic cGs6c2s="
    a = root["attributes"]
    assert a["openinference.span.kind"] == "CHAIN"
    assert a["input.value"] == "What voltage does the Zephyr charger need?"
    assert a["selfroute.route"] == "rag" and a["selfroute.token_ratio"] < 1
    names = sorted(s["name"] for s in collector.spans)
    assert names == sorted(
        ["SelfRoute", "selfroute.retrieve", "selfroute.rag", "selfroute.load_long_context"]
    )
    rag = next(s for s in collector.spans if s["name"] == "selfroute.rag")["attributes"]
    assert rag["openinference.span.kind"] == "LLM" and rag["llm.token_count.total"] > 0
    assert rag["llm.model_name"]
