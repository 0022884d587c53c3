"""The CLI's framework-free OpenAI-compatible client against the loopback server: requests,
usage, streaming, structured output, retries and errors -- and the same Generation as
LangChain's ChatOpenAI for the same replies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from selfroute import ModelConfigurationError, ModelOutputError, Stage
from selfroute._faults import classified, processed_output
from selfroute._flow import StructuredRequest
from selfroute._structured import verdict_schema
from selfroute.cli import _openai
from selfroute.cli._clients import build_client, openai_window
from selfroute.cli._models import parse_model_spec
from selfroute.cli._openai import OpenAIChat, ProviderHTTPError, parse_usage, response_format
from tests.support._loopback import Reply
from tests.support.openai_server import ScriptedOpenAIServer

PROMPT = "Passages:\nMara kept the lamp.\n\nQuestion: Who kept the lamp?"


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries do not sleep; the waits they asked for are recorded."""
    waits: list[float] = []
    monkeypatch.setattr(_openai.time, "sleep", waits.append)
    return waits


def client(server: ScriptedOpenAIServer, **kwargs: Any) -> OpenAIChat:
    return OpenAIChat("gpt-4o-mini", api_key="sk-test-123456", base_url=server.base_url, **kwargs)


def scripted(server: ScriptedOpenAIServer, *replies: Reply) -> None:
    queue = list(replies)
    server.responder = lambda body: queue.pop(0) if len(queue) > 1 else queue[0]


