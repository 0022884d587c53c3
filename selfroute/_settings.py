"""Each route setting declared once: metadata on the :class:`~selfroute.RouteConfig` field.

A :class:`~selfroute.RouteConfig` field is declared with :func:`setting`, which stores a
:class:`SettingMeta` in the dataclass field's metadata (under :data:`META_KEY`): its help text,
whether the adapters take it under the field's own name, and the command-line settings
(:class:`CliOption`: flag, parser, default, help, subcommands, ``selfroute.toml`` key; the
environment variable is ``SELFROUTE_<NAME>``) that set it. Everything else is derived:

* :func:`adapter_settings` -- the keyword arguments the LangChain and LlamaIndex adapters pass to
  :class:`~selfroute.RouteConfig` as they are (``langchain_selfroute``'s ``ROUTE_CONFIG_SETTINGS``);
* :func:`cli_options` -- the route settings of the command line (``selfroute.cli._config.SETTINGS``
  takes them: flags, ``SELFROUTE_*`` variables, ``selfroute.toml`` keys, the docs' settings table);
* :func:`config_options` -- the :class:`~selfroute.RouteConfig` keyword arguments of resolved
  command-line values (``ask``, ``ask --batch``, ``chat``);
* :func:`answer_settings` -- the fields a batch job's file records because they can change an
  answer (``SettingMeta.answers``; a rerun may change the others freely);
* :func:`eval_options` and :func:`eval_config_options` -- ``selfroute eval``'s options of the
  setting (:class:`EvalOption`: flag, argument group, type, default, help; eval has its own
  flags and defaults, since it compares methods rather than answers questions) and the
  :class:`~selfroute.RouteConfig` keyword arguments of its parsed arguments.

Derived in the adapters too: :func:`adapter_kwargs` gives each adapter setting's keyword
argument (:class:`AdapterKwarg`: type, default, whether the adapter checks it before
``RouteConfig`` does, help); ``langchain_selfroute`` builds ``SelfRoute``'s pydantic fields from
them, ``llamaindex_selfroute`` checks ``SelfRouteQueryEngine``'s ``**settings`` against the same
fields, and :func:`document_settings` adds an ``Args:`` entry to either class's docstring for a
setting the hand-written text does not name yet.

Adding a route setting is one change: declare the field in ``selfroute/_flow/_config.py`` with
``setting(default, help=..., cli=CliOption(...), eval=EvalOption(...))`` (``cli=()`` keeps it off
the command line, as for objects such as ``token_counter``; ``eval=()`` off ``selfroute eval``;
``kwarg_type=`` when the adapters take another type than the field's, ``checked=False`` when
only ``RouteConfig`` checks the value) and validate it in ``RouteConfig.__post_init__``.
``tests/unit/selfroute/test_settings.py`` adds a throwaway field and follows it everywhere.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, cast, get_type_hints

from selfroute._errors import ConfigurationError

__all__ = [
    "ENV_PREFIX",
    "META_KEY",
    "AdapterKwarg",
    "CliOption",
    "EvalOption",
    "SettingMeta",
    "adapter_kwargs",
    "adapter_settings",
    "answer_settings",
    "cli_options",
    "config_options",
    "document_settings",
    "eval_config_options",
    "eval_ladder",
    "eval_number",
    "eval_options",
    "eval_positive_int",
    "eval_regex",
    "parse_bool",
    "parse_finite",
    "parse_ladder",
    "parse_non_negative_float",
    "parse_non_negative_int",
    "parse_number",
    "parse_positive_float",
    "parse_positive_int",
    "parse_regex",
    "parse_text",
    "setting",
    "setting_meta",
]

#: Prefix of the command line's environment variables.
ENV_PREFIX = "SELFROUTE_"
#: Key of a :class:`SettingMeta` in a dataclass field's metadata.
META_KEY = "selfroute"

_MISSING: Any = dataclasses.MISSING


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class CliOption:
    """A command-line setting that sets (part of) one :class:`~selfroute.RouteConfig` field.

    Attributes:
        name: Its name on the command line: attribute, ``selfroute.toml`` key and
            ``SELFROUTE_<NAME>``.
        flag: The flag (``--k``).
        parse: Converts a flag, environment or TOML value (raises ``ValueError`` when bad).
        default: Its value when nothing sets it (the command line's default, which may differ
            from the library's).
        help: One line for ``--help`` and the docs table.
        commands: The subcommands that take it.
        choices: Allowed values, if a closed set.
        metavar: Placeholder in ``--help``.
        default_doc: How the default reads in the docs (when not ``default`` itself).
        toml_key: Dotted key when not a top-level key of ``selfroute.toml``.
        boolean: A ``--flag/--no-flag`` switch.
        aliases: Extra flags (``-k``).
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
    boolean: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        """The environment variable (``SELFROUTE_<NAME>``)."""
        return ENV_PREFIX + self.name.upper()

    @property
    def key(self) -> str:
        """The key in ``selfroute.toml`` (dotted for a key inside a table)."""
        return self.toml_key or self.name


@dataclass(frozen=True)
class EvalOption:
    """A ``selfroute eval`` option that sets (part of) one :class:`~selfroute.RouteConfig` field.

    Attributes:
        name: Its attribute on the parsed arguments; a field's ``from_cli`` reads it under this
            name, so it is the :class:`CliOption`'s name when the field has ``from_cli``.
        flag: The flag (``--window``).
        group: The argument group of ``eval --help``: ``"run"`` or ``"policy"``.
        type: Converts the flag's text (raises ``argparse.ArgumentTypeError``); ``None``: text.
        default: Its value when the flag is not given.
        help: One line for ``--help`` (``None``: none).
        choices: Allowed values, if a closed set.
        metavar: Placeholder in ``--help``.
        switch: A flag without a value (``store_true``).
    """

    name: str
    flag: str
    group: str
    type: Callable[[str], Any] | None = None
    default: Any = None
    help: str | None = None
    choices: tuple[str, ...] | None = None
    metavar: str | None = None
    switch: bool = False

    def add_to(self, group: Any) -> None:
        """Add the option to an ``argparse`` parser or argument group."""
        kwargs: dict[str, Any] = {"dest": self.name}
        if self.help is not None:
            kwargs["help"] = self.help
        if self.switch:
            group.add_argument(self.flag, action="store_true", **kwargs)
            return
        kwargs["default"] = self.default
        for key in ("type", "choices", "metavar"):
            value = getattr(self, key)
            if value is not None:
                kwargs[key] = list(value) if key == "choices" else value
        group.add_argument(self.flag, **kwargs)


@dataclass(frozen=True)
class SettingMeta:
    """What a :class:`~selfroute.RouteConfig` field declares besides its type and default.

    Attributes:
        help: One line on what it does (the full story is ``RouteConfig``'s docstring).
        adapter: The adapters take it as a keyword argument under the field's name and pass it
            on unchanged (``False`` for the ones they resolve first: ``k``, ``prompts``,
            ``long_context_window``, ``long_context_model``).
        cli: The command-line settings that set it (empty: not on the command line).
        from_cli: Builds the field's value from the resolved command-line values (by
            :attr:`CliOption.name`), and from ``selfroute eval``'s (by :attr:`EvalOption.name`);
            default: the value of the one option.
        eval: The ``selfroute eval`` options that set it (empty: not an eval option).
        answers: It can change an answer (``False`` for what only changes a call's cost or how
            long it may take: a batch job's rerun may change those).
        kwarg_type: The type of the adapters' keyword argument when it is not the field's own
            (``str`` for an enum whose text ``RouteConfig`` converts; ``None``: the field's).
        checked: The adapters check (and coerce) the keyword argument against its type before
            ``RouteConfig`` sees it; ``False``: passed on as given, so a bad value gets
            ``RouteConfig``'s message.
    """

    help: str
    adapter: bool = True
    cli: tuple[CliOption, ...] = ()
    from_cli: Callable[[Mapping[str, Any]], Any] | None = None
    eval: tuple[EvalOption, ...] = ()
    answers: bool = True
    kwarg_type: Any = None
    checked: bool = True


@dataclass(frozen=True)
class AdapterKwarg:
    """One adapter keyword argument of a route setting (see :func:`adapter_kwargs`).

    Attributes:
        name: The keyword (the field's name).
        type: Its type (:attr:`SettingMeta.kwarg_type`, else the field's annotation).
        default: Its default: the field's, an enum's as its value (``"fill"``).
        checked: :attr:`SettingMeta.checked`.
        help: :attr:`SettingMeta.help`.
    """

    name: str
    type: Any
    default: Any
    checked: bool
    help: str


def setting(
    default: Any = _MISSING,
    *,
    default_factory: Any = _MISSING,
    help: str,
    adapter: bool = True,
    cli: CliOption | tuple[CliOption, ...] = (),
    from_cli: Callable[[Mapping[str, Any]], Any] | None = None,
    eval: EvalOption | tuple[EvalOption, ...] = (),
    answers: bool = True,
    kwarg_type: Any = None,
    checked: bool = True,
) -> Any:
    """A :class:`~selfroute.RouteConfig` field with its :class:`SettingMeta`."""
    options = (cli,) if isinstance(cli, CliOption) else tuple(cli)
    evals = (eval,) if isinstance(eval, EvalOption) else tuple(eval)
    if from_cli is None and (len(options) > 1 or len(evals) > 1):
        raise TypeError("a setting with several command-line options needs from_cli")
    meta = SettingMeta(
        help=help,
        adapter=adapter,
        cli=options,
        from_cli=from_cli,
        eval=evals,
        answers=answers,
        kwarg_type=kwarg_type,
        checked=checked,
    )
    if default_factory is not _MISSING:
        return dataclasses.field(default_factory=default_factory, metadata={META_KEY: meta})
    return dataclasses.field(default=default, metadata={META_KEY: meta})


def setting_meta(field: dataclasses.Field[Any]) -> SettingMeta | None:
    """The :class:`SettingMeta` of a dataclass field (``None`` if it has none)."""
    meta = field.metadata.get(META_KEY)
    return meta if isinstance(meta, SettingMeta) else None


def _fields(config_class: type) -> list[tuple[dataclasses.Field[Any], SettingMeta]]:
    out = []
    for f in dataclasses.fields(config_class):
        meta = setting_meta(f)
        if meta is None:
            raise TypeError(f"{config_class.__name__}.{f.name} is not declared with setting()")
        out.append((f, meta))
    return out


def adapter_settings(config_class: type) -> tuple[str, ...]:
    """The fields the adapters pass to ``config_class`` (``RouteConfig``) unchanged."""
    return tuple(f.name for f, meta in _fields(config_class) if meta.adapter)


def adapter_kwargs(config_class: type) -> tuple[AdapterKwarg, ...]:
    """The adapters' keyword arguments of ``config_class``'s adapter settings, in field order."""
    hints = get_type_hints(config_class)
    out = []
    for f, meta in _fields(config_class):
        if not meta.adapter:
            continue
        if f.default is not _MISSING:
            default = f.default
        elif f.default_factory is not _MISSING:
            default = cast(Callable[[], Any], f.default_factory)()
        else:
            raise TypeError(
                f"{config_class.__name__}.{f.name} needs a default to be an adapter setting"
            )
        if isinstance(default, Enum):
            default = default.value
        kind = meta.kwarg_type if meta.kwarg_type is not None else hints[f.name]
        out.append(AdapterKwarg(f.name, kind, default, meta.checked, meta.help))
    return tuple(out)


def document_settings(doc: str | None, config_class: type) -> str:
    """``doc`` with an ``Args:`` entry (``name: help.``) for each adapter setting of
    ``config_class`` that it names neither as an entry nor as a ````name```` literal.

    The hand-written text of a setting (an adapter's own notes) stays as it is; a setting
    declared since gets its declared help line, so an adapter's docstring names every setting.
    """
    text = doc or ""
    missing = [
        kw
        for kw in adapter_kwargs(config_class)
        if not re.search(rf"(^\s+{kw.name}:|``{kw.name}``)", text, re.M)
    ]
    if not missing:
        return text
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == "Args:"), None)
    if start is None:
        indent = "    "
        lines[len(lines) :] = ["", indent + "Args:"]
        start = len(lines) - 1
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > len(indent)
    ):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    entries = [f"{indent}    {kw.name}: {kw.help[:1].upper()}{kw.help[1:]}." for kw in missing]
    return "\n".join([*lines[:end], *entries, *lines[end:]])


