"""API keys never appear in what selfroute records or raises (``selfroute._redact``)."""

from __future__ import annotations

import logging
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import selfroute as sr
from selfroute._redact import REDACTED, redact, redact_exception
from tests.unit.reliability._fakes import ScriptedHandler, run

FAKE_OPENAI_KEY = "sk-proj-Zq8x1AAbbCCddEEffGGhhIIjjKK00112233"
FAKE_GOOGLE_KEY = "AIzaSyD-1234567890abcdefghijklmnopqrstu"
ENV_ONLY_KEY = "tenant-7f3a9c2b5e1d4f6a8b0c"  # no recognisable shape: masked only as an env value

KEYS = [
    pytest.param("sk-abcdefghijklmnopqrstuvwxyz012345", id="openai-legacy"),
    pytest.param(FAKE_OPENAI_KEY, id="openai-project"),
    pytest.param("sk-svcacct-AbCdEfGhIjKlMnOpQrStUv", id="openai-service-account"),
    pytest.param(FAKE_GOOGLE_KEY, id="google"),
]


@pytest.mark.parametrize("key", KEYS)
def test_redact_masks_key_shapes(key: str) -> None:
    text = f"Error code: 401 - Incorrect API key provided: {key}. See the docs."
    out = redact(text)
    assert key not in out and REDACTED in out
    assert out.startswith("Error code: 401 - Incorrect API key provided: ")


@pytest.mark.parametrize(
    "text, secret",
    [
        ("headers={'Authorization': 'Bearer eyJhbGciOi.JIUzI1NiJ9.abc-def'}", "eyJhbGciOi"),
        ("authorization: bearer ya29.a0AfH6SMBxyz_123", "ya29.a0AfH6SMBxyz_123"),
        ("GET /v1beta/models/x:generateContent?key=hunter2hunter2&alt=sse", "hunter2hunter2"),
        ('{"api_key": "opaque-secret-value-1"}', "opaque-secret-value-1"),
        ("x-goog-api-key: opaque-secret-value-2", "opaque-secret-value-2"),
        ("ChatOpenAI(api_key='opaque-secret-value-3')", "opaque-secret-value-3"),
    ],
)
def test_redact_masks_bearer_tokens_and_key_assignments(text: str, secret: str) -> None:
    assert secret not in redact(text)


def test_redact_masks_current_env_values(monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"proxy echoed: {ENV_ONLY_KEY}"
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    assert redact(text) == text  # not a key shape, not in the environment
    monkeypatch.setenv("GEMINI_API_KEY", ENV_ONLY_KEY)  # set after import: still masked
    assert redact(text) == f"proxy echoed: {REDACTED}"


def test_register_secret_and_per_call_secrets() -> None:
    sr.register_secret("registered-secret-0042")
    assert "registered-secret-0042" not in redact("x registered-secret-0042 y")
    assert redact("x one-off-secret-99 y", secrets=["one-off-secret-99"]) == f"x {REDACTED} y"
    sr.register_secret("short")  # too short to be a secret: ignored
    assert redact("a short text") == "a short text"


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "The sk-ier said: Bearer of bad news. Mara Holt kept the lamp for 31 years."
    assert redact(text) == text


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.text(max_size=40),
    suffix=st.text(max_size=40),
    body=st.text(alphabet=string.ascii_letters + string.digits + "_-", min_size=20, max_size=60),
    shape=st.sampled_from(["sk-", "sk-proj-", "AIza"]),
)
def test_redact_property_key_never_survives(
    prefix: str, suffix: str, body: str, shape: str
) -> None:
    key = shape + body
    out = redact(f"{prefix} {key} {suffix}")
    assert key not in out
    assert redact(out) == out  # idempotent


def test_redact_exception_survives_broken_repr() -> None:
    class Broken(Exception):
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert redact_exception(Broken()) == "Broken(<unprintable>)"


def test_selfroute_error_messages_are_redacted() -> None:
    err = sr.ModelOutputError(f"provider said: invalid key {FAKE_OPENAI_KEY}")
    assert FAKE_OPENAI_KEY not in str(err) and FAKE_OPENAI_KEY not in repr(err)


