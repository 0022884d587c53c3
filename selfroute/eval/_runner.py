"""Running the methods (LC, RAG, Self-Route, Self-Route grounded) over a labelled set.

Self-Route runs through the core flow (:func:`selfroute.flow.self_route_flow` driven by
:func:`selfroute.flow.adrive`, closed as soon as it gives the result) with the run's :class:`~selfroute.RouteConfig` -- its policies
(k-ladder, pre-routing, structured verdict, grounded mode) included; the handler here only
answers its steps (BM25 retrieval over the item's document, a reader call, the item's document as
long context). ``self_route_grounded`` is the same flow with ``grounded=True``. The LC baseline
sends the long-context prompt over the whole document (fitted like the flow fits it when a window
is set); the RAG baseline sends the same prompt over the top-k chunks.

Unanswerable items are scored by whether the final answer declined: the result's ``abstained``
for Self-Route, :func:`selfroute.parse_verdict` on the answer for the baselines.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from selfroute._chunking import chunk_text
from selfroute._errors import ConfigurationError
from selfroute._fitting import ContextDocument
from selfroute._flow import (
    RouteConfig,
    arun_flow,
    clean_answer,
    fit_long_context,
    self_route_flow,
    validate_question,
)
from selfroute._pricing import PriceTable
from selfroute._prompts import Prompts
from selfroute._redact import describe_exception
from selfroute._result import Passage, RouteResult, Stage
from selfroute._simple import LexicalIndex
from selfroute._structured import VerdictMode, structured_unsupported
from selfroute._verdict import parse_verdict
from selfroute.eval._cache import ResponseCache, default_cache_path
from selfroute.eval._data import EvalItem
from selfroute.eval._figures import start_figure_worker
from selfroute.eval._readers import ModelRequest, Reader
from selfroute.eval._session import FAIL_FAST_AFTER as FAIL_FAST_AFTER  # kept importable here
from selfroute.eval._session import (
    FlowHandler,
    Retriever,
    Session,
    score_record,
    supports_structured,
)
from selfroute.eval._summary import CallRecord, RunRecord, Summary, build_summary, policy_of

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "BM25Retriever",
    "Retriever",
    "aevaluate",
    "evaluate",
    "resolve_cache",
]

#: Method names, in report order.
METHODS = ("lc", "rag", "self_route", "self_route_grounded")
#: What runs when no methods are named (the paper's three).
DEFAULT_METHODS = ("lc", "rag", "self_route")
#: The Self-Route methods (run through the core flow).
FLOW_METHODS = ("self_route", "self_route_grounded")

#: Items, or the path of a data file (loaded with :func:`~selfroute.eval.load_dataset`).
DatasetLike = Iterable[EvalItem] | str | os.PathLike[str]


class BM25Retriever:
    """Top-k BM25 retrieval over the item's own document, split into ``chunk_words``-word chunks.

    Uses :class:`selfroute.LexicalIndex` (Okapi BM25, k1=1.5, b=0.75, English stop words removed).
    One index is built per document and reused by every question over it.
    """

    #: What its ``Passage.score`` values are: Okapi BM25 scores (``selfroute calibrate`` records
    #: it beside a threshold fitted on them).
    score_scale = "bm25"

    def __init__(self, *, chunk_words: int = 300) -> None:
        self.chunk_words = chunk_words
        self._indexes: dict[tuple[str, int], LexicalIndex] = {}
        # the deepest search made per (document, question): RAG and Self-Route at every k share
        # it (the top k of a search sorted by score, then chunk order, is a prefix of a deeper one)
        self._searches: dict[tuple[str, int, str], tuple[int, list[Passage]]] = {}
        self._lock = threading.Lock()

    def index(self, item: EvalItem) -> LexicalIndex:
        """The index of ``item``'s document."""
        key = (item.doc_id, len(item.document))
        with self._lock:
            idx = self._indexes.get(key)
            if idx is None:
                chunks = chunk_text(item.document, doc_id=item.doc_id, chunk_words=self.chunk_words)
                idx = LexicalIndex(chunks)
                self._indexes[key] = idx
        return idx

    def __call__(self, item: EvalItem, k: int) -> list[Passage]:
        key = (item.doc_id, len(item.document), item.question)
        with self._lock:
            done = self._searches.get(key)
        if done is not None and (done[0] >= k or len(done[1]) < done[0]):
            return done[1][:k]  # a list of its own: callers may change it
        found = self.index(item).search(item.question, k)
        with self._lock:
            self._searches[key] = (k, found)
        return list(found)


