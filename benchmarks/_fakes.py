"""Zero-latency fake models that report usage, and the shared RAG setup of benchmarks 1-3.

The fakes answer every prompt with a short answer, except RAG prompts whose question carries the
marker ``#lc``: those get the sentinel, so the question is routed to long context. Questions marked
``#hedge`` get an answer whose opening could still be a decline ("The answer is ..."). Usage is
reported like a provider would (``usage_metadata`` / ``raw["usage"]``) so neither side pays for a
tokenizer fallback.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncGenerator, Generator, Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from llama_index.core.base.llms.types import (
    CompletionResponse,
    CompletionResponseAsyncGen,
    CompletionResponseGen,
    LLMMetadata,
)
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.llms.custom import CustomLLM

import selfroute as sr
from benchmarks._common import source_texts

__all__ = [
    "ANSWER",
    "HEDGED_ANSWER",
    "HEDGE_MARKER",
    "LC_MARKER",
    "FakeChatModel",
    "FakeLlamaLLM",
    "document_and_questions",
    "loopback_openai",
    "loopback_openai_process",
    "reply_for",
    "stream_pieces",
    "wire_reply_for",
]

ANSWER = "Mara Holt kept the lamp at Grey Point for thirty-one years."
#: An answer whose opening could still become a decline ("The answer is not ...").
HEDGED_ANSWER = "The answer is in the second passage of the document."
LC_MARKER = "#lc"
HEDGE_MARKER = "#hedge"
RAG_TEMPLATE = sr.Prompts().rag.replace("{sentinel}", sr.DEFAULT_SENTINEL)


def reply_for(prompt: str) -> str:
    """What the fake models write for ``prompt``."""
    is_rag = sr.DEFAULT_SENTINEL in prompt
    if is_rag and LC_MARKER in prompt:
        return sr.DEFAULT_SENTINEL
    return HEDGED_ANSWER if HEDGE_MARKER in prompt else ANSWER


def wire_reply_for(body: dict[str, Any], prompt: str) -> str:
    """What the loopback models send for a request: :func:`reply_for`, or, for a structured
    verdict (a ``json_schema`` response format or a tool), the ``{answerable, answer}`` object
    (a tool call of it when tools are offered), ``answerable`` false for ``#lc`` questions."""
    from tests.support.openai_server import tool_call

    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema" and not body.get("tools"):
        return reply_for(prompt)
    declines = LC_MARKER in prompt
    answer = "" if declines else (HEDGED_ANSWER if HEDGE_MARKER in prompt else ANSWER)
    obj = {"answerable": not declines, "answer": answer}
    return tool_call(obj) if body.get("tools") else json.dumps(obj)


