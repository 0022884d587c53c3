"""The public surface of the three packages: exports, typing marker, import isolation."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import selfroute

ROOT = Path(__file__).resolve().parents[3]

# Adding or removing a public name is a deliberate API change: update this list with it.
PUBLIC = sorted(
    [
        "AsyncBatchBackend",
        "BatchBackend",
        "BatchCostReport",
        "BatchEvent",
        "BatchItem",
        "BatchJob",
        "BatchOutcome",
        "BatchPoll",
        "BatchReply",
        "BatchRequest",
        "BatchState",
        "GeminiBatchBackend",
        "JobStatus",
        "LocalBatchBackend",
        "OpenAIBatchBackend",
        "batch_cost_report",
        "BudgetDecision",
        "Chunk",
        "ConfigurationError",
        "ContextDocument",
        "ContextOverflowError",
        "DeclineDetector",
        "DeclinePattern",
        "ExtractiveReader",  # the keyless offline reader (issue 17)
        "DEFAULT_CHUNK_WORDS",
        "DEFAULT_LONG_CONTEXT_PROMPT",
        "DEFAULT_RAG_PROMPT",
        "DEFAULT_SENTINEL",
        "FittedContext",
        "FunctionHandler",
        "Generation",
        "HashingEmbedding",
        "HeuristicCounter",
        "InvalidInputError",
        "LexicalIndex",
        "LongContextBudget",
        "LongContextError",
        "MissingDependencyError",
        "ModelConfigurationError",
        "ModelOutputError",
        "OnError",
        "OverflowStrategy",
        "Passage",
        "PriceTable",
        "Prompts",
        "Reason",
        "RedactingFilter",
        "RetrievalError",
        "Route",
        "RouteConfig",
        "RouteResult",
        "RouteStats",
        "SelfRouteError",
        "Stage",
        "StepRecord",
        "TiktokenCounter",
        "TokenCounter",
        "Usage",
        "Verdict",
        "VerdictKind",
        "__version__",
        "aself_route",
        "chroma_embedding_function",
        "chunk_text",
        "default_token_counter",
        "document_id",
        "fit_context",
        "parse_verdict",
        "rebuild_document",
        "redact",
        "register_secret",
        "self_route",
        # routing policies beyond the paper (issue 9) and abstention/grounding (issue 10)
        "DEFAULT_GLOBAL_PATTERNS",
        "DEFAULT_STRUCTURED_RAG_PROMPT",
        "GROUNDING_PREFIX",
        "Abstention",
        "Citation",
        "Grounding",
        "GroundingSource",
        "PreRoute",
        "VerdictMode",
        "check_grounding",
        "is_global_question",
        "parse_structured_verdict",
        "verdict_schema",
    ]
)


# The step protocol, for whoever writes a driver or an adapter: ``selfroute.flow``, not the
# application's namespace.
FLOW = sorted(
    [
        "AsyncStepHandler",
        "FlowEvent",
        "Generate",
        "GenerationChunk",
        "LoadLongContext",
        "ResultEvent",
        "Retrieve",
        "RouteEvent",
        "SentinelSniffer",
        "Settle",
        "Speculate",
        "Step",
        "StepHandler",
        "StructuredRequest",
        "TokenEvent",
        "adrive",
        "arun_flow",
        "clean_answer",
        "could_start_decline",
        "drive",
        "load_structured",
        "run_flow",
        "self_route_flow",
        "structured_unsupported",
        "validate_question",
    ]
)


@pytest.mark.parametrize(("module", "expected"), [(selfroute, PUBLIC), (selfroute.flow, FLOW)])
def test_public_names_are_pinned(module: ModuleType, expected: list[str]) -> None:
    assert sorted(module.__all__) == expected
    assert len(set(module.__all__)) == len(module.__all__)


def test_the_two_namespaces_do_not_overlap() -> None:
    assert set(selfroute.__all__).isdisjoint(selfroute.flow.__all__)
    import selfroute.flow as flow_module  # the module, imported on its own

    assert flow_module is selfroute.flow


@pytest.mark.parametrize("module", [selfroute, selfroute.flow])
def test_every_public_name_resolves(module: ModuleType) -> None:
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert isinstance(selfroute.__version__, str)


def test_star_import_gives_exactly_the_public_names() -> None:
    for module in ("selfroute", "selfroute.flow"):
        namespace: dict[str, object] = {}
        exec(f"from {module} import *", namespace)
        names = {n for n in namespace if n != "__builtins__"}
        assert names == set(__import__(module, fromlist=["_"]).__all__), module


def test_every_error_derives_from_selfroute_error() -> None:
    errors = [
        getattr(selfroute, n)
        for n in selfroute.__all__
        if isinstance(getattr(selfroute, n), type) and issubclass(getattr(selfroute, n), Exception)
    ]
    assert len(errors) == 9  # the base and eight specific errors
    # a provider's rejection is both: the caller's to fix, and a failed model call (#16)
    assert issubclass(selfroute.ModelConfigurationError, selfroute.ConfigurationError)
    assert issubclass(selfroute.ModelConfigurationError, selfroute.ModelOutputError)
    for err in errors:
        assert issubclass(err, selfroute.SelfRouteError), err
    assert issubclass(selfroute.ConfigurationError, ValueError)
    assert issubclass(selfroute.InvalidInputError, ValueError)
    assert issubclass(selfroute.MissingDependencyError, ImportError)
    missing = selfroute.MissingDependencyError("chromadb", "chroma")
    # the hint is a line that works here: this test runs from a checkout (issue 17)
    assert f"pip install -e '{ROOT}[chroma]'" in str(missing) or (
        "pip install -e '.[chroma]'" in str(missing)
    )
    assert missing.extra == "chroma"


@pytest.mark.parametrize("package", ["selfroute", "langchain_selfroute", "llamaindex_selfroute"])
def test_py_typed_marker(package: str) -> None:
    assert (ROOT / package / "py.typed").is_file()


FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langchain_openai",
    "langchain_google_genai",
    "langchain_chroma",
    "llama_index",
    "chromadb",
    "openai",
    "google",
    "bm25s",
    "pypdf",
    "numpy",
)


def test_import_selfroute_imports_no_framework() -> None:
    code = (
        "import json, sys, selfroute; "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    loaded = set(json.loads(out.stdout))
    assert "selfroute" in loaded
    assert loaded.isdisjoint(FRAMEWORKS), sorted(loaded & set(FRAMEWORKS))


def test_core_flow_runs_without_any_framework_loaded() -> None:
    code = (
        "import json, sys, selfroute as sr\n"
        "r = sr.self_route('Who kept the lamp?', 'Mara Holt kept the lamp. ' * 50, "
        "lambda p: 'Mara Holt.')\n"
        "print(json.dumps([r.route.value, sorted({m.split('.')[0] for m in sys.modules})]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    route, loaded = json.loads(out.stdout)
    assert route == "rag"
    assert set(loaded).isdisjoint(FRAMEWORKS), sorted(set(loaded) & set(FRAMEWORKS))