def resolve_cache(
    cache: ResponseCache | str | os.PathLike[str] | bool | None,
) -> ResponseCache | None:
    """``True`` -> the default cache file, a path -> that file, ``False``/``None`` -> no cache."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return ResponseCache(default_cache_path())
    if isinstance(cache, ResponseCache):
        return cache
    if isinstance(cache, (str, os.PathLike)):
        return ResponseCache(cache)
    raise ConfigurationError(f"cache must be a path, a ResponseCache or a bool, got {cache!r}")


def lc_prompt(
    item: EvalItem, question: str, config: RouteConfig, retrieved: Sequence[str] = ()
) -> tuple[str, str]:
    """The long-context prompt and its context for ``item``, fitted as the flow fits it."""
    fitted, prompt, _ = fit_long_context(
        question, [ContextDocument(item.document, item.doc_id)], config, retrieved
    )
    return prompt, fitted.text


def rag_only_prompt(
    prompts: Prompts, question: str, passages: Sequence[Passage]
) -> tuple[str, str]:
    """The RAG baseline's prompt (no decline instruction) and its context."""
    context = prompts.format_passages([p.text for p in passages])
    return prompts.long_context_prompt(question, context), context


def _top_score(passages: Iterable[Passage]) -> float | None:
    scores = [p.score for p in passages if p.score is not None]
    return max(scores) if scores else None


def _baseline_answer(session: Session, record: RunRecord, text: str, question: str) -> None:
    """Set a baseline's prediction and whether it declines (the parser the flow uses)."""
    record.prediction = clean_answer(text)
    detector = session.config.decline_detector
    key = (record.prediction, question)
    declined = session.declines.get(key) if detector is None else None
    if declined is None:  # LC and RAG often give one item the same answer: parsed once
        declined = parse_verdict(
            record.prediction,
            sentinel=session.config.prompts.sentinel,
            question=question,
            detector=detector,
        ).declined
        if detector is None:  # a detector of the user's own may not be a pure function
            if len(session.declines) >= 256:
                session.declines.pop(next(iter(session.declines)))
            session.declines[key] = declined
    record.abstained = declined
    record.abstention = "declined" if declined else None


async def _run_lc(session: Session, item: EvalItem, q: str, record: RunRecord) -> None:
    prompt, context = lc_prompt(item, q, session.config)
    request = ModelRequest(prompt, context, q, item, "lc", Stage.LONG_CONTEXT)
    gen = await session.generate(session.lc_reader, request, record.calls)
    _baseline_answer(session, record, gen.text, q)


async def _run_rag(session: Session, item: EvalItem, q: str, record: RunRecord) -> None:
    assert record.k is not None
    record.retrieved = list(session.retriever(item, record.k))[: record.k]
    record.top_score = _top_score(record.retrieved)
    prompt, context = rag_only_prompt(session.config.prompts, q, record.retrieved)
    request = ModelRequest(prompt, context, q, item, "rag", Stage.RAG)
    gen = await session.generate(session.reader, request, record.calls)
    _baseline_answer(session, record, gen.text, q)


def _flow_config(session: Session, method: str, k: int) -> RouteConfig:
    """The run's config at ``k`` for ``method`` (validated once per method and k, not per item)."""
    grounded = session.config.grounded or method == "self_route_grounded"
    config = session.flow_configs.get((k, grounded))
    if config is None:
        config = session.flow_configs[k, grounded] = replace(session.config, k=k, grounded=grounded)
    return config