def stream_pieces(text: str) -> list[str]:
    """Word-sized pieces that join back to ``text``."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _usage(prompt: str, text: str) -> dict[str, int]:
    i, o = len(prompt.split()), len(text.split())
    return {"input_tokens": i, "output_tokens": o, "total_tokens": i + o}


class FakeChatModel(BaseChatModel):
    """A LangChain chat model with no latency that reports ``usage_metadata``."""

    model_name: str = "fake-chat"

    @property
    def _llm_type(self) -> str:
        return "selfroute-benchmark-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        prompt = str(messages[-1].content)
        text = reply_for(prompt)
        message = AIMessage(
            content=text,
            usage_metadata=_usage(prompt, text),
            response_metadata={"model_name": self.model_name},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        prompt = str(messages[-1].content)
        text = reply_for(prompt)
        for piece in stream_pieces(text):
            yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=_usage(prompt, text),  # type: ignore[arg-type]
                response_metadata={"model_name": self.model_name},
            )
        )


class FakeLlamaLLM(CustomLLM):
    """A LlamaIndex completion LLM with no latency that reports OpenAI-style ``raw["usage"]``."""

    model: str = "fake-llm"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=128_000, num_output=1024, model_name=self.model)

    def _response(self, prompt: str, text: str, delta: str | None = None) -> CompletionResponse:
        u = _usage(prompt, text)
        raw = {
            "model": self.model,
            "usage": {
                "prompt_tokens": u["input_tokens"],
                "completion_tokens": u["output_tokens"],
                "total_tokens": u["total_tokens"],
            },
        }
        return CompletionResponse(text=text, delta=delta, raw=raw)

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return self._response(prompt, reply_for(prompt))

    @llm_completion_callback()
    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        text = reply_for(prompt)

        def gen() -> Generator[CompletionResponse, None, None]:
            so_far = ""
            for piece in stream_pieces(text):
                so_far += piece
                yield self._response(prompt, so_far, piece)

        return gen()

    @llm_completion_callback()
    async def acomplete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponse:
        response: CompletionResponse = self.complete(prompt, formatted=formatted, **kwargs)
        return response

    @llm_completion_callback()
    async def astream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseAsyncGen:
        async def gen() -> AsyncGenerator[CompletionResponse, None]:
            for r in self.stream_complete(prompt, formatted=formatted, **kwargs):
                yield r

        return gen()


def document_and_questions(data: Path, words: int, n: int) -> tuple[str, list[str]]:
    """A real document of about ``words`` words and ``n`` questions built from its sentences
    ("What does the text say about <first words of a sentence>?"), deterministic."""
    text = " ".join(" ".join(source_texts(data)).split()[:words])
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s.split()) >= 6]
    questions = []
    for i in range(n):
        s = sentences[(i * 7919) % len(sentences)].split()
        questions.append(f"What does the text say about {' '.join(s[:6])}?")
    return text, questions


def chunks_of(text: str) -> Sequence[sr.Chunk]:
    """The 300-word chunks of ``text``."""
    return sr.chunk_text(text, doc_id="corpus")


@contextlib.contextmanager
def loopback_openai(
    *, latency_s: float = 0.0, token_delay_s: float = 0.0, piece_chars: int | None = None
) -> Iterator[Any]:
    """The test suite's scripted OpenAI server answering with :func:`reply_for`.

    The server disables Nagle's algorithm (otherwise the client's delayed ACK would stall every
    response by ~40 ms on Linux and swamp the 50 ms latency the benchmarks model).
    ``piece_chars`` streams pieces of that many characters (a token of about 4 characters)
    instead of a word each.
    """
    from tests.support import _loopback
    from tests.support.openai_server import Reply, ScriptedOpenAIServer

    server = ScriptedOpenAIServer(
        lambda body: Reply(
            wire_reply_for(body, _loopback.prompt_text(body)), piece_chars=piece_chars
        ),
        latency_s=latency_s,
        token_delay_s=token_delay_s,
    )
    with server:
        yield server


@contextlib.contextmanager
def loopback_openai_extractive() -> Iterator[Any]:
    """The scripted OpenAI server answering every prompt with :class:`selfroute.ExtractiveReader`
    (answers from its prompt, or declines), in this process."""
    from tests.support._loopback import extractive_responder
    from tests.support.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(extractive_responder()) as srv:
        yield srv


@contextlib.contextmanager
def loopback_openai_process(*, latency_s: float) -> Iterator[Any]:
    """The same scripted server (every reply :data:`ANSWER`, Nagle off) in a child process.

    For throughput measurements: in-process, the server's request threads would compete for the
    GIL with the event loop being measured. Yields an object with ``base_url``.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile
    import types

    from benchmarks._common import REPO_ROOT

    code = (
        "from tests.support import _loopback\n"
        "from tests.support.openai_server import main\n"
        "raise SystemExit(main())\n"
    )
    with tempfile.TemporaryDirectory(prefix="selfroute-bench-") as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"rules": [], "default": ANSWER}), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        args = ["--latency", str(latency_s), "--script", str(script)]
        proc = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO_ROOT,
            env=env,
        )
        try:
            assert proc.stdout is not None
            base_url = proc.stdout.readline().strip()
            if not base_url.startswith("http://127.0.0.1"):
                raise RuntimeError(f"the loopback server did not start (got {base_url!r})")
            yield types.SimpleNamespace(base_url=base_url)
        finally:
            proc.terminate()
            proc.wait(timeout=10)
