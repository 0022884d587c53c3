"""Masking of API keys and bearer tokens in text that selfroute records or raises.

Provider errors sometimes echo the request's credentials (a proxy that returns the headers, an
"invalid API key sk-..." message). selfroute never puts such text into a result, a step record or
one of its own exception messages without passing it through :func:`redact` first.

What is masked:

* OpenAI-style keys: ``sk-...``, ``sk-proj-...``, ``sk-svcacct-...`` (and ``sk-ant-...``).
* Google API keys: ``AIza...``, and ``?key=...`` in URLs.
* Groq ``gsk_...``, xAI ``xai-...`` and Hugging Face ``hf_...`` tokens.
* Bearer tokens: ``Authorization: Bearer <token>``, ``bearer <token>``.
* Passwords in URLs: ``http://user:password@host`` shows as ``http://user:[REDACTED]@host``
  (:func:`url_credentials` takes them out of a URL to send as HTTP basic auth).
* ``api_key=...`` / ``"api-key": "..."`` / ``x-goog-api-key: ...`` style assignments.
* The *current* values of the environment variables in :data:`SECRET_ENV_VARS` (read at call
  time, so a key set after import is still masked), and any value given to
  :func:`register_secret`, or held by a model client given to
  :func:`register_model_secrets` (the adapters call it for every model they wrap, so a key of any
  shape passed in code -- a 32-hex Azure key, say -- is masked too).

Error text built from an exception is also *capped* (:func:`cap_text`): a provider exception whose
repr holds a whole request body must not put a document into an error message.

Logs written by other libraries (the provider SDK, httpx) are outside selfroute's control; attach
:class:`RedactingFilter` to your log handlers to mask them too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import threading
from collections.abc import Iterable
from typing import Any

__all__ = [
    "REDACTED",
    "SECRET_ENV_VARS",
    "RedactingFilter",
    "cap_text",
    "describe_exception",
    "redact",
    "redact_exception",
    "register_model_secrets",
    "register_secret",
    "url_credentials",
]

#: What a secret is replaced with.
REDACTED = "[REDACTED]"

#: Environment variables whose current values are always masked.
SECRET_ENV_VARS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "ANTHROPIC_API_KEY",
    "COHERE_API_KEY",
    "MISTRAL_API_KEY",
    "LANGSMITH_API_KEY",
    "LANGCHAIN_API_KEY",
    "GROQ_API_KEY",
    "XAI_API_KEY",
    "HF_TOKEN",
    "HUGGINGFACEHUB_API_TOKEN",
    "TOGETHER_API_KEY",
    "DEEPSEEK_API_KEY",
)

#: Error text built from an exception is cut to this many characters.
MAX_ERROR_CHARS = 1000

#: Values shorter than this are not treated as secrets (masking "x" everywhere helps nobody).
_MIN_SECRET_LEN = 8

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Bearer tokens first, so "Bearer sk-..." keeps the scheme word.
    (re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}"), r"\1" + REDACTED),
    # key = value assignments (headers, query strings, JSON, kwargs reprs).
    (
        re.compile(
            r"(?i)((?:x-goog-)?api[_-]?key[\"']?\s*[:=]\s*[\"']?)(?![\"'\s]|\[REDACTED\])"
            r"[^\s\"'&,;)}\]]{8,}"
        ),
        r"\1" + REDACTED,
    ),
    # Keys in query strings (the Gemini REST API takes ``?key=...``).
    (
        re.compile(r"([?&](?:key|api_key|access_token)=)(?!\[REDACTED\])[^\s&#\"']{8,}"),
        r"\1" + REDACTED,
    ),
    # OpenAI / Anthropic style secret keys.
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    # Google API keys.
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{20,}"), REDACTED),
    # Groq, xAI and Hugging Face tokens.
    (re.compile(r"\b(?:gsk_|xai-|hf_)[A-Za-z0-9_\-]{20,}"), REDACTED),
    # The password of a URL's user info (``scheme://user:password@host``). Matches start only at
    # "://" and stop at white space, "/" or "@": linear in the text.
    (re.compile(r"(://[^\s/@:\[\]]*:)(?!\[REDACTED\]@)[^\s/@]+@"), r"\1" + REDACTED + "@"),
)

_registry_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str) -> None:
    """Mask ``value`` from now on wherever selfroute redacts (for keys not held in env vars).

    Args:
        value: The secret. Values shorter than 8 characters are ignored.
    """
    if isinstance(value, str) and len(value) >= _MIN_SECRET_LEN:
        with _registry_lock:
            _registered.add(value)


def _literal_secrets(extra: Iterable[str]) -> list[str]:
    values = {os.environ.get(name, "") for name in SECRET_ENV_VARS}
    with _registry_lock:
        values.update(_registered)
    values.update(extra)
    # Longest first, so a key that contains another is masked whole.
    return sorted((v for v in values if v and len(v) >= _MIN_SECRET_LEN), key=len, reverse=True)


def redact(text: str, *, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with API keys, bearer tokens and known secret values replaced.

    Args:
        text: Any text (an error message, a log line). Non-strings are converted with ``str``.
        secrets: Extra literal values to mask for this call.

    Returns:
        The text with every secret replaced by ``[REDACTED]``.

    Example:
        >>> redact("401: invalid key sk-proj-abcdefghijklmnopqrstuv")
        '401: invalid key [REDACTED]'
    """
    out = text if isinstance(text, str) else str(text)
    for value in _literal_secrets(secrets):
        out = out.replace(value, REDACTED)
    for pattern, replacement in _PATTERNS:
        out = pattern.sub(replacement, out)
    return out