# --------------------------------------------------------------------------------------------
# one call
# --------------------------------------------------------------------------------------------
def test_generate_sends_one_user_message_and_reads_usage_model_and_finish(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(
        openai_server,
        Reply("Mara.", prompt_tokens=120, completion_tokens=3, cached_tokens=64, model="gpt-x-1"),
    )
    gen = client(openai_server, temperature=0.3).generate(PROMPT)
    assert (gen.text, gen.model, gen.finish_reason) == ("Mara.", "gpt-x-1", "stop")
    assert gen.usage is not None and gen.usage.source == "provider"
    assert (gen.usage.input_tokens, gen.usage.output_tokens, gen.usage.total_tokens) == (
        120,
        3,
        123,
    )
    assert gen.usage.cached_input_tokens == 64
    body = openai_server.requests[0]
    assert body["messages"] == [{"role": "user", "content": PROMPT}]
    assert (body["model"], body["temperature"], body["stream"]) == ("gpt-4o-mini", 0.3, False)
    assert "response_format" not in body and "stream_options" not in body
    assert openai_server.headers[0]["authorization"] == "Bearer sk-test-123456"
    assert openai_server.paths[0] == "/v1/chat/completions"


def test_a_cut_reply_reports_its_finish_reason(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("Mara kept", finish_reason="length"))
    assert client(openai_server).generate(PROMPT).finish_reason == "length"


def test_usage_parsing() -> None:
    usage = parse_usage(
        {
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "prompt_tokens_details": {"cached_tokens": 4, "audio_tokens": None},
            "completion_tokens_details": {"reasoning_tokens": 1},
        }
    )
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 2, 12)
    assert usage.cached_input_tokens == 4
    assert usage.extra == {
        "input_token_details": {"cache_read": 4},
        "output_token_details": {"reasoning": 1},
    }
    assert parse_usage(None) is None
    assert parse_usage({"prompt_tokens": 0, "completion_tokens": 0}) is None  # reported nothing
    no_cache = parse_usage({"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6})
    assert no_cache is not None and no_cache.cached_input_tokens is None and no_cache.extra == {}


# --------------------------------------------------------------------------------------------
# streaming
# --------------------------------------------------------------------------------------------
def test_stream_yields_text_then_usage_model_and_finish(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(openai_server, Reply("Mara kept the lamp.", prompt_tokens=50, completion_tokens=5))
    chunks = list(client(openai_server).stream(PROMPT))
    assert "".join(c.text for c in chunks) == "Mara kept the lamp."
    assert len([c for c in chunks if c.text]) > 1  # pieces, not one blob
    last = chunks[-1]
    assert last.text == "" and last.finish_reason == "stop" and last.model == "loopback-model"
    assert last.usage is not None and (last.usage.input_tokens, last.usage.output_tokens) == (50, 5)
    body = openai_server.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_a_stream_that_ends_without_a_finish_reason_is_incomplete(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(openai_server, Reply("Mara kept", kind="cut"))
    chunks = list(client(openai_server).stream(PROMPT))
    assert "".join(c.text for c in chunks) == "Mara kept"
    assert chunks[-1].finish_reason == "incomplete"


def test_a_malformed_stream_is_a_model_output_error_marked_processed(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(openai_server, Reply("x", kind="malformed"))
    with pytest.raises(ModelOutputError, match="not JSON") as info:
        list(client(openai_server).stream(PROMPT))
    assert processed_output(info.value) == ""


def test_closing_a_stream_closes_the_connection(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.token_delay_s = 0.01
    scripted(openai_server, Reply(" ".join(["word"] * 200)))
    stream = client(openai_server).stream(PROMPT)
    assert next(stream).text
    stream.close()  # what a cancelled speculative call does
    with pytest.raises(StopIteration):
        next(stream)


# --------------------------------------------------------------------------------------------
# structured output
# --------------------------------------------------------------------------------------------
def test_structured_call_sends_a_json_schema_and_parses_the_object(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(openai_server, Reply(json.dumps({"answerable": True, "answer": "Mara"})))
    request = StructuredRequest("Answer as JSON.", verdict_schema())
    gen = client(openai_server).generate_structured(request)
    assert gen.structured == {"answerable": True, "answer": "Mara"}
    assert gen.structured_error is None and json.loads(gen.text) == gen.structured
    sent = openai_server.requests[0]["response_format"]
    assert sent == response_format(verdict_schema())
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "rag_verdict"
    assert "title" not in sent["json_schema"]["schema"]


def test_structured_call_without_an_object_says_why(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("unanswerable"))
    gen = client(openai_server).generate_structured(StructuredRequest("q", verdict_schema()))
    assert gen.structured is None and gen.text == "unanswerable"
    assert gen.structured_error and "could not be parsed" in gen.structured_error


def test_the_json_schema_is_what_chatopenai_sends() -> None:
    from langchain_openai.chat_models.base import _convert_to_openai_response_format

    schema = dict(verdict_schema())
    assert response_format(schema) == _convert_to_openai_response_format(schema)


# --------------------------------------------------------------------------------------------
# errors and retries
# --------------------------------------------------------------------------------------------
def test_a_rejection_is_not_retried_and_is_classified_as_configuration(
    openai_server: ScriptedOpenAIServer,
) -> None:
    scripted(openai_server, Reply("The model `gpt-nope` does not exist", status=404))
    chat = client(openai_server)
    with pytest.raises(ProviderHTTPError) as info:
        chat.generate(PROMPT)
    assert info.value.status_code == 404 and "does not exist" in str(info.value)
    assert isinstance(info.value, _openai.NotFoundError)  # named as the openai SDK names it
    assert openai_server.calls == 1
    with pytest.raises(ModelConfigurationError) as classified_info:
        with classified(Stage.LONG_CONTEXT, chat.name):
            chat.generate(PROMPT)
    message = str(classified_info.value)
    assert "long-context model (gpt-4o-mini)" in message and "HTTP 404" in message


def test_transient_errors_are_retried_then_raised(
    openai_server: ScriptedOpenAIServer, no_backoff: list[float]
) -> None:
    scripted(openai_server, Reply("overloaded", status=503))
    with pytest.raises(ProviderHTTPError) as info:
        client(openai_server, max_retries=2).generate(PROMPT)
    assert info.value.status_code == 503 and openai_server.calls == 3
    assert isinstance(info.value, _openai.InternalServerError)
    assert len(no_backoff) == 2 and all(0 < w <= 8 for w in no_backoff)


def test_a_rate_limit_then_success(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("slow down", status=429), Reply("Mara."))
    assert client(openai_server).generate(PROMPT).text == "Mara."
    assert openai_server.calls == 2


def test_no_retries_means_one_attempt(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("boom", status=500))
    with pytest.raises(ProviderHTTPError):
        client(openai_server, max_retries=0).generate(PROMPT)
    assert openai_server.calls == 1


def test_an_unreachable_server_names_the_url_and_the_model() -> None:
    import socket

    with socket.socket() as sock:  # a free port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    chat = OpenAIChat("m1", api_key="k", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    with pytest.raises(ModelOutputError) as info:
        chat.generate(PROMPT)
    assert f"127.0.0.1:{port}/v1/chat/completions" in str(info.value) and "m1" in str(info.value)
    assert not isinstance(info.value, ModelConfigurationError)  # transient: may escalate


def test_a_read_timeout_is_a_model_output_error(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("late", delay_s=2.0))
    with pytest.raises(ModelOutputError, match="could not reach"):
        client(openai_server, timeout=0.2, max_retries=0).generate(PROMPT)


def test_a_reply_with_no_choices_is_an_empty_reply(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("x", kind="no_choices"))
    with pytest.raises(ModelOutputError, match="no choices") as info:
        client(openai_server).generate(PROMPT)
    assert processed_output(info.value) == ""  # a 200 reply: the provider worked on it


def test_a_malformed_body_is_a_model_output_error(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("x", kind="malformed"))
    with pytest.raises(ModelOutputError, match="not JSON"):
        client(openai_server).generate(PROMPT)


def test_the_key_is_redacted_from_errors(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply("bad key sk-test-123456", status=401))
    with pytest.raises(_openai.AuthenticationError) as info:
        client(openai_server).generate(PROMPT)
    assert "sk-test-123456" not in str(info.value)


# --------------------------------------------------------------------------------------------
# the same as ChatOpenAI
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True])
def test_the_same_generation_as_langchain_chatopenai(
    openai_server: ScriptedOpenAIServer, stream: bool
) -> None:
    from langchain_openai import ChatOpenAI

    from langchain_selfroute._handlers import LangChainHandler, LongContextPlan
    from selfroute._flow import Generate

    reply = Reply("Mara kept it.", prompt_tokens=1300, completion_tokens=4, cached_tokens=1024)
    openai_server.responder = lambda body: reply
    llm = ChatOpenAI(
        model="gpt-4o-mini", api_key="k", base_url=openai_server.base_url, stream_usage=True
    )
    handler = LangChainHandler(
        retriever=None,
        llm=llm,
        long_context_llm=llm,
        plan=LongContextPlan(),
        config={},
        run_manager=None,
    )
    step = Generate(stage=Stage.RAG, prompt=PROMPT, question="Who kept the lamp?")
    ours = client(openai_server)
    if stream:
        theirs_chunks, our_chunks = list(handler.stream(step)), list(ours.stream(PROMPT))
        assert "".join(c.text for c in our_chunks) == "".join(c.text for c in theirs_chunks)
        mine, theirs = our_chunks[-1], theirs_chunks[-1]
    else:
        mine, theirs = ours.generate(PROMPT), handler.generate(step)  # type: ignore[assignment]
        assert mine.text == theirs.text
    assert (mine.usage, mine.model, mine.finish_reason) == (
        theirs.usage,
        theirs.model,
        theirs.finish_reason,
    )


def test_known_openai_windows_come_from_langchain_openais_profiles() -> None:
    from langchain_openai import ChatOpenAI

    profile = ChatOpenAI(model="gpt-4o-mini", api_key="k").profile
    assert profile is not None
    assert openai_window("gpt-4o-mini") == profile["max_input_tokens"]
    assert openai_window("qwen2.5-7b-instruct") is None


def test_build_client_for_a_local_server_needs_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    built = build_client(parse_model_spec("qwen", "http://127.0.0.1:9/v1"), timeout=5)
    assert isinstance(built, OpenAIChat)
    assert (built.name, built.url, built.timeout) == (
        "qwen",
        "http://127.0.0.1:9/v1/chat/completions",
        5,
    )
    assert built.window is None
    offline = build_client(parse_model_spec("offline"))
    assert offline.name == "offline-extractive" and offline.window is None
    assert offline.generate_structured(StructuredRequest("q", verdict_schema())) is None
    with pytest.raises(Exception, match="verdict='structured'"):
        offline.generate_structured(StructuredRequest("q", verdict_schema(), required=True))


def test_the_base_url_comes_from_the_environment_like_chatopenai(
    openai_server: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(variable, raising=False)
    assert OpenAIChat("m", api_key="k").url == "https://api.openai.com/v1/chat/completions"
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)  # what the openai SDK reads
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    assert OpenAIChat("m", api_key="k").generate(PROMPT).text
    assert openai_server.headers[-1]["openai-organization"] == "org-1"
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")  # ChatOpenAI's, read first
    assert OpenAIChat("m", api_key="k").base_url == "http://127.0.0.1:9/v1"
    explicit = OpenAIChat("m", api_key="k", base_url=openai_server.base_url + "/")
    assert explicit.base_url == openai_server.base_url  # --base-url wins


class _ResettingServer(ScriptedOpenAIServer):
    """Sends a few stream events, then drops the connection inside the chunked body."""

    def stream_events(self, done: Any) -> Any:
        events = list(super().stream_events(done))
        yield from events[:4]
        raise ConnectionResetError("simulated reset mid-stream")


def test_a_connection_cut_mid_stream_is_an_error_not_an_end() -> None:
    with _ResettingServer(lambda body: Reply("Mara kept the lamp for thirty-one years.")) as srv:
        stream = client(srv).stream(PROMPT)
        first = next(stream)
        assert first.text
        with pytest.raises(ModelOutputError, match="broke off"):
            list(stream)


def test_https_trusts_certifi_unless_the_environment_names_certificates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ssl

    import certifi

    seen: list[Any] = []
    monkeypatch.setattr(ssl, "create_default_context", lambda cafile=None: seen.append(cafile))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    assert OpenAIChat("m", api_key="k", base_url="http://127.0.0.1:9/v1")._tls() is None
    OpenAIChat("m", api_key="k", base_url="https://api.openai.com/v1")._tls()
    monkeypatch.setenv("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
    OpenAIChat("m", api_key="k", base_url="https://api.openai.com/v1")._tls()
    assert seen == [certifi.where(), None]


def test_a_streamed_structured_reply_gives_its_json_text_then_the_object(
    openai_server: ScriptedOpenAIServer,
) -> None:
    text = json.dumps({"answerable": True, "answer": "caf\u00e9 \U0001d11e"})  # \\u escapes
    scripted(openai_server, Reply(text, piece_chars=3))
    request = StructuredRequest("q", verdict_schema())
    chunks = list(client(openai_server).stream_structured(request))
    assert "".join(c.structured_delta for c in chunks) == text
    assert len([c for c in chunks if c.structured_delta]) == -(-len(text) // 3)
    last = chunks[-1]
    assert last.structured == {"answerable": True, "answer": "café 𝄞"}
    assert last.finish_reason == "stop" and last.usage is not None
    body = openai_server.requests[0]
    assert body["stream"] is True and body["response_format"]["type"] == "json_schema"


def test_a_cut_off_streamed_object_is_no_verdict(openai_server: ScriptedOpenAIServer) -> None:
    scripted(openai_server, Reply('{"answerable": true, "answer": "Thirty', kind="cut"))
    chunks = list(client(openai_server).stream_structured(StructuredRequest("q", verdict_schema())))
    assert chunks[-1].structured is None and chunks[-1].structured_error
    assert chunks[-1].finish_reason == "incomplete"


def test_tool_call_argument_deltas_are_the_object_text() -> None:
    reader = _openai.StructuredStream("m")
    call = {"index": 0, "id": "c", "type": "function", "function": {"name": "v", "arguments": ""}}
    events = [
        {"choices": [{"delta": {"role": "assistant", "tool_calls": [call]}}]},
        {
            "choices": [
                {"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"answ'}}]}}
            ]
        },
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "function": {"arguments": 'erable": true, "answer": "4"}'}}
                        ]
                    }
                }
            ]
        },
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}], "model": "m-1"},
    ]
    assert [reader.feed(e) for e in events] == ["", '{"answ', 'erable": true, "answer": "4"}', ""]
    last = reader.last()
    assert last.structured == {"answerable": True, "answer": "4"} and last.model == "m-1"