def _from_result(record: RunRecord, result: RouteResult) -> None:
    record.route = result.route.value
    record.reason = result.reason.value
    record.retrieved = list(result.sources)
    record.top_score = _top_score(result.sources)
    record.rungs = [s.k for s in result.steps if s.stage is Stage.RAG and s.k is not None]


async def _run_self_route(session: Session, item: EvalItem, q: str, record: RunRecord) -> None:
    assert record.k is not None
    handler = FlowHandler(session, item, q, record.calls, record.method)
    flow = self_route_flow(q, _flow_config(session, record.method, record.k))
    result = await arun_flow(flow, handler)
    if not any(c.speculative for c in record.calls):
        # A speculative long-context call cancelled before it finished made no call record; the
        # result's wasted step (its prompt counted locally) is what it may cost: count it.
        for step in result.steps:
            if step.wasted:
                record.calls.append(
                    CallRecord(
                        method=record.method,
                        stage=step.stage,
                        model=step.model or session.lc_reader.model_name,
                        prompt_tokens=step.prompt_tokens_estimate or step.usage.input_tokens,
                        usage=step.usage,
                        latency_s=0.0,
                        cached=False,
                        output="",
                        speculative=True,
                    )
                )
    _from_result(record, result)
    record.prediction = result.answer
    record.answered_from_chunks = result.answered_from_chunks
    record.flow_error = result.error
    record.abstained = result.abstained
    record.abstention = result.abstention.value if result.abstention is not None else None
    record.verified = result.verified
    record.disputed = result.disputed
    record.unverified_answer = result.unverified_answer


_RUNNERS = {
    "lc": _run_lc,
    "rag": _run_rag,
    "self_route": _run_self_route,
    "self_route_grounded": _run_self_route,
}


async def _guarded(
    session: Session, item: EvalItem, q: str, method: str, k: int | None
) -> RunRecord:
    """Run one method on one item; a failure is recorded (calls made so far are kept)."""
    record = RunRecord(item=item, method=method, k=k, calls=[])
    try:
        await _RUNNERS[method](session, item, q, record)
    except Exception as exc:
        if session.on_error == "raise":
            raise
        record.prediction = None
        record.error = describe_exception(exc)  # redacted and capped
        partial = getattr(exc, "partial", None)
        if isinstance(partial, RouteResult):
            _from_result(record, partial)
        session.note(exc)
    else:
        session.note(None)
    record.score = score_record(item, record, session.config.prompts)
    return record


async def _run_item(
    session: Session,
    item: EvalItem,
    ks: Sequence[int],
    methods: Sequence[str],
    tick: Callable[[], None],
) -> list[RunRecord]:
    q = validate_question(item.question)
    out: list[RunRecord] = []
    plan: list[tuple[str, int | None]] = [("lc", None)] if "lc" in methods else []
    plan += [(m, k) for k in ks for m in METHODS[1:] if m in methods]
    for method, k in plan:
        out.append(await _guarded(session, item, q, method, k))
        tick()
    lc_calls = [c for r in out if r.method == "lc" and r.error is None for c in r.calls]
    if lc_calls:
        reference, source = lc_calls[0].usage.input_tokens, lc_calls[0].usage.source
    else:
        prompt, _ = lc_prompt(item, q, session.config)
        reference, source = session.counter.count(prompt), session.counter.source
    for r in out:
        r.lc_reference_tokens = reference
        r.lc_reference_source = source
    return out


def as_items(dataset: DatasetLike) -> list[EvalItem]:
    """The items of ``dataset``, loading it first when it is a path."""
    if isinstance(dataset, (str, os.PathLike)):
        from selfroute.eval._data import load_dataset

        return load_dataset(Path(dataset))
    return list(dataset)


