"""Each extra alone, installed into a fresh virtual environment, runs its quickstart.

``cli`` is installed from a wheel built from this checkout, ``langchain`` as an editable install
of the checkout and ``llamaindex`` as a regular install of it: the three ways docs/index.md lists.
Each quickstart runs in its own environment, without this checkout on ``sys.path`` (except the
editable one, whose point it is), and prints the always-LC input tokens of the bundled eval sample:
the same number in every environment, whatever else is installed.

Needs the package registry (CI has it; pip's cache makes reruns quick) and takes minutes: it is
skipped, with the reason, when the registry cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support._loopback import extractive_responder
from tests.support.openai_server import ScriptedOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.install]

ROOT = Path(__file__).resolve().parents[2]
#: The LC row of the bundled sample's report (docs/eval.md), with tiktoken's o200k_base.
SAMPLE_LC_TOKENS = 1_708_359
QUESTION = "Who proclaimed the oil embargo in October 1973?"

COUNT_SAMPLE = """
from selfroute.eval import OracleReader, evaluate, load_sample
summary = evaluate(load_sample(), reader=OracleReader(), ks=[5], methods=["lc"], cache=False)
print("LC_TOKENS", summary.row("lc").input_tokens, summary.token_counter)
"""

QUICKSTARTS = {
    "langchain": """
from langchain_selfroute import ExtractiveChatModel, HashingEmbeddings, SelfRoute
text = open(DOC, encoding="utf-8").read()
route = SelfRoute.from_texts([text], llm=ExtractiveChatModel(), embedding=HashingEmbeddings())
result = route.invoke(QUESTION)
print("ROUTE", result.route.value, result.reason.value)
""",
    "llamaindex": """
import os
from llama_index.core import Document, VectorStoreIndex
from llama_index.llms.openai_like import OpenAILike
from llamaindex_selfroute import HashingEmbedding, SelfRouteQueryEngine
text = open(DOC, encoding="utf-8").read()
index = VectorStoreIndex.from_documents([Document(text=text)], embed_model=HashingEmbedding())
llm = OpenAILike(model="qwen2.5-7b-instruct", api_base=os.environ["OPENAI_API_BASE"],
                 api_key="not-needed", is_chat_model=True, context_window=32768)
response = SelfRouteQueryEngine.from_index(index, llm=llm).query(QUESTION)
print("ROUTE", response.metadata["selfroute"]["route"], response.metadata["selfroute"]["reason"])
""",
}


_NETWORK_ERRORS = (
    "NewConnectionError",
    "ConnectTimeout",
    "ConnectionError",
    "Failed to establish",
    "Temporary failure in name resolution",
    "ProxyError",
    "Max retries exceeded",
)


def _registry_reachable(tmp: Path) -> str | None:
    """``None`` when pip's index answers (asked for a package that does not exist), else why
    not."""
    probe = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--timeout", "15",
         "--retries", "0", "-d", str(tmp), "selfroute-registry-probe-no-such-package"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    text = probe.stdout + probe.stderr
    errors = [e for e in _NETWORK_ERRORS if e in text]
    if errors or "No matching distribution" not in text:
        return f"the package registry is unreachable ({', '.join(errors) or text.strip()[-200:]})"
    return None


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> None:
    reason = _registry_reachable(tmp_path_factory.mktemp("probe"))
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def model_server() -> Iterator[str]:
    with ScriptedOpenAIServer(extractive_responder()) as server:
        yield server.base_url


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: int = 1800) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(argv)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _env(home: Path, server: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "VIRTUAL_ENV", "OPENAI_", "SELFROUTE_"))
    }
    env.update(
        HOME=os.environ.get("HOME", str(home)),  # pip's cache
        ANONYMIZED_TELEMETRY="False",
        OPENAI_API_BASE=server,
        OPENAI_BASE_URL=server,
        OPENAI_API_KEY="dummy-key",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


EXTRAS = ("cli", "langchain", "llamaindex")


@pytest.fixture(scope="module")
def venvs(
    registry: None, model_server: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    """``{extra: python}``: one fresh environment per extra, installed concurrently (pip spends
    most of its time waiting on downloads and unpacking)."""
    from concurrent.futures import ThreadPoolExecutor

    root = tmp_path_factory.mktemp("fresh")

    def install(extra: str) -> Path:
        tmp = root / extra
        tmp.mkdir()
        env = _env(tmp, model_server)
        python = _venv(tmp / "venv")
        # --no-compile: the quickstart compiles what it imports; the rest stays as installed
        _run([str(python), "-m", "pip", "install", "-q", "--prefer-binary", "--no-compile",
              *_install_target(extra, tmp, env)], tmp, env)  # fmt: skip
        return python

    with ThreadPoolExecutor(max_workers=len(EXTRAS)) as pool:
        return dict(zip(EXTRAS, pool.map(install, EXTRAS), strict=True))


def _install_target(extra: str, tmp: Path, env: dict[str, str]) -> list[str]:
    if extra == "cli":  # a wheel built from the checkout
        dist = tmp / "dist"
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)],
             tmp, env)  # fmt: skip
        (wheel,) = dist.glob("selfroute-*.whl")
        return [f"{wheel}[cli]"]
    if extra == "langchain":  # editable, as the README does
        return ["-e", f"{ROOT}[langchain]"]
    return [f"{ROOT}[llamaindex]"]  # a regular install of the checkout


@pytest.mark.timeout(2400)  # the first test waits for the installs: minutes, less with a cache
@pytest.mark.parametrize("extra", EXTRAS)
def test_each_extra_alone_runs_its_quickstart(
    extra: str, tmp_path: Path, venvs: dict[str, Path], model_server: str
) -> None:
    env = _env(tmp_path, model_server)
    python = venvs[extra]
    doc = ROOT / "tests" / "fixtures" / "docs" / "1973_oil_crisis.html"
    if extra == "cli":
        selfroute = str(python.parent / "selfroute")
        _run([selfroute, "index", str(doc.parent), "--embedding", "offline"], tmp_path, env)
        out = _run([selfroute, "ask", QUESTION, "--model", "offline"], tmp_path, env)
        assert out.startswith("The 1973 oil crisis began") and "route       rag" in out
        local = _run([selfroute, "ask", QUESTION, "--base-url", model_server, "--model", "m"],
                     tmp_path, env)  # fmt: skip
        assert "route       rag" in local
    else:
        from selfroute.stores import read_document

        plain = tmp_path / "oil_crisis.txt"
        plain.write_text(read_document(doc).text, encoding="utf-8")
        code = f"DOC = {str(plain)!r}\nQUESTION = {QUESTION!r}\n"
        code += textwrap.dedent(QUICKSTARTS[extra])
        out = _run([str(python), "-c", code], tmp_path, env)
        assert "ROUTE rag answered" in out, out
    tokens = _run([str(python), "-c", COUNT_SAMPLE], tmp_path, env)
    assert f"LC_TOKENS {SAMPLE_LC_TOKENS} tiktoken:o200k_base" in tokens
    where = _run([str(python), "-c", "import selfroute; print(selfroute.__file__)"], tmp_path, env)
    assert (where.startswith(str(ROOT))) == (extra == "langchain")  # editable only there
