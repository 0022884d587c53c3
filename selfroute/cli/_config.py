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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError

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
#: Prefix of the environment variables.
ENV_PREFIX = "SELFROUTE_"

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _bool(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _number(
    cast: Callable[[Any], float], what: str, rejects: Callable[[float], bool]
) -> Callable[[Any], Any]:
    """A parser: ``cast(text)`` unless ``text`` is a bool or ``rejects`` the value."""

    def parse(text: Any) -> Any:
        if isinstance(text, bool):
            raise ValueError(f"expected {what}, got {text!r}")
        value = cast(text)
        if rejects(value):
            raise ValueError(f"expected {what}, got {text!r}")
        return value

    return parse


_positive_int = _number(int, "a positive integer", lambda v: v < 1)
_positive_float = _number(float, "a positive number", lambda v: v <= 0)
_non_negative_float = _number(float, "a number >= 0", lambda v: v < 0)
_non_negative_int = _number(int, "an integer >= 0", lambda v: v < 0)


def _text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected a non-empty string, got {text!r}")
    return text.strip()


def _regex(text: Any) -> str:
    """A regular expression for :class:`selfroute.DeclinePattern` (checked here, used there)."""
    from selfroute._verdict import DeclinePattern

    pattern = _text(text)
    try:
        DeclinePattern(pattern)
    except ConfigurationError as exc:
        raise ValueError(str(exc)) from None
    return pattern


def _finite(text: Any) -> float:
    if isinstance(text, bool):
        raise ValueError(f"expected a number, got {text!r}")
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value


def _ladder(value: Any) -> tuple[int, ...]:
    """``20``, ``"10,20"`` or ``[10, 20]`` -> ``(10, 20)``; ``""``/``[]`` -> ``()`` (off)."""
    if isinstance(value, bool):
        raise ValueError(f"expected integers like 10,20, got {value!r}")
    if isinstance(value, int):
        parts: list[Any] = [value]
    elif isinstance(value, str):
        parts = [p.strip() for p in value.split(",") if p.strip()]
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        raise ValueError(f"expected integers like 10,20, got {value!r}")
    rungs = []
    for part in parts:
        if isinstance(part, (bool, float)):
            raise ValueError(f"expected integers like 10,20, got {value!r}")
        try:
            rung = int(part)
        except (TypeError, ValueError):
            raise ValueError(f"expected integers like 10,20, got {value!r}") from None
        if rung < 1:
            raise ValueError(f"expected positive integers, got {value!r}")
        rungs.append(rung)
    return tuple(rungs)


@dataclass(frozen=True)
class Setting:
    """One configurable setting.

    Attributes:
        name: Key in ``selfroute.toml`` and attribute name.
        flag: Command-line flag.
        parse: Converts a flag, environment or TOML value.
        default: Value when nothing sets it.
        help: One-line description (also the docs table).
        commands: The subcommands that take it.
        choices: Allowed values, if a closed set.
        metavar: Placeholder in ``--help``.
        default_doc: How the default reads in the docs (when not ``default`` itself).
        toml_key: Where it lives in ``selfroute.toml`` when not at the top level under
            ``name`` (``pre_route.min_top_score``: the ``min_top_score`` key of ``[pre_route]``).
    """

    name: str
    flag: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    commands: tuple[str, ...]
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    default_doc: str | None = None
    toml_key: str | None = None

    @property
    def env(self) -> str:
        """The environment variable (``SELFROUTE_<NAME>``)."""
        return ENV_PREFIX + self.name.upper()

    @property
    def key(self) -> str:
        """The key in ``selfroute.toml`` (dotted for a key inside a table)."""
        return self.toml_key or self.name


_STORE = ("index", "ask", "chat", "stats", "migrate", "unlock")
_QUERY = ("ask", "chat")
_VERDICT = ("ask", "chat", "verdicts")

#: Every setting of the command line.
SETTINGS: tuple[Setting, ...] = (
    Setting("store", "--store", _text, ".selfroute", "folder of the embedded store and the BM25 index", _STORE, metavar="DIR"),
    Setting("collection", "--collection", _text, "selfroute", "collection name (documents go to NAME__documents)", _STORE, metavar="NAME"),
    Setting("chroma_url", "--chroma-url", _text, None, "use a Chroma server (chromadb.HttpClient) instead of the embedded store", _STORE, metavar="URL", default_doc="embedded store"),
    Setting("embedding", "--embedding", _text, None, "embedding: default (Chroma's all-MiniLM-L6-v2), offline (hashing, no network), openai, google; KIND:MODEL picks a model", ("index", "ask", "chat"), metavar="KIND", default_doc="as recorded; `default` for a new collection"),
    Setting("embedding_base_url", "--embedding-base-url", _text, None, "OpenAI-compatible server for --embedding openai", ("index", "ask", "chat"), metavar="URL", default_doc="OpenAI"),
    Setting("chunk_words", "--chunk-words", _positive_int, None, "words per chunk of a new collection", ("index",), metavar="N", default_doc="`300` (as recorded for an existing one)"),
    Setting("follow_symlinks", "--follow-symlinks", _bool, False, "follow symbolic links that point outside the folders given", ("index",)),
    Setting("max_file_mb", "--max-file-mb", _positive_float, 100.0, "skip files larger than this many megabytes", ("index",), metavar="MB"),
    Setting("progress", "--progress", _text, "auto", "progress on stderr: auto (only on a terminal), always, never", ("index", "stats", "migrate"), choices=("auto", "always", "never")),
    Setting("retrieval", "--retrieval", _text, "hybrid", "hybrid (dense + BM25 fused by RRF), dense or bm25", _QUERY, choices=("hybrid", "dense", "bm25")),
    Setting("k", "--k", _positive_int, 5, "chunks retrieved for the RAG step", _QUERY, metavar="N"),
    Setting("model", "--model", _text, "openai:gpt-4o-mini", "RAG-step model: openai:NAME, google:NAME, or NAME with --base-url", _QUERY, metavar="SPEC"),
    Setting("lc_model", "--lc-model", _text, None, "long-context model (same forms as --model)", _QUERY, metavar="SPEC", default_doc="`--model`"),
    Setting("base_url", "--base-url", _text, None, "OpenAI-compatible server for --model (vLLM, Ollama, llama.cpp server); no key needed", _QUERY, metavar="URL", default_doc="the provider's API"),
    Setting("lc_base_url", "--lc-base-url", _text, None, "server for --lc-model", _QUERY, metavar="URL", default_doc="`--base-url` for a bare `--lc-model NAME`"),
    Setting("temperature", "--temperature", _non_negative_float, 0.0, "sampling temperature of both models", _QUERY, metavar="T"),
    Setting("timeout", "--timeout", _positive_float, 120.0, "seconds per model call", _QUERY, metavar="S"),
    Setting("max_retries", "--max-retries", _non_negative_int, 2, "retries of a failed model call", _QUERY, metavar="N"),
    Setting("retrieval_timeout", "--retrieval-timeout", _positive_float, 30.0, "seconds per store call (retrieval, loading the documents); a store that does not answer is a store error", _QUERY, metavar="S"),
    Setting("deadline", "--deadline", _positive_float, None, "seconds for the whole question, across every step (retrieval, both model calls, streaming); past it the question fails", _QUERY, metavar="S", default_doc="none"),
    Setting("max_question_tokens", "--max-question-tokens", _positive_int, None, "refuse a question longer than this many tokens before any call (never truncated)", _QUERY, metavar="TOKENS", default_doc="no limit"),
    Setting("lc_window", "--lc-window", _positive_int, None, "long-context window in tokens; the document is fitted into it", _QUERY, metavar="TOKENS", default_doc="the model's known window, else unfitted"),
    Setting("overflow", "--overflow", _text, "fill", "when the document does not fit: fill (most relevant chunks), truncate_middle, error", _QUERY, choices=("fill", "truncate_middle", "error")),
    Setting("strict", "--strict", _bool, False, "only the word 'unanswerable' counts as a decline", _VERDICT),
    Setting("decline_pattern", "--decline-pattern", _regex, None, "a regular expression (case-insensitive) that also marks an answer as a decline, for a model that declines in words the rules miss (e.g. '^keine angaben')", _VERDICT, metavar="REGEX", default_doc="none"),
    Setting("k_ladder", "--k-ladder", _ladder, (), "larger retrievals to try, in order, while the RAG step declines, before the long context (e.g. 20: k chunks, then 20)", _QUERY, metavar="K[,K...]", default_doc="none"),
    Setting("pre_route", "--pre-route", _bool, False, "send global questions ('summarise the whole ...', 'overall') straight to the long context", _QUERY, toml_key="pre_route.global_questions"),
    Setting("min_top_score", "--min-top-score", _finite, None, "send questions whose best retrieved chunk scores under this straight to the long context (on the retriever's score scale; `selfroute calibrate` picks it)", _QUERY, metavar="X", default_doc="off", toml_key="pre_route.min_top_score"),
    Setting("score_scale", "--score-scale", _text, None, "the score scale --min-top-score was fitted on (written by `selfroute calibrate`); a threshold from another retriever's scale is refused", _QUERY, choices=("bm25", "bm25s", "rrf", "cosine"), default_doc="not recorded", toml_key="pre_route.score_scale"),
    Setting("speculate_below", "--speculate-below", _finite, None, "start the long-context call alongside the RAG call when the best retrieved chunk scores under this (saves the RAG latency on questions that escalate; a cancelled call's tokens are reported as wasted)", _QUERY, metavar="X", default_doc="off"),
    Setting("verdict", "--verdict", _text, "sentinel", "how the RAG step declines: the sentinel word, a structured {answerable, answer} object, or structured when the model supports it", _QUERY, choices=("sentinel", "structured", "auto")),
    Setting("grounded", "--grounded", _bool, False, "answers quote their supporting sentences, checked against the text: an unverified RAG answer escalates, an unverified long-context answer is withheld", _QUERY),
    Setting("prices", "--prices", _text, None, "MODEL=IN/OUT per million tokens (comma separated) or a JSON file, for money in the report", _QUERY, metavar="SPEC", default_doc="no money shown"),
)  # fmt: skip

_BY_NAME = {s.name: s for s in SETTINGS}
_BY_KEY = {s.key: s for s in SETTINGS}
#: Tables of ``selfroute.toml`` whose keys are settings.
TABLES = frozenset(k.split(".", 1)[0] for k in _BY_KEY if "." in k)
_BOOL_FLAGS = {"follow_symlinks", "strict", "pre_route", "grounded"}


def add_settings(parser: argparse.ArgumentParser, command: str) -> None:
    """Add the flags of ``command``'s settings to ``parser`` (defaults unset, resolved later)."""
    group = parser.add_argument_group("settings (flag > SELFROUTE_* env > selfroute.toml)")
    for s in SETTINGS:
        if command not in s.commands:
            continue
        text = f"{s.help} (env {s.env}; default: {s.default_doc or s.default})"
        if s.name in _BOOL_FLAGS:
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
        names = [s.flag, "-k"] if s.name == "k" else [s.flag]
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

    def __init__(self, values: Mapping[str, Any], sources: Mapping[str, str]) -> None:
        self._values = dict(values)
        self._sources = dict(sources)

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
    return Settings(values, sources)


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
