"""``selfroute eval``: run LC, RAG and Self-Route (and its policies) over a labelled set and
write a report.

Registered by the main CLI through :func:`add_parser`; also runnable as ``python -m selfroute.eval``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError, InvalidInputError, SelfRouteError
from selfroute._flow import RouteConfig
from selfroute._settings import eval_config_options, eval_options
from selfroute._settings import eval_positive_int as _positive

__all__ = ["DESCRIPTION", "add_parser", "build_parser", "config_from_args", "main", "run"]

#: What ``selfroute eval --help`` says (plain text: help is not rendered as reStructuredText).
DESCRIPTION = (
    "Run long context (LC), RAG and Self-Route (and its policies) over a labelled set and write "
    "the Table-1 style report, the per-question results and the plots. Start keyless with "
    "--sample --reader oracle (or --model offline); --dry-run prints what a model run would "
    "cost without calling it. See docs/eval.md."
)

_METHOD_ALIASES = {
    "lc": "lc",
    "rag": "rag",
    "self-route": "self_route",
    "self_route": "self_route",
    "self-route-grounded": "self_route_grounded",
    "self_route_grounded": "self_route_grounded",
}


def _ks(text: str) -> list[int]:
    try:
        ks = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"--k takes integers like 1,5,10, got {text!r}") from None
    if not ks or any(k < 1 for k in ks):
        raise argparse.ArgumentTypeError(f"--k takes positive integers, got {text!r}")
    return ks


def _methods(text: str) -> list[str]:
    out = []
    for part in filter(None, (p.strip().lower() for p in text.split(","))):
        if part not in _METHOD_ALIASES:
            raise argparse.ArgumentTypeError(
                f"unknown method {part!r}; choose from lc, rag, self-route, self-route-grounded"
            )
        out.append(_METHOD_ALIASES[part])
    if not out:
        raise argparse.ArgumentTypeError("--methods is empty")
    return out


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {text!r}")
    return value


#: The order ``eval --help`` lists the route settings in (one not listed comes last in its group).
_LISTED = (
    "--window",
    "--overflow",
    "--chunk-words",
    "--strict",
    "--k-ladder",
    "--pre-route",
    "--min-top-score",
    "--speculate-below",
    "--verdict",
    "--decline-pattern",
    "--grounded",
)


def _route_settings(group: Any, name: str) -> None:
    """Add the eval options of the route settings declared for argument group ``name``."""
    options = eval_options(RouteConfig, name)
    ranked = sorted(
        options, key=lambda o: _LISTED.index(o.flag) if o.flag in _LISTED else len(_LISTED)
    )
    for option in ranked:
        option.add_to(group)


def configure(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the eval arguments to ``parser``."""
    _data_arguments(parser)
    _reader_arguments(parser)
    run_ = _run_arguments(parser)
    _policy_arguments(parser)
    _execution_arguments(run_)  # same group as the run options, listed after the policies
    parser.set_defaults(func=run)
    return parser


def _data_arguments(parser: argparse.ArgumentParser) -> None:
    data = parser.add_argument_group("data")
    data.add_argument(
        "data",
        nargs="?",
        help="data file: LongBench JSONL, SQuAD-2.0 articles "
        "JSONL, or LaRA query JSONL/folder (with --documents)",
    )
    data.add_argument(
        "--sample",
        action="store_true",
        help="use the bundled sample (3 SQuAD 2.0 articles as one haystack, "
        "120 questions); runs offline with --reader oracle",
    )
    data.add_argument("--format", default="auto", choices=["auto", "longbench", "lara", "squad"])
    data.add_argument("--documents", help="LaRA: folder holding the documents")
    data.add_argument(
        "--haystack", action="store_true", help="SQuAD: concatenate all articles into one document"
    )
    data.add_argument(
        "--metric",
        help="LongBench: override the metric (qa_f1, exact_match, rouge_l, multiple_choice, ...)",
    )
    data.add_argument("--limit", type=_positive, help="evaluate only the first N items")


