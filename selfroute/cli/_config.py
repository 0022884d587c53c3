"""Settings of the command line: flags > ``SELFROUTE_*`` environment variables > ``selfroute.toml``.

Every setting is declared once in :data:`SETTINGS` (name, flag, type, default, help); the parser,
the environment lookup, the TOML lookup and the table in ``docs/cli.md`` all come from it. Most
settings are top-level keys of ``selfroute.toml``; the pre-routing ones live in a ``[pre_route]``
table (``global_questions``, ``min_top_score``), which ``selfroute calibrate`` writes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._flow._config import RouteConfig
from selfroute._settings import (
    ENV_PREFIX,
    CliOption,
    cli_options,
)
from selfroute._settings import (
    parse_bool as _bool,
)
from selfroute._settings import (
    parse_non_negative_float as _non_negative_float,
)
from selfroute._settings import (
    parse_non_negative_int as _non_negative_int,
)
from selfroute._settings import (
    parse_positive_float as _positive_float,
)
from selfroute._settings import (
    parse_positive_int as _positive_int,
)
from selfroute._settings import (
    parse_text as _text,
)
from selfroute.stores._hosted import DEFAULT_EMBEDDING_CONCURRENCY

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

__all__ = [
    "CONFIG_FILE",
    "ENV_PREFIX",
    "SETTINGS",
    "TABLES",
    "Setting",
    "Settings",
    "add_settings",
    "load_toml",
    "resolve",
    "settings_table",
]

#: Name of the optional configuration file looked up in the working directory.
CONFIG_FILE = "selfroute.toml"

#: One configurable setting (name, flag, parse, default, help, commands, choices, metavar,
#: default_doc, toml_key, boolean, aliases; ``env`` and ``key`` derived). The route settings are
#: declared on :class:`selfroute.RouteConfig`'s fields (see :mod:`selfroute._settings`).
Setting = CliOption


_STORE = ("index", "ask", "chat", "stats", "migrate", "unlock", "mcp", "serve")
_QUERY = ("ask", "chat", "mcp", "serve")
_VERDICT = ("ask", "chat", "verdicts", "mcp", "serve")
_SERVED = ("mcp", "serve")
_SERVE = ("serve",)

#: The route settings, declared on :class:`selfroute.RouteConfig`'s fields (see
#: :mod:`selfroute._settings`); the ones not placed in :data:`SETTINGS` come last.
_ROUTE = {s.name: s for s in cli_options(RouteConfig)}

#: Every setting of the command line.
SETTINGS: tuple[Setting, ...] = (
    Setting("store", "--store", _text, ".selfroute", "folder of the embedded store and the BM25 index", _STORE, metavar="DIR"),
    Setting("collection", "--collection", _text, "selfroute", "collection name (documents go to NAME__documents)", _STORE, metavar="NAME"),
    Setting("chroma_url", "--chroma-url", _text, None, "use a Chroma server (chromadb.HttpClient) instead of the embedded store", _STORE, metavar="URL", default_doc="embedded store"),
    Setting("embedding", "--embedding", _text, None, "embedding: default (Chroma's all-MiniLM-L6-v2), offline (hashing, no network), openai, google; KIND:MODEL picks a model", ("index", "ask", "chat", *_SERVED), metavar="KIND", default_doc="as recorded; `default` for a new collection"),
    Setting("embedding_base_url", "--embedding-base-url", _text, None, "OpenAI-compatible server for --embedding openai", ("index", "ask", "chat", *_SERVED), metavar="URL", default_doc="OpenAI"),
    Setting("embedding_concurrency", "--embedding-concurrency", _positive_int, DEFAULT_EMBEDDING_CONCURRENCY, "embedding requests in flight at once when indexing with a hosted embedding (openai, google); lower it if the provider rate-limits", ("index",), metavar="N"),
    Setting("chunk_words", "--chunk-words", _positive_int, None, "words per chunk of a new collection", ("index",), metavar="N", default_doc="`300` (as recorded for an existing one)"),
    Setting("follow_symlinks", "--follow-symlinks", _bool, False, "follow symbolic links that point outside the folders given", ("index",), boolean=True),
    Setting("max_file_mb", "--max-file-mb", _positive_float, 100.0, "skip files larger than this many megabytes", ("index",), metavar="MB"),
    Setting("progress", "--progress", _text, "auto", "progress on stderr: auto (only on a terminal), always, never", ("index", "stats", "migrate"), choices=("auto", "always", "never")),
    Setting("retrieval", "--retrieval", _text, "hybrid", "hybrid (dense + BM25 fused by RRF), dense or bm25", _QUERY, choices=("hybrid", "dense", "bm25")),
    _ROUTE["k"],
    Setting("model", "--model", _text, "openai:gpt-4o-mini", "RAG-step model: openai:NAME, google:NAME, or NAME with --base-url", _QUERY, metavar="SPEC"),
    Setting("lc_model", "--lc-model", _text, None, "long-context model (same forms as --model)", _QUERY, metavar="SPEC", default_doc="`--model`"),
    Setting("base_url", "--base-url", _text, None, "OpenAI-compatible server for --model (vLLM, Ollama, llama.cpp server); no key needed", _QUERY, metavar="URL", default_doc="the provider's API"),
    Setting("lc_base_url", "--lc-base-url", _text, None, "server for --lc-model", _QUERY, metavar="URL", default_doc="`--base-url` for a bare `--lc-model NAME`"),
    Setting("temperature", "--temperature", _non_negative_float, 0.0, "sampling temperature of both models", _QUERY, metavar="T"),
    Setting("timeout", "--timeout", _positive_float, 120.0, "seconds per model call", _QUERY, metavar="S"),
    Setting("max_retries", "--max-retries", _non_negative_int, 2, "retries of a failed model call", _QUERY, metavar="N"),
    _ROUTE["retrieval_timeout"],
    _ROUTE["deadline"],
    _ROUTE["max_question_tokens"],
    _ROUTE["max_lc_calls"],
    _ROUTE["max_lc_tokens"],
    _ROUTE["lc_window"],
    _ROUTE["overflow"],
    _ROUTE["strict"],
    _ROUTE["decline_pattern"],
    _ROUTE["k_ladder"],
    _ROUTE["pre_route"],
    _ROUTE["min_top_score"],
    Setting("score_scale", "--score-scale", _text, None, "the score scale --min-top-score was fitted on (written by `selfroute calibrate`); a threshold from another retriever's scale is refused", _QUERY, choices=("bm25", "bm25s", "rrf", "cosine"), default_doc="not recorded", toml_key="pre_route.score_scale"),
    _ROUTE["speculate_below"],
    _ROUTE["verdict"],
    _ROUTE["grounded"],
    _ROUTE["prices"],
    Setting("max_question_chars", "--max-question-chars", _positive_int, 20000, "refuse a longer question (characters) before any work", _SERVED, metavar="N"),
    Setting("host", "--host", _text, "127.0.0.1", "interface to listen on; anything but loopback needs --keys", _SERVE, metavar="HOST"),
    Setting("port", "--port", _non_negative_int, 8000, "port to listen on (0: a free one, printed at start)", _SERVE, metavar="PORT"),
    Setting("keys", "--keys", _text, None, "JSON file of bearer keys: {\"KEY\": {\"collection\": NAME, \"max_lc_calls\": N}}; each key sees only its collection", _SERVE, metavar="FILE", default_doc="no keys: loopback only, the --collection for everyone"),
    Setting("max_concurrency", "--max-concurrency", _positive_int, 32, "questions answered at once; more wait in line", _SERVE, metavar="N"),
    Setting("queue_timeout", "--queue-timeout", _positive_float, 30.0, "seconds a question may wait for a free slot before a 503", _SERVE, metavar="S"),
    Setting("max_body_kb", "--max-body-kb", _positive_int, 256, "largest request body in KiB; a larger one is a 413 before it is read", _SERVE, metavar="KB"),
    Setting("shutdown_timeout", "--shutdown-timeout", _positive_float, 60.0, "seconds SIGTERM waits for requests in flight", _SERVE, metavar="S"),
)  # fmt: skip
SETTINGS += tuple(s for s in _ROUTE.values() if s not in SETTINGS)

_BY_NAME = {s.name: s for s in SETTINGS}
_BY_KEY = {s.key: s for s in SETTINGS}
#: Tables of ``selfroute.toml`` whose keys are settings.
TABLES = frozenset(k.split(".", 1)[0] for k in _BY_KEY if "." in k)


def add_settings(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the flags of ``command``'s settings to ``parser`` (defaults unset, resolved later)."""
    group = parser.add_argument_group("settings (flag > SELFROUTE_* env > selfroute.toml)")
    for s in SETTINGS:
        if command not in s.commands:
            continue
        text = f"{s.help} (env {s.env}; default: {s.default_doc or s.default})"
        if s.boolean:
            group.add_argument(
                s.flag,
                dest=s.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=text,
            )
            continue
        kwargs: dict[str, Any] = {"dest": s.name, "default": None, "help": text}
        if s.choices:
            kwargs["choices"] = s.choices
        if s.metavar:
            kwargs["metavar"] = s.metavar
        names = [s.flag, *s.aliases]
        group.add_argument(*names, **kwargs)


