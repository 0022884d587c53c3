"""The ``selfroute`` command: index a folder of documents, ask questions, see what Self-Route saved.

::

    selfroute index docs/                 # .txt .md .html .pdf -> ./.selfroute (embedded Chroma)
    selfroute ask "What is the passkey?"  # answer, route, tokens per step, always-LC, ratio
    selfroute chat                        # the same, interactively
    selfroute stats                       # what the store holds
    selfroute eval ...                    # LC vs RAG vs Self-Route on a labelled set
    selfroute calibrate RESULTS           # pre-routing settings from an eval run -> selfroute.toml
    selfroute verdicts OUTPUTS.jsonl      # what the decline detector says of your model's outputs

Settings come from flags, then ``SELFROUTE_*`` environment variables, then ``selfroute.toml``
(see ``docs/cli.md``). Frameworks are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from selfroute._errors import ConfigurationError, InvalidInputError, SelfRouteError

__all__ = ["build_parser", "main"]

_EPILOG = (
    "Settings: flag > SELFROUTE_* environment variable > selfroute.toml (in the working folder or "
    "--config FILE). Keys: OPENAI_API_KEY, GOOGLE_API_KEY, or --base-url for a local "
    "OpenAI-compatible server."
)


def _common() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--config",
        metavar="FILE",
        default=os.environ.get("SELFROUTE_CONFIG") or None,
        help="settings file (default: ./selfroute.toml if present; env SELFROUTE_CONFIG)",
    )
    parent.add_argument("--debug", action="store_true", help="show tracebacks and library warnings")
    return parent


def _run(name: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        from selfroute.cli import _commands

        return int(getattr(_commands, f"run_{name}")(args))

    return handler


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``selfroute`` command.

    Args:
        command: Build only this subcommand's parser (``main`` passes the one on its command
            line: a command does not pay for importing the others' options, such as ``eval``'s).
            ``None``, or a name that is not a command: every subcommand.
    """
    from selfroute import __version__

    parser = argparse.ArgumentParser(
        prog="selfroute",
        description="Self-Route (Li et al., EMNLP 2024): answer from retrieved chunks, fall back "
        "to the whole document only when the model declines -- and see the tokens it saved.",
        epilog=_EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"selfroute {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    common = _common()
    chosen = [command] if command in _COMMANDS else list(_COMMANDS)
    for name in chosen:
        _COMMANDS[name](sub, common)
    return parser


def _add_index(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    index = sub.add_parser(
        "index",
        parents=[common],
        help="index .txt/.md/.html/.pdf files into the store (idempotent, crash-safe)",
        description="Read, chunk (300 words), embed and store files and folders; re-running "
        "adds nothing, a changed file replaces its old chunks, --prune removes deleted files.",
        epilog=_EPILOG,
    )
    index.add_argument("paths", nargs="+", metavar="PATH", help="files and folders to index")
    index.add_argument(
        "--prune",
        action="store_true",
        help="remove documents under PATH whose files are gone or no longer readable",
    )
    index.add_argument("--json", action="store_true", help="print the report as JSON")
    add_settings(index, "index")
    index.set_defaults(func=_run("index"))


def _add_ask(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    ask = sub.add_parser(
        "ask",
        parents=[common],
        help="answer a question with Self-Route over the store (or one --doc file)",
        description="Retrieve the top-k chunks and ask the model to answer from them or write "
        "'unanswerable'; only then answer again from the whole document(s). Prints the answer, "
        "the route and why, tokens per step, the always-long-context counterfactual, the ratio "
        "and the latency.",
        epilog=_EPILOG,
    )
    ask.add_argument("question", nargs="*", metavar="QUESTION", help="the question ('-': stdin)")
    _query_flags(ask)
    ask.add_argument(
        "--batch",
        metavar="FILE.jsonl",
        help="answer every question of FILE.jsonl through the provider's batch API (half the "
        "price, within 24 h; resumable: the job state is kept in FILE.jsonl.job.json)",
    )
    add_settings(ask, "ask")
    ask.set_defaults(func=_run("ask"))


def _add_chat(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    chat = sub.add_parser(
        "chat",
        parents=[common],
        help="ask questions interactively over the store (EOF or 'exit' ends)",
        description="An interactive loop over the same store; each answer is reported like "
        "`selfroute ask`. Questions are read from stdin when it is not a terminal.",
        epilog=_EPILOG,
    )
    _query_flags(chat)
    add_settings(chat, "chat")
    chat.set_defaults(func=_run("chat"))


def _add_stats(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    stats = sub.add_parser(
        "stats",
        parents=[common],
        help="what the store holds: documents, chunks, words, embedding, BM25 index",
        epilog=_EPILOG,
    )
    stats.add_argument("--documents", action="store_true", help="list every document")
    stats.add_argument("--json", action="store_true", help="print JSON")
    add_settings(stats, "stats")
    stats.set_defaults(func=_run("stats"))


def _add_migrate(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    migrate = sub.add_parser(
        "migrate",
        parents=[common],
        help="copy the collection (documents, chunks, embeddings, BM25 index) to a Chroma server",
        description="Copy the store's collection -- every committed document, its chunks with "
        "their embeddings (nothing is embedded again) and the BM25 index -- to a `chroma run` "
        "server; then use it with --chroma-url URL. Re-running completes an interrupted copy.",
        epilog=_EPILOG,
    )
    migrate.add_argument(
        "--to-server", required=True, metavar="URL", help="the Chroma server (http://host:port)"
    )
    migrate.add_argument(
        "--to-collection", metavar="NAME", help="collection name there (default: the same)"
    )
    migrate.add_argument("--json", action="store_true", help="print the report as JSON")
    add_settings(migrate, "migrate")
    migrate.set_defaults(func=_run("migrate"))


def _add_unlock(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    unlock = sub.add_parser(
        "unlock",
        parents=[common],
        help="clear what a dead `index`/`migrate` left: its writer mark, orphan chunks, journal",
        description="A killed writer's mark on a server collection keeps every reader checking "
        "commit markers until a complete run from the same folder and host removes it. This "
        "deletes the chunks without a document record, clears the journal and removes the "
        "marks -- refused while this folder's writer holds its lock, or while a mark's writer "
        "may still be running (its process exists, or it ran on another host: --force).",
        epilog=_EPILOG,
    )
    unlock.add_argument(
        "--force",
        action="store_true",
        help="also remove marks this machine cannot check (another host, a process id in use): "
        "you know those runs are over",
    )
    unlock.add_argument("--json", action="store_true", help="print the report as JSON")
    add_settings(unlock, "unlock")
    unlock.set_defaults(func=_run("unlock"))


def _add_calibrate(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._calibrate import add_parser as add_calibrate

    add_calibrate(sub, [common], _EPILOG)


def _add_verdicts(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._verdicts import add_parser as add_verdicts

    add_verdicts(sub, [common], _EPILOG)


def _query_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--doc",
        metavar="FILE",
        help="Self-Route over this one file instead of the store (BM25 over its chunks)",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument(
        "--stream",
        action="store_true",
        help="stream the answer as it is written (with --json: one JSON event per line)",
    )
    parser.add_argument(
        "--show-sources", action="store_true", help="list the retrieved chunks after the answer"
    )


def _register_eval(sub: Any) -> None:
    try:
        from selfroute.eval.cli import add_parser
    except ImportError:  # the eval extra or module is not there: no `eval` command
        return
    add_parser(sub)


def _add_eval(sub: Any, common: argparse.ArgumentParser) -> None:
    _register_eval(sub)


def _serve_run(name: str) -> Any:
    def handler(args: argparse.Namespace) -> int:
        from selfroute._serve import _commands

        return int(getattr(_commands, f"run_{name}")(args))

    return handler


def _add_mcp(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    mcp = sub.add_parser(
        "mcp",
        parents=[common],
        help="serve Self-Route over the store as MCP tools on stdio (Claude Desktop, Cursor, VS Code)",
        description="An MCP server on stdin/stdout with the tools ask (Self-Route's answer, route, "
        "sources and savings), search (the top chunks, no model call) and stats. Takes the "
        "store, model and retrieval settings of `ask`. Needs the serve extra.",
        epilog=_EPILOG,
    )
    mcp.add_argument(
        "--doc",
        metavar="FILE",
        help="Self-Route over this one file instead of the store (BM25 over its chunks)",
    )
    add_settings(mcp, "mcp")
    mcp.set_defaults(func=_serve_run("mcp"))


def _add_serve(sub: Any, common: argparse.ArgumentParser) -> None:
    from selfroute.cli._config import add_settings

    serve = sub.add_parser(
        "serve",
        parents=[common],
        help="serve Self-Route over HTTP: /mcp (MCP) and /v1/chat/completions (OpenAI-compatible)",
        description="One HTTP server (uvicorn): the MCP tools at /mcp (streamable HTTP), Self-Route "
        "as an OpenAI-compatible model named `selfroute` at /v1/chat/completions and /v1/models, "
        "/healthz and /metrics. --keys gives each bearer key its own collection. Takes the store, "
        "model and retrieval settings of `ask`. Needs the serve extra.",
        epilog=_EPILOG,
    )
    add_settings(serve, "serve")
    serve.set_defaults(func=_serve_run("serve"))


#: Each subcommand, in the order ``--help`` lists them, with what adds its parser.
_COMMANDS: dict[str, Callable[[Any, argparse.ArgumentParser], None]] = {
    "index": _add_index,
    "ask": _add_ask,
    "chat": _add_chat,
    "stats": _add_stats,
    "migrate": _add_migrate,
    "unlock": _add_unlock,
    "eval": _add_eval,
    "calibrate": _add_calibrate,
    "verdicts": _add_verdicts,
    "mcp": _add_mcp,
    "serve": _add_serve,
}


def _error(message: str, exc: BaseException | None = None, args: Any = None, code: int = 1) -> None:
    """Report a failure: one redacted, capped, printable line on stderr; with ``--json`` also a
    JSON error object on stdout (so a script reading stdout always gets JSON)."""
    from selfroute._redact import cap_text, redact
    from selfroute.cli._output import printable

    text = cap_text(redact(message))
    print(f"selfroute: error: {printable(text)}", file=sys.stderr)
    if args is not None and getattr(args, "json", False):
        import json

        error: dict[str, Any] = {
            "type": type(exc).__name__ if exc is not None else "Error",
            "message": text,
            "exit_code": code,
        }
        partial = getattr(exc, "partial", None)
        payload: dict[str, Any] = {"event": "error", "error": error}
        if partial is not None and hasattr(partial, "to_dict"):
            payload["partial"] = partial.to_dict()  # what was already paid for
        sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
        sys.stdout.flush()


def _redacting_excepthook(kind: Any, value: Any, tb: Any) -> None:
    """``sys.excepthook`` for ``--debug``: the full traceback, with every secret masked."""
    import traceback

    from selfroute._redact import redact

    sys.stderr.write(redact("".join(traceback.format_exception(kind, value, tb))))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status.

    Exit status: 0 success; 1 the command failed (nothing indexed, store or model error); 2 bad
    usage or configuration (including a missing API key); 130 interrupted. With ``--json`` an
    error is also written to stdout as ``{"event": "error", "error": {...}}``.
    """
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    words = list(sys.argv[1:] if argv is None else argv)
    # the command is the first word (the top level has only --help and --version)
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(words)
    if getattr(args, "func", None) is None:
        parser.print_help(sys.stderr)
        return 2
    debug = bool(getattr(args, "debug", False)) or os.environ.get("SELFROUTE_DEBUG") == "1"
    if debug:  # the traceback that escapes main is printed redacted
        sys.excepthook = _redacting_excepthook
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore")
        try:
            return int(args.func(args) or 0)
        except KeyboardInterrupt:
            note = (
                " (the store stays consistent; run the same command again to finish)"
                if args.command == "index"
                else ""
            )
            print(f"\nselfroute: interrupted{note}", file=sys.stderr)
            return 130
        except BrokenPipeError:  # `selfroute ask ... | head`
            return 0
        except (ConfigurationError, InvalidInputError) as exc:
            if debug:
                raise
            _error(str(exc), exc, args, 2)
            return 2
        except SelfRouteError as exc:
            if debug:
                raise
            _error(str(exc), exc, args, 1)
            return 1
        except Exception as exc:
            if debug:
                raise
            from selfroute._redact import describe_exception

            _error(f"{describe_exception(exc)} (run with --debug for the traceback)", exc, args)
            return 1