def _check_args(
    items: Sequence[EvalItem],
    ks: Sequence[int],
    methods: Sequence[str],
    concurrency: int,
    on_error: str,
    readers: Iterable[Reader],
    config: RouteConfig,
    reader: Reader,
) -> None:
    if not items:
        raise ConfigurationError("the dataset has no items")
    for i, it in enumerate(items):
        if not isinstance(it, EvalItem):
            raise ConfigurationError(
                f"dataset element {i} is {type(it).__name__}; expected selfroute.eval.EvalItem"
            )
    if not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise ConfigurationError(f"ks must be positive integers, got {list(ks)!r}")
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        raise ConfigurationError(f"unknown methods {unknown}; choose from {list(METHODS)}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency must be a positive integer, got {concurrency!r}")
    if on_error not in ("record", "raise"):
        raise ConfigurationError(f"on_error must be 'record' or 'raise', got {on_error!r}")
    for reader in readers:
        if not isinstance(reader, Reader):
            raise ConfigurationError(
                f"reader {reader!r} lacks the Reader interface (name, model_name, cacheable, "
                "is_oracle, cache_identity(), agenerate())"
            )
        if reader.is_oracle:
            bad = [it.id for it in items if it.metric not in ("qa_f1", "exact_match")]
            if bad:
                raise ConfigurationError(
                    f"the oracle reader needs span answers, but {len(bad)} items use other "
                    f"metrics (first: {bad[0]!r})"
                )
    if any(m in FLOW_METHODS for m in methods):
        for k in ks:  # a k-ladder must climb above every k: fail now, not on every item
            replace(config, k=k)
        if config.verdict is VerdictMode.STRUCTURED and not supports_structured(reader):
            structured_unsupported(
                True, f"the reader {reader.name!r} cannot give structured output"
            )


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # progress is optional
        return None
    return tqdm(total=total, desc="selfroute eval", unit="run")


async def _run_items(
    session: Session,
    items: Sequence[EvalItem],
    ks: Sequence[int],
    methods: Sequence[str],
    concurrency: int,
    progress: bool,
) -> list[RunRecord]:
    """Every method on every item, ``concurrency`` items in flight; the first failure (in
    ``on_error="raise"`` mode) cancels the rest."""
    per_item = int("lc" in methods) + len(ks) * (len(methods) - int("lc" in methods))
    bar = _progress(len(items) * per_item, progress)
    gate = asyncio.Semaphore(concurrency)

    def tick() -> None:
        if bar is not None:
            bar.update(1)

    async def one(item: EvalItem) -> list[RunRecord]:
        async with gate:
            if session.stopped is not None:  # another item stopped the run
                raise session.stopped
            return await _run_item(session, item, ks, methods, tick)

    tasks = [asyncio.ensure_future(one(it)) for it in items]
    try:
        batches = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    return [r for batch in batches for r in batch]