def _reader_arguments(parser: argparse.ArgumentParser) -> None:
    model = parser.add_argument_group("readers")
    model.add_argument(
        "--reader",
        choices=["model", "oracle", "fabricating-oracle"],
        help="'oracle' answers from the gold labels (no model, no key); 'fabricating-oracle' is "
        "the oracle, except that its long-context calls invent an answer when the document "
        "lacks one (scripted hallucination); default: 'model' when --model is given",
    )
    model.add_argument(
        "--fabricate-rate",
        type=_rate,
        default=1.0,
        metavar="R",
        help="fabricating-oracle: share of answer-less long-context calls that invent an "
        "answer (default 1: always)",
    )
    model.add_argument(
        "--fabricated-quote",
        choices=["invented", "irrelevant"],
        default="invented",
        help="fabricating-oracle in grounded mode: support the invented answer with a quote "
        "that is not in the document (invented, default) or with a real but irrelevant sentence",
    )
    model.add_argument("--seed", type=int, default=0, help="seed of the scripted readers")
    model.add_argument(
        "--simulate-latency",
        nargs="?",
        const="default",
        metavar="BASE,PER_IN,PER_OUT",
        help="oracle readers: report simulated latency BASE + PER_IN * input tokens + PER_OUT * "
        "output tokens seconds per call (default 0.4,0.00002,0.02)",
    )
    model.add_argument("--model", help="openai:NAME, google:NAME, or NAME with --base-url")
    model.add_argument("--lc-model", help="long-context model (default: --model)")
    model.add_argument("--base-url", help="OpenAI-compatible endpoint for --model")
    model.add_argument("--lc-base-url", help="endpoint for --lc-model (default: --base-url)")
    model.add_argument("--temperature", type=float, default=0.0)
    model.add_argument(
        "--max-tokens", type=_positive, default=256, help="answer length cap per call (default 256)"
    )
    model.add_argument("--timeout", type=float, default=120.0, help="seconds per call")


def _run_arguments(parser: argparse.ArgumentParser) -> Any:
    run_ = parser.add_argument_group("run")
    run_.add_argument(
        "--k",
        type=_ks,
        default=[5],
        metavar="K[,K...]",
        help="retrieved chunks; several values draw the score/tokens-vs-k figure",
    )
    run_.add_argument(
        "--methods",
        type=_methods,
        default=["lc", "rag", "self_route"],
        help="comma list of lc, rag, self-route, self-route-grounded (default: lc,rag,self-route)",
    )
    _route_settings(run_, "run")
    return run_


def _execution_arguments(run_: Any) -> None:
    run_.add_argument("--concurrency", type=_positive, default=4)
    run_.add_argument(
        "--prices", help="MODEL=IN/OUT per million tokens (comma separated) or a JSON file"
    )
    run_.add_argument("--cache", help="response cache file (default: the user cache folder)")
    run_.add_argument("--no-cache", action="store_true", help="do not read or write the cache")
    run_.add_argument("--on-error", choices=["record", "raise"], default="record")
    run_.add_argument(
        "--batch",
        action="store_true",
        help="run Self-Route as one batch job (one batch per phase; the oracle readers through "
        "a batch provider simulated in-process, a model through its provider's batch API) and "
        "print its cost against always-LC online/batch and Self-Route online",
    )
    run_.add_argument(
        "--dry-run", action="store_true", help="print estimated tokens and money, call nothing"
    )
    run_.add_argument("--out", default="selfroute-eval", help="output folder")
    run_.add_argument("--no-progress", action="store_true")


def _policy_arguments(parser: argparse.ArgumentParser) -> None:
    policy = parser.add_argument_group("Self-Route policies (plain Self-Route without them)")
    _route_settings(policy, "policy")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``eval`` on the main CLI's subparsers; the handler is ``args.func(args)``."""
    parser = subparsers.add_parser(
        "eval",
        help="evaluate LC, RAG and Self-Route on a labelled set (paper Table 1)",
        description=DESCRIPTION,
    )
    return configure(parser)


def build_parser() -> argparse.ArgumentParser:
    """A standalone parser (``python -m selfroute.eval``)."""
    return configure(argparse.ArgumentParser(prog="selfroute eval", description=DESCRIPTION))