def answer_settings(config_class: type) -> tuple[str, ...]:
    """The fields of ``config_class`` that can change an answer (``SettingMeta.answers``)."""
    return tuple(f.name for f, meta in _fields(config_class) if meta.answers)


def cli_options(config_class: type) -> tuple[CliOption, ...]:
    """Every command-line setting of ``config_class``'s fields, in field order."""
    return tuple(option for _, meta in _fields(config_class) for option in meta.cli)


def config_options(config_class: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``config_class`` (``RouteConfig``) keyword arguments that resolved command-line
    settings give.

    Args:
        config_class: ``RouteConfig`` (or a class declared the same way).
        values: Resolved command-line values by :attr:`CliOption.name` (a subcommand's
            settings); a field is set when every one of its options is among them.
    """
    out: dict[str, Any] = {}
    for f, meta in _fields(config_class):
        options = list(meta.cli)
        if not options or any(o.name not in values for o in options):
            continue
        if meta.from_cli is not None:
            out[f.name] = meta.from_cli(values)
        else:
            out[f.name] = _same(values[options[0].name])
    return out


def eval_options(config_class: type, group: str | None = None) -> tuple[EvalOption, ...]:
    """Every ``selfroute eval`` option of ``config_class``'s fields (of one argument group), in
    field order."""
    return tuple(
        option
        for _, meta in _fields(config_class)
        for option in meta.eval
        if group is None or option.group == group
    )


def eval_config_options(config_class: type, values: Mapping[str, Any]) -> dict[str, Any]:
    """The ``config_class`` (``RouteConfig``) keyword arguments of parsed ``selfroute eval``
    arguments (``vars(args)``): one per field that has eval options."""
    out: dict[str, Any] = {}
    for f, meta in _fields(config_class):
        if not meta.eval:
            continue
        if meta.from_cli is not None:
            out[f.name] = meta.from_cli(values)
        else:
            out[f.name] = values[meta.eval[0].name]
    return out


# Parsers of command-line, environment and TOML values (raise ValueError when bad) ------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_bool(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def parse_number(
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


parse_positive_int = parse_number(int, "a positive integer", lambda v: v < 1)
parse_positive_float = parse_number(float, "a positive number", lambda v: v <= 0)
parse_non_negative_float = parse_number(float, "a number >= 0", lambda v: v < 0)
parse_non_negative_int = parse_number(int, "an integer >= 0", lambda v: v < 0)


def parse_text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"expected a non-empty string, got {text!r}")
    return text.strip()


def parse_regex(text: Any) -> str:
    """A regular expression for :class:`selfroute.DeclinePattern` (checked here, used there)."""
    from selfroute._verdict import DeclinePattern

    pattern = parse_text(text)
    try:
        DeclinePattern(pattern)
    except ConfigurationError as exc:
        raise ValueError(str(exc)) from None
    return pattern


def parse_finite(text: Any) -> float:
    if isinstance(text, bool):
        raise ValueError(f"expected a number, got {text!r}")
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"expected a finite number, got {text!r}")
    return value


def parse_ladder(value: Any) -> tuple[int, ...]:
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


# Types of ``selfroute eval``'s options (raise argparse.ArgumentTypeError when bad) ----------


def _type_error(message: str) -> Exception:
    import argparse  # only when an eval flag is parsed: importing selfroute stays cheap

    return argparse.ArgumentTypeError(message)


def eval_positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _type_error(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise _type_error(f"expected a positive integer, got {text!r}")
    return value


def eval_number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _type_error(f"expected a number, got {text!r}") from None


def eval_ladder(text: str) -> list[int]:
    try:
        rungs = [int(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise _type_error(f"--k-ladder takes integers like 20 or 10,20, got {text!r}") from None
    if not rungs:
        raise _type_error("--k-ladder is empty")
    return rungs


def eval_regex(text: str) -> str:
    """A regular expression for :class:`selfroute.DeclinePattern` (checked here, used there)."""
    from selfroute._verdict import DeclinePattern

    try:
        DeclinePattern(text)
    except ConfigurationError as exc:
        raise _type_error(str(exc)) from None
    return text
