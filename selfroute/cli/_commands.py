"""The ``index``, ``ask``, ``chat`` and ``stats`` commands.

``ask`` and ``chat`` run the core's flow (:class:`selfroute.cli._route.CliRoute`) over the store's
hybrid retriever (or BM25 over one ``--doc`` file), with the store's full documents as the long
context and framework-free model clients (:mod:`selfroute.cli._clients`): no LangChain, no
``openai`` SDK is imported for an OpenAI-compatible server or the offline reader. ``ask --batch``
runs the same route as the core's :class:`selfroute.BatchJob` on the OpenAI Batch API (with a
``google:`` model, the LangChain adapter's batch jobs). No routing logic lives here.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from selfroute._chunking import DEFAULT_CHUNK_WORDS
from selfroute._errors import ConfigurationError, InvalidInputError, SelfRouteError
from selfroute._flow import RouteConfig
from selfroute._pricing import PriceTable
from selfroute._question import validate_question
from selfroute._result import RouteResult, RouteStats, Stage
from selfroute._settings import config_options
from selfroute.cli._clients import build_client
from selfroute.cli._config import Settings, load_toml, resolve
from selfroute.cli._models import (
    ModelSpec,
    build_chat_model,
    check_key_hosts,
    has_provider,
    parse_model_spec,
)
from selfroute.cli._output import (
    NOT_FOUND,
    RETRACTED,
    Progress,
    budget_hint,
    format_answer,
    format_citations,
    format_index_report,
    format_result,
    format_session,
    format_sources,
    format_stats,
    printable,
    unpriced_models,
)
from selfroute.cli._route import CliRoute, document_source, store_source
from selfroute.stores._embedding import EmbeddingChoice
from selfroute.stores._hosted import DEFAULT_EMBEDDING_CONCURRENCY
from selfroute.stores._store import DocumentStore

__all__ = [
    "RouteSetup",
    "route_setup",
    "run_ask",
    "run_chat",
    "run_index",
    "run_migrate",
    "run_stats",
    "run_unlock",
    "settings_for",
]

_EXIT_WORDS = {"exit", "quit", ":q", "/exit", "/quit"}


def settings_for(args: argparse.Namespace, command: str) -> Settings:
    """Resolve ``command``'s settings from flags, environment and ``selfroute.toml``.

    Raises:
        ConfigurationError: A value that does not parse, or a server that only the working
            folder's ``selfroute.toml`` names would get an API key from the environment
            (:func:`~selfroute.cli._models.check_key_hosts`).
    """
    config_path = getattr(args, "config", None)
    config = load_toml(config_path, explicit=config_path is not None)
    settings = resolve(args, command, config=config)
    check_key_hosts(settings, trusted_file=config_path is not None)
    return settings


def _embedding(settings: Settings) -> EmbeddingChoice | None:
    kind = getattr(settings, "embedding", None)
    if kind is None:
        return None
    return EmbeddingChoice.parse(kind, base_url=getattr(settings, "embedding_base_url", None))


def _store(
    settings: Settings, *, chunk_words: int | None = None, fast_reads: bool = False
) -> DocumentStore:
    concurrency = getattr(settings, "embedding_concurrency", None)
    return DocumentStore(
        settings.store,
        settings.collection,
        chroma_url=settings.chroma_url,
        embedding=_embedding(settings),
        chunk_words=chunk_words,
        embedding_base_url=getattr(settings, "embedding_base_url", None),
        fast_reads=fast_reads,
        embedding_concurrency=concurrency or DEFAULT_EMBEDDING_CONCURRENCY,
    )


def _print_json(data: Any, out: TextIO) -> None:
    out.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


# --------------------------------------------------------------------------------------------
# index / stats
# --------------------------------------------------------------------------------------------
def run_index(args: argparse.Namespace) -> int:
    """``selfroute index PATH...``."""
    settings = settings_for(args, "index")
    store = _store(settings, chunk_words=settings.chunk_words)
    progress = Progress(settings.progress)
    try:
        report = store.index(
            args.paths,
            prune=args.prune,
            follow_symlinks=settings.follow_symlinks,
            max_file_bytes=int(settings.max_file_mb * 1024 * 1024),
            progress=progress,
        )
    finally:
        progress.close()
    stats = store.stats(after=report) if store.exists() else None
    if args.json:
        _print_json(
            {"report": report.to_dict(), "store": stats.to_dict() if stats else None}, sys.stdout
        )
    else:
        print(printable(format_index_report(report, stats)))
    if report.indexed == 0:
        if not args.json:
            print(
                "selfroute: nothing could be indexed (supported: .txt, .md, .html, .pdf)",
                file=sys.stderr,
            )
        return 1
    return 0


def run_stats(args: argparse.Namespace) -> int:
    """``selfroute stats``."""
    settings = settings_for(args, "stats")
    progress = Progress(settings.progress)
    try:
        stats = _store(settings).stats(documents=args.documents, progress=progress.count)
    finally:
        progress.close()
    if args.json:
        _print_json(stats.to_dict(), sys.stdout)
    else:
        print(printable(format_stats(stats)))
    return 0


def run_migrate(args: argparse.Namespace) -> int:
    """``selfroute migrate --to-server URL``."""
    from selfroute.stores._migrate import copy_collection

    settings = settings_for(args, "migrate")
    source = _store(settings)
    target = DocumentStore(
        settings.store, args.to_collection or settings.collection, chroma_url=args.to_server
    )
    progress = Progress(settings.progress)
    try:
        report = copy_collection(source, target, progress=progress.count)
    finally:
        progress.close()
    if args.json:
        _print_json(report.to_dict(), sys.stdout)
    else:
        print(
            f"copied {report.documents:,} documents and {report.chunks:,} chunks from "
            f"{report.source} to {report.target}; BM25 index {report.bm25}\n"
            f"use it with: --chroma-url {target.chroma_url} --collection "
            f"{target.collection_name} --store {settings.store}"
        )
    return 0


def run_unlock(args: argparse.Namespace) -> int:
    """``selfroute unlock [--force]``."""
    from selfroute.stores._unlock import release_dead_writers

    settings = settings_for(args, "unlock")
    report = release_dead_writers(_store(settings), force=args.force)
    if args.json:
        _print_json(report.to_dict(), sys.stdout)
    elif not report.changed:
        print(f"nothing to unlock at {report.location}: no writer marks, no journal")
    else:
        for mark in report.marks_removed:
            print(f"removed writer mark {mark.key} ({mark.describe()})")
        print(
            f"deleted {report.orphan_chunks_removed:,} orphan chunks"
            + (", cleared the journal" if report.journal_cleared else "")
            + f" at {report.location}; readers serve without checking from their next second"
        )
    return 0


# --------------------------------------------------------------------------------------------
# ask / chat
# --------------------------------------------------------------------------------------------
@dataclass
class _Session:
    """A ready Self-Route runnable and what the report needs to know about it."""

    route: Any
    rag: ModelSpec
    long_context: ModelSpec
    currency: str
    retrieval: str
    prices: PriceTable | None = None
    #: What a batch job's answers depend on beyond the flow's and the models' settings (the
    #: retrieval): recorded in the job file, a rerun with others refuses naming them.
    batch_settings: dict[str, Any] = field(default_factory=dict)


def _route_kwargs(settings: Settings) -> tuple[dict[str, Any], str]:
    """The :class:`~selfroute.RouteConfig` keyword arguments of ``settings`` (derived from the
    fields' declarations, :func:`selfroute._settings.config_options`) and the currency;
    ``long_context_window`` is ``"auto"`` when ``--lc-window`` is not set."""
    kwargs = config_options(RouteConfig, settings.to_dict())
    if kwargs.get("long_context_window") is None:
        kwargs["long_context_window"] = "auto"
    prices = kwargs.get("prices")
    return kwargs, prices.currency if prices is not None else "USD"


def _lc_spec(settings: Settings, rag: ModelSpec) -> ModelSpec:
    """The long-context model: ``--lc-model`` at ``--lc-base-url``; a bare ``--lc-model`` name (or
    none) shares ``--base-url``, while ``openai:``/``google:`` means that provider's own API."""
    if not settings.lc_model:
        return ModelSpec(rag.provider, rag.name, settings.lc_base_url or rag.base_url)
    bare = not has_provider(settings.lc_model)
    base_url = settings.lc_base_url or (settings.base_url if bare else None)
    return parse_model_spec(settings.lc_model, base_url, flag="--lc-model")


_WHERE = {
    "flag": "--min-top-score",
    "env": "SELFROUTE_MIN_TOP_SCORE",
    "file": "[pre_route] in the config file",
    "default": "the default",
}


def check_score_scale(settings: Settings, doc: str | None) -> None:
    """Refuse a ``min_top_score`` fitted on another score scale than this ``ask``'s retriever's.

    Raises:
        ConfigurationError: ``score_scale`` is recorded and differs, naming both and the fixes.
    """
    fitted = settings.score_scale
    if settings.min_top_score is None or fitted is None:
        return
    from selfroute.stores._retriever import SCORE_SCALES

    scale = "bm25" if doc is not None else SCORE_SCALES[settings.retrieval]
    if scale == fitted:
        return
    retriever = "--doc (bm25)" if doc is not None else f"--retrieval {settings.retrieval}"
    same = [m for m, s in SCORE_SCALES.items() if s == fitted]
    fixes = f"--retrieval {same[0]}" if same else "--doc FILE (the core's BM25, as in eval)"
    raise ConfigurationError(
        f"min_top_score {settings.min_top_score:g} (from {_WHERE[settings.source('min_top_score')]}) was "
        f"fitted on {fitted} scores, but this ask retrieves with {retriever}, whose scores are "
        f"{scale}: every question would be judged on the wrong scale. Use {fixes}, calibrate "
        "on an eval run with this retriever, or remove min_top_score"
    )


def _specs(settings: Settings, doc: str | None) -> tuple[ModelSpec, ModelSpec]:
    check_score_scale(settings, doc)
    rag_spec = parse_model_spec(settings.model, settings.base_url)
    return rag_spec, _lc_spec(settings, rag_spec)


def _model_options(settings: Settings) -> dict[str, Any]:
    return {
        "temperature": settings.temperature,
        "timeout": settings.timeout,
        "max_retries": settings.max_retries,
    }


def _source(settings: Settings, doc: str | None, store: DocumentStore | None = None) -> Any:
    """The passages and long context of ``ask``: BM25 over ``--doc``, else the store."""
    if doc is not None:
        from selfroute.stores._readers import read_document

        loaded = read_document(doc)
        metadata = {"source": str(loaded.path), "doc_id": loaded.doc_id, "title": loaded.title}
        return document_source(
            loaded.text, doc_id=loaded.doc_id, metadata=metadata, chunk_words=DEFAULT_CHUNK_WORDS
        )
    from selfroute.stores._retriever import HybridRetriever

    if store is None:
        store = _store(settings, fast_reads=True)  # queries only: chromadb's bindings directly
    store.embedding  # noqa: B018 - opens the collection: fail now, not at the first question
    return store_source(HybridRetriever(store, mode=settings.retrieval, k=settings.k))


def _retrieval_settings(settings: Settings, doc: str | None, store: Any = None) -> dict[str, Any]:
    """What the passages of a batch job's questions depend on: the ``--doc`` file, or the store
    (folder or server, collection, the collection's embedding) and the retrieval mode."""
    if doc is not None:
        return {"retrieval": "bm25 over --doc", "doc": str(Path(doc).resolve())}
    from selfroute._redact import redact

    where = redact(settings.chroma_url) if settings.chroma_url else None  # no password kept
    out: dict[str, Any] = {
        "retrieval": settings.retrieval,
        "store": where or str(Path(settings.store).resolve()),
        "collection": settings.collection,
    }
    if store is not None:
        out["embedding"] = store.embedding.spec
    return out


@dataclass
class RouteSetup:
    """What ``ask`` runs the core's flow with, before a driver is chosen (``ask``/``chat`` drive
    it synchronously, ``mcp``/``serve`` asynchronously).

    Attributes:
        config: The core's settings.
        source: The passages and the long context.
        clients: The (sync) model client of each stage.
        rag: The RAG model's spec.
        long_context: The long-context model's spec.
        currency: The price table's currency.
        retrieval: How passages are found (``hybrid``, ``dense``, ``bm25``, ``bm25 over --doc``).
        prices: The price table, when given.
        store: The store (``None`` with ``--doc``).
    """

    config: RouteConfig
    source: Any
    clients: dict[Stage, Any]
    rag: ModelSpec
    long_context: ModelSpec
    currency: str
    retrieval: str
    prices: PriceTable | None = None
    store: DocumentStore | None = None


def route_setup(settings: Settings, doc: str | None) -> RouteSetup:
    """The flow's settings, source and model clients of ``ask`` (``--doc`` or the store).

    Raises:
        ConfigurationError: A bad setting, a missing key, a missing ``--doc`` file.
        StoreError: The store cannot be opened.
    """
    rag_spec, lc_spec = _specs(settings, doc)
    common = _model_options(settings)
    rag = build_client(rag_spec, flag="--model", **common)
    lc = rag if lc_spec == rag_spec else build_client(lc_spec, flag="--lc-model", **common)
    kwargs, currency = _route_kwargs(settings)
    window = kwargs.pop("long_context_window")
    config = RouteConfig(
        **kwargs,
        long_context_window=lc.window if window == "auto" else window,
        long_context_model=lc.name,
    )
    store = None if doc is not None else _store(settings, fast_reads=True)
    source = _source(settings, doc, store)
    retrieval = "bm25 over --doc" if doc is not None else settings.retrieval
    clients = {Stage.RAG: rag, Stage.LONG_CONTEXT: lc}
    prices = kwargs.get("prices")
    return RouteSetup(
        config, source, clients, rag_spec, lc_spec, currency, retrieval, prices, store
    )


def _session(settings: Settings, doc: str | None) -> _Session:
    """``ask``/``chat`` on the core's flow with the framework-free model clients."""
    setup = route_setup(settings, doc)
    route = CliRoute(setup.config, setup.source, setup.clients)
    return _Session(
        route, setup.rag, setup.long_context, setup.currency, setup.retrieval, setup.prices
    )


def _batch_session(settings: Settings, doc: str | None) -> _Session:
    """``ask --batch``: the core's :class:`selfroute.BatchJob` over ``ask``'s own step handler
    and settings, on the OpenAI Batch API (or a compatible server's); a ``google:`` model goes
    through the LangChain adapter (:func:`_langchain_batch_session`), whose online client it
    uses anyway."""
    rag_spec, lc_spec = _specs(settings, doc)
    if rag_spec.provider != "openai" or lc_spec.provider != "openai":
        return _langchain_batch_session(settings, doc)
    from selfroute.cli._batch import CoreBatchRoute, openai_batch_backend

    session = _session(settings, doc)
    backend = openai_batch_backend(rag_spec, lc_spec, temperature=settings.temperature)
    store = session.route.handler.source.store
    return replace(
        session,
        route=CoreBatchRoute(session.route, backend),
        batch_settings=_retrieval_settings(settings, doc, store),
    )


def _langchain_batch_session(settings: Settings, doc: str | None) -> _Session:
    """``ask --batch`` on the LangChain adapter's :class:`~langchain_selfroute.SelfRoute`, whose
    batch jobs run on the provider's batch API."""
    rag_spec, lc_spec = _specs(settings, doc)
    common = _model_options(settings)
    llm = build_chat_model(rag_spec, flag="--model", **common)
    lc_llm = None if lc_spec == rag_spec else build_chat_model(lc_spec, flag="--lc-model", **common)
    kwargs, currency = _route_kwargs(settings)
    # a bad k_ladder fails before any work
    RouteConfig(**{**kwargs, "long_context_window": None})
    if lc_llm is not None:
        kwargs["long_context_llm"] = lc_llm
    if doc is not None:
        from langchain_core.documents import Document

        from langchain_selfroute import SelfRoute
        from selfroute.stores._readers import read_document

        loaded = read_document(doc)
        document = Document(
            page_content=loaded.text,
            metadata={"source": str(loaded.path), "doc_id": loaded.doc_id, "title": loaded.title},
        )
        route = SelfRoute(llm=llm, document=document, long_context="fixed", **kwargs)
        return _Session(
            route,
            rag_spec,
            lc_spec,
            currency,
            "bm25 over --doc",
            kwargs.get("prices"),
            _retrieval_settings(settings, doc),
        )
    from langchain_selfroute._store_retriever import SelfRouteStoreRetriever
    from selfroute.stores._retriever import HybridRetriever

    store = _store(settings)
    store.embedding  # noqa: B018 - opens the collection: fail now, not at the first question
    core = HybridRetriever(store, mode=settings.retrieval, k=settings.k)
    retriever = SelfRouteStoreRetriever(retriever=core, k=settings.k)
    route = retriever.as_self_route(llm, **kwargs)
    return _Session(
        route,
        rag_spec,
        lc_spec,
        currency,
        settings.retrieval,
        kwargs.get("prices"),
        _retrieval_settings(settings, doc, store),
    )


def _payload(result: RouteResult, session: _Session) -> dict[str, Any]:
    data = result.to_dict()  # ``answer`` and ``unverified_answer`` keep the model's text
    data["shown_answer"] = format_answer(result)
    data["models"] = {"rag": str(session.rag), "long_context": str(session.long_context)}
    data["retrieval"] = session.retrieval
    if session.prices is not None:
        data["unpriced_models"] = unpriced_models(result, session.prices)
    hint = budget_hint(result)
    if hint:
        data["budget_hint"] = hint
    return data


def _report(result: RouteResult, session: _Session, args: argparse.Namespace) -> str:
    """What follows the answer: citations (grounded mode), the route report, the sources."""
    parts = []
    citations = format_citations(result)
    if citations:
        parts.append(citations)
    parts.append(format_result(result, currency=session.currency, prices=session.prices))
    hint = budget_hint(result)
    if hint:
        parts.append(f"budget      {hint}")
    if args.show_sources:
        parts.append(format_sources(result.sources))
    return "\n".join(parts)


def _answer(session: _Session, question: str, args: argparse.Namespace, out: TextIO) -> RouteResult:
    """Answer one question and print it; returns the result."""
    if not args.stream:
        waiting = Progress("never" if args.json else "auto")
        waiting.status("selfroute: retrieving and asking the model...")
        try:
            result: RouteResult = session.route.invoke(question)
        finally:
            waiting.close()
        if args.json:
            _print_json(_payload(result, session), out)
        else:
            out.write(printable(f"{format_answer(result)}\n\n{_report(result, session, args)}\n"))
        return result
    final: RouteResult | None = None
    for kind, value in session.route.stream(question):
        if kind == "result":
            final = value
            if args.json:
                out.write(
                    json.dumps({"event": "result", "result": _payload(value, session)}) + "\n"
                )
        elif args.json:
            event: dict[str, Any] = {"event": kind}
            if kind == "text":
                event.update(text=value.text, stage=value.stage.value if value.stage else None)
            elif kind == "route":
                event.update(
                    route=value.route.value, reason=value.reason.value if value.reason else None
                )
            out.write(json.dumps(event) + "\n")
        elif kind == "text":
            out.write(printable(value.text))
        elif kind == "retract":  # a decline, or a RAG call that failed mid-stream: see the report
            out.write(f"\n{RETRACTED}\n")
        out.flush()
    if final is None:  # pragma: no cover - the stream always ends with the result
        raise SelfRouteError("the stream ended without a result")
    if not args.json:
        if final.abstained:
            out.write(f"\n{NOT_FOUND}")
        out.write(printable(f"\n\n{_report(final, session, args)}\n"))
    return final


def _question(words: list[str]) -> str:
    text = " ".join(words).strip()
    if text == "-":
        text = sys.stdin.read()
    if not text.strip():
        raise InvalidInputError(
            "the question is empty: write it after the command, e.g. "
            "selfroute ask 'What does the report conclude?' (or '-' to read it from stdin)"
        )
    return validate_question(text)  # invalid UTF-8, NULs, nothing visible: its own message


def run_ask(args: argparse.Namespace) -> int:
    """``selfroute ask QUESTION`` (or ``--batch QUESTIONS.jsonl``)."""
    batch = getattr(args, "batch", None)
    question = None if batch else _question(args.question)
    settings = settings_for(args, "ask")
    if args.doc is not None and not Path(args.doc).is_file():
        raise ConfigurationError(f"--doc {args.doc}: no such file")
    if batch:
        from selfroute.cli._batch import run_ask_batch

        return run_ask_batch(args, _batch_session(settings, args.doc))
    session = _session(settings, args.doc)
    assert question is not None
    _answer(session, question, args, sys.stdout)
    return 0


def run_chat(args: argparse.Namespace) -> int:
    """``selfroute chat``: questions from the terminal (or stdin) until EOF or ``exit``."""
    settings = settings_for(args, "chat")
    session = _session(settings, args.doc)
    interactive = sys.stdin.isatty()
    stats = RouteStats()
    failed = 0
    if interactive:
        print("Ask a question (empty line skips; 'exit' or Ctrl-D ends).", file=sys.stderr)
    while True:
        try:
            line = input("question> ") if interactive else sys.stdin.readline()
        except EOFError:
            break
        except KeyboardInterrupt:
            print(file=sys.stderr)
            break
        if not interactive and line == "":
            break
        question = line.strip()
        if not question:
            continue
        if question.lower() in _EXIT_WORDS:
            break
        try:
            result = _answer(session, question, args, sys.stdout)
            stats.add(result)
        except KeyboardInterrupt:
            print("\n[cancelled]", file=sys.stderr)
        except SelfRouteError as exc:
            failed += 1
            partial = getattr(exc, "partial", None)
            if isinstance(partial, RouteResult):
                stats.add(partial)  # the RAG step it holds was paid for
            print(f"selfroute: error: {printable(str(exc))}", file=sys.stderr)
        if not args.json:
            print()
        sys.stdout.flush()
    if not args.json:
        print(format_session(stats, failed=failed), file=sys.stderr)
    return 0