def _readers(args: argparse.Namespace) -> tuple[Any, Any]:
    from selfroute.eval._readers import (
        ChatModelReader,
        FabricatingOracleReader,
        LatencyModel,
        OracleReader,
    )

    kind = args.reader or ("model" if args.model else None)
    if kind is None:
        raise ConfigurationError(
            "choose a reader: --model openai:NAME (or google:NAME, or NAME --base-url URL), or "
            "--reader oracle for a keyless run"
        )
    latency = getattr(args, "simulate_latency", None)
    if kind in ("oracle", "fabricating-oracle"):
        if args.model or args.lc_model:
            raise ConfigurationError(f"--reader {kind} calls no model; drop --model/--lc-model")
        model = LatencyModel.parse(latency) if latency is not None else None
        oracle: Any
        if kind == "oracle":
            oracle = OracleReader(latency=model)
        else:
            oracle = FabricatingOracleReader(
                rate=args.fabricate_rate,
                quote=args.fabricated_quote,
                seed=args.seed,
                latency=model,
            )
        return oracle, oracle
    if latency is not None:
        raise ConfigurationError(
            "--simulate-latency is for the scripted readers; a model run measures real latency"
        )
    if not args.model:
        raise ConfigurationError("--reader model needs --model")
    common = {
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "timeout": args.timeout,
    }
    reader = ChatModelReader.from_spec(args.model, base_url=args.base_url, **common)
    lc_reader = reader
    if args.lc_model:
        lc_reader = ChatModelReader.from_spec(
            args.lc_model, base_url=args.lc_base_url or args.base_url, **common
        )
    return reader, lc_reader


def _dataset(args: argparse.Namespace) -> tuple[list[Any], str]:
    from selfroute.eval._data import load_dataset, load_sample

    if args.sample:
        if args.data:
            raise ConfigurationError("give a data file or --sample, not both")
        return load_sample(), "SQuAD 2.0 sample (3 articles as one haystack)"
    if not args.data:
        raise ConfigurationError("give a data file, or --sample for the bundled one")
    items = load_dataset(
        args.data,
        format=args.format,
        documents=args.documents,
        haystack=args.haystack,
        metric=args.metric,
    )
    return items, Path(args.data).name


def config_from_args(args: argparse.Namespace) -> RouteConfig:
    """The :class:`~selfroute.RouteConfig` of the parsed eval arguments (policies included)."""
    return RouteConfig(**eval_config_options(RouteConfig, vars(args)))


def run(args: argparse.Namespace) -> int:
    """Run ``selfroute eval`` from parsed arguments; returns the exit code."""
    from selfroute.eval._estimate import estimate
    from selfroute.eval._prices import parse_prices
    from selfroute.eval._runner import evaluate

    try:
        items, name = _dataset(args)
        reader, lc_reader = _readers(args)
        prices = parse_prices(args.prices) if args.prices else None
        config = config_from_args(args)
        cache: Any = False if args.no_cache else (args.cache or True)
        common: dict[str, Any] = {
            "reader": reader,
            "lc_reader": lc_reader,
            "ks": args.k,
            "methods": args.methods,
            "config": config,
            "prices": prices,
            "cache": cache,
            "limit": args.limit,
        }
        if args.dry_run:
            print(estimate(items, output_tokens_per_call=args.max_tokens, **common).to_text())
            return 0
        if args.batch:
            from selfroute.eval._batch import run_batch_eval

            return run_batch_eval(items, args, reader, lc_reader, config, prices)
        summary = evaluate(
            items,
            concurrency=args.concurrency,
            on_error=args.on_error,
            progress=not args.no_progress,
            name=name,
            out=args.out,
            **common,
        )
    except (ConfigurationError, InvalidInputError) as exc:
        print(f"selfroute eval: error: {exc}", file=sys.stderr)
        return 2
    except SelfRouteError as exc:
        print(f"selfroute eval: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "selfroute eval: interrupted; answers received so far are cached, rerun to resume",
            file=sys.stderr,
        )
        return 130
    print(summary.to_markdown())
    out = Path(args.out)
    print("Wrote: " + ", ".join(str(out / f) for f in summary.files.values()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m selfroute.eval``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args))