def load_toml(path: str | os.PathLike[str] | None, *, explicit: bool) -> dict[str, Any]:
    """Read ``selfroute.toml``.

    Args:
        path: The file (``None``: ``./selfroute.toml`` if it exists).
        explicit: The user named the file: a missing file is an error.

    Raises:
        ConfigurationError: Missing (when explicit), unreadable, invalid TOML, or unknown keys.
    """
    file = Path(path) if path is not None else Path(CONFIG_FILE)
    if not file.is_file():
        if explicit:
            raise ConfigurationError(f"config file {file} does not exist")
        return {}
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(f"cannot read config file {file}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"config file {file} is not valid TOML: {exc}") from exc
    section = data.pop("selfroute", None)
    if isinstance(section, dict):  # allow a [selfroute] table too
        data = {**data, **section}
    flat: list[tuple[str, Any]] = []
    for key, value in data.items():
        table = key.replace("-", "_")
        if table in TABLES and isinstance(value, dict):
            flat += [(f"{table}.{sub.replace('-', '_')}", v) for sub, v in value.items()]
        else:
            flat.append((table, value))
    out: dict[str, Any] = {}
    for key, value in flat:
        setting = _BY_KEY.get(key)
        if setting is None:
            known = ", ".join(sorted(_BY_KEY))
            raise ConfigurationError(f"{file}: unknown setting {key!r}; known settings: {known}")
        out[setting.name] = value
    out["__file__"] = str(file)
    return out


class Settings:
    """Resolved settings; attribute access by name, :meth:`source` says where each came from."""

    def __init__(
        self, values: Mapping[str, Any], sources: Mapping[str, str], config_file: str = CONFIG_FILE
    ) -> None:
        self._values = dict(values)
        self._sources = dict(sources)
        #: The config file the ``file`` values came from.
        self.config_file = config_file

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def source(self, name: str) -> str:
        """``flag``, ``env``, ``file`` or ``default``."""
        return self._sources.get(name, "default")

    def is_set(self, name: str) -> bool:
        """Whether anything other than the default set ``name``."""
        return self.source(name) != "default"

    def to_dict(self) -> dict[str, Any]:
        """Values by name."""
        return dict(self._values)


def _convert(setting: Setting, value: Any, where: str) -> Any:
    try:
        parsed = setting.parse(value)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(f"{where}: invalid {setting.name}: {exc}") from None
    if setting.choices and parsed not in setting.choices:
        raise ConfigurationError(
            f"{where}: {setting.name} must be one of {', '.join(setting.choices)}, got {parsed!r}"
        )
    return parsed


def resolve(
    args: argparse.Namespace,
    command: str,
    *,
    environ: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Settings:
    """Resolve ``command``'s settings: flag, else ``SELFROUTE_*``, else ``selfroute.toml``, else
    the default.

    Raises:
        ConfigurationError: A value that does not parse, naming where it came from.
    """
    env = os.environ if environ is None else environ
    file_values = dict(config or {})
    file_name = str(file_values.pop("__file__", CONFIG_FILE))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for s in SETTINGS:
        if command not in s.commands:
            continue
        flag_value = getattr(args, s.name, None)
        if flag_value is not None:
            values[s.name] = _convert(s, flag_value, s.flag)
            sources[s.name] = "flag"
        elif env.get(s.env, "").strip():
            values[s.name] = _convert(s, env[s.env], s.env)
            sources[s.name] = "env"
        elif s.name in file_values:
            values[s.name] = _convert(s, file_values[s.name], file_name)
            sources[s.name] = "file"
        else:
            values[s.name] = s.default
    return Settings(values, sources, file_name)


def settings_table(settings: Sequence[Setting] = SETTINGS) -> str:
    """The Markdown table of every setting (as in ``docs/cli.md``)."""
    lines = [
        "| `selfroute.toml` key | flag | environment variable | default | commands | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for s in settings:
        key = f"[{s.key.replace('.', '] ')}" if "." in s.key else s.key
        if s.default_doc:
            default = s.default_doc
        elif isinstance(s.default, bool):
            default = f"`{str(s.default).lower()}`"
        elif isinstance(s.default, float):
            default = f"`{s.default:g}`"
        else:
            default = f"`{s.default}`"
        meaning = s.help.replace("|", "\\|")
        if s.choices:
            meaning += f" (`{'`, `'.join(s.choices)}`)"
        lines.append(
            f"| `{key}` | `{s.flag}` | `{s.env}` | {default} | {', '.join(s.commands)} | "
            f"{meaning} |"
        )
    return "\n".join(lines)
