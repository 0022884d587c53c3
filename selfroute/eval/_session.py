"""What one evaluation run shares: the session (cached reader calls, fail-fast counting), the
handler that answers the core flow's steps for one item, and the item's score.

The online runner (:mod:`selfroute.eval._runner`) and the batch runner
(:mod:`selfroute.eval._batch`) both use them.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from selfroute._errors import ConfigurationError, ModelOutputError
from selfroute._fitting import ContextDocument
from selfroute._flow import (
    Generate,
    Generation,
    GenerationChunk,
    LoadLongContext,
    Retrieve,
    RouteConfig,
)
from selfroute._pricing import PriceTable
from selfroute._prompts import Prompts
from selfroute._result import Passage, Stage
from selfroute._structured import load_structured, structured_unsupported
from selfroute._tokens import TokenCounter, count_in_prompt
from selfroute._usage import Usage
from selfroute.eval._cache import ResponseCache
from selfroute.eval._data import EvalItem
from selfroute.eval._readers import ModelRequest, Reader
from selfroute.eval._summary import CallRecord, RunRecord
from selfroute.eval.metrics import score_answer

__all__ = [
    "CONTEXT_MARK",
    "FAIL_FAST_AFTER",
    "FlowHandler",
    "Retriever",
    "Session",
    "context_of",
    "score_record",
    "supports_structured",
]

Retriever = Callable[[EvalItem, int], Sequence[Passage]]

#: With ``on_error="record"``, stop when this many runs failed before any succeeded.
FAIL_FAST_AFTER = 5
#: Stands in for the context when a prompt template is rendered to find the context in a prompt.
CONTEXT_MARK = "\x00SELFROUTE-EVAL-CONTEXT\x00"


#: Contexts at least this long enter the memo key by their own digest (see Session._memo_key).
_DIGEST_FROM = 16_384


def _memo_key(identity: str, prompt: str) -> bytes:
    """This run's key for a reader call (a digest: the prompts are not kept alive; SHA-256, which
    has CPU instructions on most machines: hashing a RAG prompt costs half what BLAKE2b does)."""
    digest = hashlib.sha256(identity.encode("utf-8", "surrogatepass"))
    digest.update(b"\x00")
    digest.update(prompt.encode("utf-8", "surrogatepass"))
    return digest.digest()


def _split_template(rendered: str) -> tuple[str, str]:
    prefix, sep, suffix = rendered.partition(CONTEXT_MARK)
    if not sep:  # pragma: no cover - the templates always contain {context}
        raise ConfigurationError("prompt template has no {context} placeholder")
    return prefix, suffix


def context_of(prompt: str, rendered_with_mark: str, known: str | None = None) -> str:
    """The context inside ``prompt``, located by its template rendered with :data:`CONTEXT_MARK`.

    When it is ``known`` (the item's document), that very object is returned rather than a copy
    sliced from the prompt: counts and digests remembered by identity then apply to it.
    """
    prefix, suffix = _split_template(rendered_with_mark)
    if not (prompt.startswith(prefix) and prompt.endswith(suffix)):
        raise ConfigurationError("could not locate the context inside the prompt")
    end = len(prompt) - len(suffix)
    if (
        known is not None
        and end - len(prefix) == len(known)
        and prompt.startswith(known, len(prefix))
    ):
        return known
    return prompt[len(prefix) : end]


@dataclass
class Session:
    """One evaluation run's readers, settings and reader-call cache, and its failure count."""

    reader: Reader
    lc_reader: Reader
    config: RouteConfig
    retriever: Retriever
    cache: ResponseCache | None
    prices: PriceTable | None
    on_error: str
    memo: dict[bytes, asyncio.Future[tuple[Generation, float]]] = field(default_factory=dict)
    model_calls: int = 0
    succeeded: int = 0
    failed: int = 0
    stopped: BaseException | None = None

    def note(self, error: Exception | None) -> None:
        """Count a run; stop early when the first runs all fail (bad key, wrong endpoint)."""
        if error is None:
            self.succeeded += 1
            return
        self.failed += 1
        if self.succeeded == 0 and self.failed >= FAIL_FAST_AFTER:
            stop = ModelOutputError(
                f"the first {self.failed} runs all failed, stopping; last error: "
                f"{type(error).__name__}: {error}"
            )
            self.stopped = stop
            raise stop from error

    digests: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    #: The Self-Route config per ``(k, grounded)`` (a frozen dataclass, built once).
    flow_configs: dict[tuple[int, bool], RouteConfig] = field(default_factory=dict)
    #: Whether a baseline's answer declines, per ``(answer, question)`` (the last few).
    declines: dict[tuple[str, str], bool] = field(default_factory=dict)

    @property
    def counter(self) -> TokenCounter:
        return self.config.counter

    def _bodies(self, request: ModelRequest) -> list[str]:
        """The texts inside ``request``'s prompt that recur across calls: the document, or each
        passage (the chunks of a document recur across questions and methods)."""
        if request.stage is Stage.RAG:
            return request.context.split(self.config.prompts.passage_separator)
        return [request.context]

    def _memo_key(self, identity: str, request: ModelRequest) -> bytes:
        """This run's key for a reader call: a digest of the reader and the prompt (the prompts
        are not kept alive). A long context inside the prompt enters as its own digest, taken once
        per context object, so a 200k-character prompt is not hashed on every call."""
        prompt, context = request.prompt, request.context
        at = prompt.find(context[:64]) if len(context) >= _DIGEST_FROM else -1
        if at < 0 or not prompt.startswith(context, at):
            return _memo_key(identity, prompt)
        hit = self.digests.get(id(context))
        if hit is None or hit[0] is not context:
            hit = (context, hashlib.sha256(context.encode("utf-8", "surrogatepass")).digest())
            if len(self.digests) >= 8:
                self.digests.pop(next(iter(self.digests)))
            self.digests[id(context)] = hit
        parts = hashlib.sha256(identity.encode("utf-8", "surrogatepass"))
        for piece in (prompt[:at], prompt[at + len(context) :]):
            parts.update(b"\x00%d\x00" % len(piece))
            parts.update(piece.encode("utf-8", "surrogatepass"))
        parts.update(b"\x01" + hit[1])
        return parts.digest()

    async def _fresh(self, reader: Reader, request: ModelRequest) -> tuple[Generation, float]:
        t0 = time.perf_counter()
        gen = await reader.agenerate(request)
        latency = time.perf_counter() - t0
        if not isinstance(gen, Generation):
            raise ConfigurationError(
                f"reader {reader.name!r} returned {type(gen).__name__}; expected Generation"
            )
        model = getattr(reader, "latency_model", None)
        if model is not None:  # simulated: deterministic and comparable across policies
            usage = gen.usage or Usage.of(
                self.counter.count(request.prompt), self.counter.count(gen.text)
            )
            latency = model.seconds(usage.input_tokens, usage.output_tokens)
        self.model_calls += int(reader.cacheable)
        if self.cache is not None and reader.cacheable:
            self.cache.put(reader.cache_identity(), request.prompt, gen, latency)
        return gen, latency

    async def generate(
        self,
        reader: Reader,
        request: ModelRequest,
        calls: list[CallRecord],
        *,
        speculative: bool = False,
    ) -> Generation:
        """One reader call, served from the cache (disk, or this run) when it was made before."""
        prompt_tokens = count_in_prompt(self.counter, request.prompt, *self._bodies(request))
        identity = reader.cache_identity()
        key = self._memo_key(identity, request)
        cached = True
        future = self.memo.get(key)
        if future is None:
            hit = None
            if self.cache is not None and reader.cacheable:
                hit = self.cache.get(identity, request.prompt)
            future = asyncio.get_running_loop().create_future()
            self.memo[key] = future
            if hit is not None:
                future.set_result((hit.generation, hit.latency_s))
            else:
                cached = False
                try:
                    future.set_result(await self._fresh(reader, request))
                except BaseException as exc:
                    del self.memo[key]
                    future.set_exception(exc)
                    future.exception()  # retrieved: no "never retrieved" warning
                    raise
        gen, latency = await asyncio.shield(future)
        usage = gen.usage or Usage.of(
            prompt_tokens, self.counter.count(gen.text), source=self.counter.source
        )
        model = gen.model or reader.model_name
        structured = gen.structured
        if request.structured is not None and structured is None:
            structured = load_structured(gen.text)  # a cached answer keeps only the text
        calls.append(
            CallRecord(
                method=request.method,
                stage=request.stage,
                model=model,
                prompt_tokens=prompt_tokens,
                usage=usage,
                latency_s=latency,
                cached=cached,
                output=gen.text,
                cost=self.prices.cost(model, usage) if self.prices is not None else None,
                k=request.k,
                structured=request.structured is not None,
                speculative=speculative,
            )
        )
        return Generation(
            text=gen.text, usage=usage, model=model, latency_s=latency, structured=structured
        )


def supports_structured(reader: Reader) -> bool:
    """Whether ``reader`` answers structured-verdict requests."""
    return bool(getattr(reader, "supports_structured", False))


class FlowHandler:
    """Answers the core flow's steps for one item (no routing logic here)."""

    def __init__(
        self,
        session: Session,
        item: EvalItem,
        question: str,
        calls: list[CallRecord],
        method: str = "self_route",
    ) -> None:
        self.session = session
        self.item = item
        self.question = question
        self.calls = calls
        self.method = method

    async def aretrieve(self, step: Retrieve) -> Sequence[Passage]:
        return list(self.session.retriever(self.item, step.k))

    async def agenerate(self, step: Generate) -> Generation:
        rag = step.stage is Stage.RAG
        prompts = self.session.config.prompts
        reader = self.session.reader if rag else self.session.lc_reader
        q, grounded = self.question, step.grounded
        prompt, structured = step.prompt, None
        if rag and step.structured is not None:
            if supports_structured(reader):
                structured = step.structured
                prompt = structured.prompt
                marked = prompts.structured_rag_prompt(q, [CONTEXT_MARK], grounded=grounded)
            else:
                structured_unsupported(
                    step.structured.required,
                    f"the reader {reader.name!r} cannot give structured output",
                )
        if structured is None:
            marked = (
                prompts.rag_prompt(q, [CONTEXT_MARK], grounded=grounded)
                if rag
                else prompts.long_context_prompt(q, CONTEXT_MARK, grounded=grounded)
            )
        request = ModelRequest(
            prompt=prompt,
            context=context_of(prompt, marked, None if rag else self.item.document),
            question=step.question,
            item=self.item,
            method=self.method,
            stage=step.stage,
            sentinel=step.sentinel,
            structured=structured,
            grounded=grounded,
            k=step.k,
        )
        return await self.session.generate(
            reader, request, self.calls, speculative=step.speculative
        )

    async def astream(self, step: Generate) -> AsyncIterator[GenerationChunk]:
        gen = await self.agenerate(step)
        yield GenerationChunk.of(gen)

    async def aload_long_context(self, step: LoadLongContext) -> list[ContextDocument]:
        return [ContextDocument(self.item.document, self.item.doc_id)]


def score_record(item: EvalItem, record: RunRecord, prompts: Prompts) -> float:
    """The item's score: for an unanswerable item, 1 when the final answer declined."""
    if record.prediction is None:
        return 0.0
    if item.unanswerable:
        return float(bool(record.abstained))
    return score_answer(
        record.prediction,
        item.answers,
        metric=item.metric,
        dataset=item.dataset,
        all_classes=item.all_classes,
        choices=item.choices,
        sentinel=prompts.sentinel,
    )
