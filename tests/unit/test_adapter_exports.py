"""The adapters' public surfaces are pinned, and a missing framework names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LANGCHAIN_EXPORTS = [
    "CHECKPOINT_TYPES",
    "DEFAULT_TOOL_DESCRIPTION",
    "QUESTION_KEYS",
    "TAG_LONG_CONTEXT",
    "TAG_NOSTREAM",
    "TAG_PARENTS",
    "TAG_RAG",
    "TAG_RETRIEVE",
    "ChromaParentLoader",
    "ExtractiveChatModel",
    "HashingEmbeddings",
    "HostedEmbeddings",
    "LangChainHandler",
    "LongContextPlan",
    "LongContextSource",
    "SelfRoute",
    "SelfRouteChunk",
    "SelfRouteInput",
    "SelfRouteInputDict",
    "SelfRouteOutput",
    "SelfRouteStoreRetriever",
    "SelfRouteToolInput",
    "StoreParentLoader",
    "chunk_documents",
    "create_selfroute_tool",
    "index_documents",
]

LLAMAINDEX_EXPORTS = [
    "RESULT_KEY",
    "RESULT_OBJECT_KEY",
    "CallableContext",
    "FixedContext",
    "HashingEmbedding",
    "HostedEmbedding",
    "LlamaIndexHandler",
    "LongContextSource",
    "ParentDocuments",
    "SelfRouteQueryEngine",
    "SelfRouteResultEvent",
    "SelfRouteRouteEvent",
    "SelfRouteStepEndEvent",
    "SelfRouteStepStartEvent",
    "SelfRouteStoreRetriever",
    "SelfRouteTool",
    "WordChunkNodeParser",
    "build_index",
    "create_selfroute_tool",
    "get_route_result",
    "load_index",
    "model_from_response",
    "node_to_passage",
    "usage_from_response",
]


@pytest.mark.parametrize(
    ("package", "expected"),
    [("langchain_selfroute", LANGCHAIN_EXPORTS), ("llamaindex_selfroute", LLAMAINDEX_EXPORTS)],
)
def test_exports_are_pinned(package: str, expected: list[str]) -> None:
    module = __import__(package)
    assert sorted(module.__all__) == sorted(expected)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert (ROOT / package / "py.typed").is_file()


@pytest.mark.parametrize(
    ("package", "blocked", "extra"),
    [
        ("langchain_selfroute", "langchain_core", "langchain"),
        ("llamaindex_selfroute", "llama_index.core", "llamaindex"),
    ],
)
def test_missing_framework_names_the_extra(package: str, blocked: str, extra: str) -> None:
    code = textwrap.dedent(
        f"""
        import sys
        for name in list(sys.modules):
            if name == {blocked!r} or name.startswith({blocked!r} + "."):
                del sys.modules[name]
        sys.modules[{blocked!r}] = None  # makes `import {blocked}` raise ImportError
        try:
            import {package}
        except ImportError as exc:
            print(type(exc).__name__, exc)
        else:
            print("imported")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert "MissingDependencyError" in out.stdout, out.stdout + out.stderr
    assert f"pip install -e '.[{extra}]'" in out.stdout  # run from the checkout (cwd=ROOT)
