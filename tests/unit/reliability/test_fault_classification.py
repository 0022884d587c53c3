"""The adapters' helpers that classify provider faults and finish reasons (issue #16, 6 and 10)."""

from __future__ import annotations

import httpx
import openai
import pytest

import selfroute as sr
from selfroute._faults import TRUNCATING, classified, normalize_finish_reason, provider_rejection


def _openai_error(status: int, code: str | None = None) -> openai.APIStatusError:
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, request=request, json={"error": {"code": code}})
    cls = {
        400: openai.BadRequestError,
        401: openai.AuthenticationError,
        403: openai.PermissionDeniedError,
        404: openai.NotFoundError,
        429: openai.RateLimitError,
    }.get(status, openai.InternalServerError)
    return cls(f"Error code: {status}", response=response, body={"code": code})


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_rejections_are_recognised(status: int) -> None:
    assert provider_rejection(_openai_error(status, "model_not_found")) == status


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_transient_statuses_are_not_rejections(status: int) -> None:
    assert provider_rejection(_openai_error(status)) is None


def test_errors_without_a_status_are_transient() -> None:
    request = httpx.Request("POST", "http://127.0.0.1/")
    assert provider_rejection(openai.APITimeoutError(request)) is None
    assert provider_rejection(openai.APIConnectionError(request=request)) is None
    assert provider_rejection(TimeoutError("slow")) is None
    assert provider_rejection(ValueError("malformed JSON")) is None
    assert provider_rejection(ValueError("code", 401)) is None  # an int in args is not a status


def test_a_wrapped_status_is_found_through_the_cause() -> None:
    class Wrapper(Exception):
        pass

    try:
        try:
            raise _openai_error(401)
        except openai.APIStatusError as inner:
            raise Wrapper("the client wrapped it") from inner
    except Wrapper as outer:
        assert provider_rejection(outer) == 401


def test_classified_raises_a_configuration_error_naming_the_stage() -> None:
    with pytest.raises(sr.ModelConfigurationError) as info:
        with classified(sr.Stage.RAG, "gpt-4o-minii"):
            raise _openai_error(404, "model_not_found")
    error = info.value
    assert isinstance(error, sr.ConfigurationError) and isinstance(error, sr.ModelOutputError)
    assert error.context == {"stage": "rag", "status": 404, "model": "gpt-4o-minii"}
    assert "RAG-step model (gpt-4o-minii) rejected the request with HTTP 404" in str(error)
    assert isinstance(error.__cause__, openai.NotFoundError)
    with pytest.raises(sr.ModelConfigurationError, match="long-context model rejected"):
        with classified(sr.Stage.LONG_CONTEXT):
            raise _openai_error(401)


def test_classified_passes_transient_faults_unchanged() -> None:
    error = _openai_error(503)
    with pytest.raises(openai.InternalServerError) as info:
        with classified(sr.Stage.RAG):
            raise error
    assert info.value is error


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("stop", "stop"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("FinishReason.RECITATION", "content_filter"),
        ("max_tokens", "length"),
        ("end_turn", "stop"),
        ("tool_calls", "tool_calls"),
        ("incomplete", "incomplete"),
        ("something_new", "something_new"),
        (None, None),
        ("", None),
    ],
)
def test_finish_reasons_are_normalized(raw: object, expected: str | None) -> None:
    assert normalize_finish_reason(raw) == expected


def test_enum_finish_reasons_are_read_by_name() -> None:
    import enum

    class FinishReason(enum.Enum):
        MAX_TOKENS = 2

    assert normalize_finish_reason(FinishReason.MAX_TOKENS) == "length"


def test_truncating_reasons() -> None:
    assert {"length", "content_filter", "incomplete"} == TRUNCATING