class EchoKeyError(Exception):
    """A provider error whose message echoes the key (as some proxies do)."""


def test_key_echoed_by_rag_error_is_redacted_everywhere(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_ONLY_KEY)
    fault = EchoKeyError(f"401 for key {ENV_ONLY_KEY} / {FAKE_OPENAI_KEY}")
    with caplog.at_level(logging.DEBUG):
        result = run(ScriptedHandler(rag=fault), "When was Mara Holt born?")
        logging.getLogger("app").warning("routed with error %s", result.error)
    dumped = str(result.to_dict()) + repr(result)
    for secret in (ENV_ONLY_KEY, FAKE_OPENAI_KEY):
        assert secret not in dumped and secret not in caplog.text
    assert result.error is not None and "EchoKeyError" in result.error
    assert REDACTED in result.error and REDACTED in (result.steps[0].error or "")


@pytest.mark.parametrize(
    "handler_kwargs, config, exc_type",
    [
        ({"rag": "FAULT"}, {"on_rag_error": "raise"}, sr.ModelOutputError),
        ({"rag": "unanswerable", "lc": "FAULT"}, {}, sr.LongContextError),
        ({"passages": "FAULT"}, {"on_retrieval_error": "raise"}, sr.RetrievalError),
        ({"passages": "FAULT", "document": None}, {}, sr.RetrievalError),
        ({"rag": "unanswerable", "document": "FAULT"}, {}, sr.LongContextError),
    ],
    ids=["rag-raise", "lc-call", "retrieval-raise", "retrieval-no-document", "lc-loader"],
)
def test_key_echoed_by_any_fault_is_redacted_in_exceptions(
    monkeypatch: pytest.MonkeyPatch,
    handler_kwargs: dict[str, object],
    config: dict[str, object],
    exc_type: type[Exception],
) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", ENV_ONLY_KEY)
    fault = EchoKeyError(f"denied: {ENV_ONLY_KEY}")
    kwargs = {k: (fault if v == "FAULT" else v) for k, v in handler_kwargs.items()}
    with pytest.raises(exc_type) as info:
        run(ScriptedHandler(**kwargs), "When was Mara Holt born?", **config)  # type: ignore[arg-type]
    assert ENV_ONLY_KEY not in str(info.value) and REDACTED in str(info.value)
    partial = getattr(info.value, "partial", None)
    if partial is not None:
        assert ENV_ONLY_KEY not in str(partial.to_dict())


def test_redacting_filter_masks_log_messages_and_tracebacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", ENV_ONLY_KEY)
    records: list[str] = []

    class ListHandler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = ListHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(sr.RedactingFilter())
    log = logging.getLogger("tests.reliability.redact")
    log.addHandler(handler)
    log.propagate = False
    try:
        log.warning("calling with key %s and %s", ENV_ONLY_KEY, FAKE_GOOGLE_KEY)
        try:
            raise EchoKeyError(f"bad key {ENV_ONLY_KEY}")
        except EchoKeyError:
            log.exception("provider failed")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    text = "\n".join(records)
    assert "calling with key" in text and "EchoKeyError" in text
    assert ENV_ONLY_KEY not in text and FAKE_GOOGLE_KEY not in text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("at http://alice:pw@127.0.0.1:9/v1 (x)", "at http://alice:[REDACTED]@127.0.0.1:9/v1 (x)"),
        ("'https://u:p%40ss@h.example'", "'https://u:[REDACTED]@h.example'"),
        ("http://:onlypw@h", "http://:[REDACTED]@h"),
        ("http://host/a:b@c", "http://host/a:b@c"),  # a path, not user info
        ("http://user@host", "http://user@host"),  # no password
    ],
)
def test_a_url_password_is_masked(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert redact(shown) == shown


def test_url_credentials_take_the_user_info_out() -> None:
    from selfroute._redact import url_credentials

    assert url_credentials("http://alice:p%40ss-word@127.0.0.1:9/v1") == (
        "http://127.0.0.1:9/v1",
        ("alice", "p@ss-word"),
    )
    assert url_credentials("http://127.0.0.1:9/v1") == ("http://127.0.0.1:9/v1", None)
    assert redact("echo p@ss-word") == f"echo {REDACTED}"  # registered