def url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its user info, and the ``(user, password)`` it held (percent-decoded), or
    ``None``. The password is registered for redaction (:func:`register_secret`).

    Example:
        >>> url_credentials("http://alice:pw@127.0.0.1:8000/v1")
        ('http://127.0.0.1:8000/v1', ('alice', 'pw'))
    """
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    clean = urlunsplit(parts._replace(netloc=hostport))
    user, password = unquote(user), unquote(password)
    register_secret(password)
    return clean, (user, password)


def cap_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut.

    Example:
        >>> cap_text("x" * 30, 10)
        'xxxxxxxxxx... [20 more characters cut]'
    """
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters cut]"


def redact_exception(exc: BaseException) -> str:
    """``repr(exc)`` with secrets masked and capped (what selfroute records for a failed step)."""
    try:
        text = repr(exc)
    except Exception:  # a broken __repr__ must not hide the failure
        text = f"{type(exc).__name__}(<unprintable>)"
    return cap_text(redact(text))


def describe_exception(exc: BaseException) -> str:
    """``"TypeName: message"`` with secrets masked and capped (for a one-line error report)."""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except Exception:  # a broken __str__ must not hide the failure
        text = f"{type(exc).__name__}: <unprintable>"
    return cap_text(redact(text))


_SECRET_FIELD = re.compile(r"(?i)(api_?key|api_?token|secret|password|access_?token|^token$)")
_WRAPPED = ("bound", "llm", "model", "runnable", "default")


def register_model_secrets(model: object, _depth: int = 0) -> None:
    """Register the credentials a model client holds (``api_key``, ``openai_api_key``, ...).

    Reads the model's fields whose names look like credentials (pydantic ``SecretStr`` values
    included) and registers every string with :func:`register_secret`, following wrappers
    (``.bound`` of a ``RunnableBinding``, ``.llm``, ...) a few levels deep. Never raises.

    Args:
        model: A LangChain chat model, a LlamaIndex LLM, or anything with such fields.
    """
    if model is None or isinstance(model, (str, bytes, int, float)) or _depth > 3:
        return
    names: set[str] = set()
    fields = getattr(type(model), "model_fields", None)
    if isinstance(fields, dict):
        names.update(str(n) for n in fields)
    with contextlib.suppress(TypeError):  # no __dict__
        names.update(str(n) for n in vars(model))
    for name in names:
        if not _SECRET_FIELD.search(name):
            continue
        try:
            value: Any = getattr(model, name, None)
            reveal = getattr(value, "get_secret_value", None)
            if callable(reveal):
                value = reveal()
        except Exception:  # a property that fails is not a credential we can read
            continue
        if isinstance(value, str):
            register_secret(value)
    for name in _WRAPPED:
        inner = getattr(model, name, None) if name in names else None
        if inner is not None and inner is not model and not isinstance(inner, str):
            register_model_secrets(inner, _depth + 1)


class RedactingFilter(logging.Filter):
    """A :class:`logging.Filter` that masks secrets in log records (message and traceback).

    Attach it to handlers (``handler.addFilter(RedactingFilter())``) to mask keys that provider
    SDKs or your own code might log. It formats the message (``msg % args``) and the exception
    text once, redacts both, and never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place; always keep it."""
        try:
            message = record.getMessage()
        except Exception:  # malformed args: leave the record for logging to report
            return True
        record.msg = redact(message)
        record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