async def aevaluate(
    dataset: DatasetLike,
    *,
    reader: Reader,
    lc_reader: Reader | None = None,
    ks: Sequence[int] = (5,),
    methods: Sequence[str] = DEFAULT_METHODS,
    config: RouteConfig | None = None,
    prices: PriceTable | None = None,
    cache: ResponseCache | str | os.PathLike[str] | bool | None = True,
    concurrency: int = 4,
    limit: int | None = None,
    retriever: Retriever | None = None,
    on_error: str = "record",
    progress: bool = False,
    name: str | None = None,
    out: str | os.PathLike[str] | None = None,
) -> Summary:
    """Run LC, RAG and Self-Route (and optionally Self-Route grounded) on every item and
    summarise them (async).

    Args:
        dataset: The items (see the loaders, e.g. :func:`~selfroute.eval.load_dataset`), or the
            path of a data file in any supported format.
        reader: Answers the RAG prompts (RAG baseline and Self-Route's first step).
        lc_reader: Answers the long-context prompts (LC baseline and Self-Route's fallback);
            defaults to ``reader``.
        ks: Retrieval depths to run RAG and Self-Route at (LC runs once per item).
        methods: Subset of :data:`METHODS` (``lc``, ``rag``, ``self_route``,
            ``self_route_grounded``); default :data:`DEFAULT_METHODS` (the first three).
        config: Prompts, window, overflow strategy, strictness and chunk size (``k`` is taken
            from ``ks``), and Self-Route's policies: ``k_ladder``, ``pre_route``, ``verdict``
            and ``grounded`` (``self_route_grounded`` always runs with ``grounded=True``).
        prices: Price table for money.
        cache: Response cache: ``True`` (default file), a path, a :class:`ResponseCache`, or
            ``False``. Identical prompts to the same reader are also shared within a run (so
            Self-Route's fallback reuses the LC baseline's answer).
        concurrency: Items in flight at once (each has at most one model call in flight).
        limit: Evaluate only the first ``limit`` items.
        retriever: ``retriever(item, k) -> passages``; defaults to :class:`BM25Retriever`.
        on_error: ``record`` (a failed call scores 0 and is reported) or ``raise``.
        progress: Show a tqdm progress bar.
        name: Dataset name for the report.
        out: Folder to write ``results.jsonl``, ``summary.json``, ``report.md`` and plots to.

    Returns:
        The :class:`Summary` (per-method rows, RAG-vs-LC comparison, every run's record).
    """
    items = as_items(dataset)
    if limit is not None:
        if not isinstance(limit, int) or limit < 1:
            raise ConfigurationError(f"limit must be a positive integer, got {limit!r}")
        items = items[:limit]
    lc_reader = lc_reader or reader
    ks = sorted(dict.fromkeys(ks))
    methods = [m for m in METHODS if m in methods] if set(methods) <= set(METHODS) else methods
    cfg = config or RouteConfig()
    _check_args(
        items,
        ks,
        methods,
        concurrency,
        on_error,
        {id(reader): reader, id(lc_reader): lc_reader}.values(),
        cfg,
        reader,
    )
    own_cache = not isinstance(cache, ResponseCache)
    store = resolve_cache(cache)
    session = Session(
        reader=reader,
        lc_reader=lc_reader,
        config=cfg,
        retriever=retriever or BM25Retriever(chunk_words=cfg.chunk_words),
        cache=store,
        prices=prices,
        on_error=on_error,
    )
    started = time.perf_counter()
    # matplotlib is imported (in a worker process) while the run goes on
    worker = start_figure_worker() if out is not None else None
    try:
        records = await _run_items(session, items, ks, methods, concurrency, progress)
    except BaseException:
        if worker is not None:
            worker.close()
        raise
    finally:
        if store is not None and own_cache:
            store.close()
    latency_models = {
        m.describe()
        for m in (getattr(r, "latency_model", None) for r in (reader, lc_reader))
        if m is not None
    }
    summary = build_summary(
        records,
        dataset=name or (items[0].dataset or "dataset"),
        items=len(items),
        ks=ks,
        methods=methods,
        reader=reader,
        lc_reader=lc_reader,
        prices=prices,
        model_calls=session.model_calls,
        wall_time_s=time.perf_counter() - started,
        policy=policy_of(cfg),
        latency_model="; ".join(sorted(latency_models)) or None,
        token_counter=session.counter.name,
        score_scale=getattr(session.retriever, "score_scale", None),
    )
    if out is not None:
        from selfroute.eval._report import write_outputs

        write_outputs(summary, Path(out), figure_worker=worker)
    return summary


def evaluate(dataset: DatasetLike, **kwargs: Any) -> Summary:
    """Synchronous :func:`aevaluate` (same arguments); works inside a running loop (notebooks)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aevaluate(dataset, **kwargs))
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(aevaluate(dataset, **kwargs))
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=worker, name="selfroute-eval")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: Summary = box["value"]
    return result
