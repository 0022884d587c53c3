"""Async model clients for ``selfroute mcp`` and ``selfroute serve``.

The server answers many questions at once on one event loop, so its model calls must never block
it. Each of ``ask``'s (sync) clients gets an async twin that sends the same request and reads the
same reply:

* :class:`AsyncOpenAIChat` -- :class:`~selfroute.cli._openai.OpenAIChat` over
  ``httpx.AsyncClient``: the same body (built by the sync client's code), the same provider usage,
  finish reason and errors (:class:`~selfroute.cli._openai.ProviderHTTPError` per status), the same
  retries of transient failures. A cancelled task closes the connection, so the provider stops
  generating.
* :class:`AsyncOffline` -- the keyless extractive reader, run in a worker thread (it is CPU only).
* :class:`AsyncLangChain` -- a LangChain chat model (``google:`` specs) through ``ainvoke`` and
  ``astream``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, Protocol

from selfroute._errors import MissingDependencyError, ModelOutputError
from selfroute._faults import INCOMPLETE, mark_processed, normalize_finish_reason
from selfroute._flow import Generation, GenerationChunk, StructuredRequest
from selfroute.cli._clients import LangChainChat, OfflineChat
from selfroute.cli._openai import (
    RETRY_STATUSES,
    STREAM_DONE,
    OpenAIChat,
    StructuredStream,
    backoff_s,
    error_message,
    parse_usage,
    reply_generation,
    retry_after,
    status_error,
    stream_broke,
    stream_event,
    structured_generation,
)

__all__ = ["AsyncChatClient", "AsyncLangChain", "AsyncOffline", "AsyncOpenAIChat", "async_client"]


class AsyncChatClient(Protocol):
    """What the server's step handler awaits."""

    name: str
    window: int | None

    async def agenerate(self, prompt: str) -> Generation:
        """One call."""
        ...

    def astream(self, prompt: str) -> AsyncIterator[GenerationChunk]:
        """One streamed call; usage, model and finish reason on the last piece."""
        ...

    async def agenerate_structured(self, request: StructuredRequest) -> Generation | None:
        """One call asking for ``request.schema``; ``None``: send the plain prompt."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx comes with the serve extra
        raise MissingDependencyError("httpx", "serve") from exc
    return httpx


class AsyncOpenAIChat(OpenAIChat):
    """:class:`~selfroute.cli._openai.OpenAIChat`, awaited: one ``httpx.AsyncClient`` per model.

    Build it with :meth:`of` from the sync client ``ask`` configured (model, key, base URL,
    temperature, timeout, retries, window), so both send the same requests.
    """

    _http: Any = None

    @classmethod
    def of(cls, client: OpenAIChat) -> AsyncOpenAIChat:
        """The async twin of ``client`` (same settings; the key stays registered for redaction)."""
        twin = cls.__new__(cls)
        twin.__dict__.update(vars(client))
        twin._http = None
        return twin

    def __repr__(self) -> str:
        return f"AsyncOpenAIChat(model={self.model!r}, base_url={self.base_url!r})"

    def _client(self) -> Any:
        if self._http is None:
            httpx = _httpx()
            timeout = httpx.Timeout(self.timeout) if self.timeout else httpx.Timeout(None)
            limits = httpx.Limits(max_connections=512, max_keepalive_connections=64)
            self._http = httpx.AsyncClient(
                timeout=timeout, limits=limits, verify=self._tls() or True
            )
        return self._http

    async def aclose(self) -> None:
        """Close the connection pool."""
        http, self._http = self._http, None
        if http is not None:
            await http.aclose()

    def _headers(self) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Bearer {self._key}",
            "User-Agent": "selfroute-serve",
        }

    async def _send(self, data: bytes, *, stream: bool) -> Any:
        """POST ``data``; the response, open when ``stream`` (retrying transient failures).

        Raises:
            ProviderHTTPError: An error status (after the retries, for a transient one).
            ModelOutputError: The server could not be reached or timed out.
        """
        httpx = _httpx()
        http = self._client()
        attempt = 0
        while True:
            wait: float | None = None
            try:
                request = http.build_request(
                    "POST", self.url, content=data, headers=self._headers()
                )
                response = await http.send(request, stream=stream)
            except httpx.HTTPError as exc:  # refused, reset, timeout
                error: ModelOutputError = self._failure(exc)
            else:
                if response.status_code < 400:
                    return response
                raw = await response.aread()
                await response.aclose()
                message = error_message(raw)
                wait = retry_after(response.headers)
                code = response.status_code
                error = status_error(code)(
                    f"HTTP {code} from {self.url} (model {self.model}): {message}",
                    status_code=code,
                    body=message,
                    model=self.model,
                )
                if code not in RETRY_STATUSES:
                    raise error
            if attempt >= self.max_retries:
                raise error
            await asyncio.sleep(wait if wait is not None else backoff_s(attempt))
            attempt += 1

    async def _json(self, data: bytes) -> dict[str, Any]:
        httpx = _httpx()
        response = await self._send(data, stream=False)
        try:
            payload = response.json()
        except (ValueError, httpx.HTTPError):
            error = ModelOutputError(
                f"the model server at {self.url} (model {self.model}) sent a reply that is not "
                f"JSON: {response.content[:200]!r}",
                model=self.model,
            )
            mark_processed(error)
            raise error from None
        if not isinstance(payload, dict):
            raise ModelOutputError(f"the model server at {self.url} sent {type(payload).__name__}")
        return payload

    async def agenerate(self, prompt: str) -> Generation:
        """One non-streaming call."""
        data = await self._json(self._body(prompt, stream=False, schema=None))
        return reply_generation(data, self._choice(data), self.model)

    async def agenerate_structured(self, request: StructuredRequest) -> Generation | None:
        """One call with a ``json_schema`` response format (as the sync client's)."""
        data = await self._json(self._body(request.prompt, stream=False, schema=request.schema))
        return structured_generation(data, self._choice(data), self.model)

    async def astream_structured(
        self, request: StructuredRequest
    ) -> AsyncIterator[GenerationChunk]:
        """A streamed call with a ``json_schema`` response format, as the sync client's
        ``stream_structured``: the object's JSON text (``structured_delta``), then the object.
        Closing (or cancelling) the iterator closes the connection."""
        httpx = _httpx()
        body = self._body(request.prompt, stream=True, schema=request.schema)
        response = await self._send(body, stream=True)
        reader = StructuredStream(self.model)
        try:
            async for line in response.aiter_lines():
                data = stream_event(line, url=self.url, model=self.model)
                if data is None:
                    continue
                if data is STREAM_DONE:
                    break
                if delta := reader.feed(data):
                    yield GenerationChunk(structured_delta=delta)
        except httpx.HTTPError as exc:
            raise stream_broke(exc, url=self.url, model=self.model) from exc
        finally:
            await response.aclose()
        if not reader.seen_choice:
            raise self._empty()
        yield reader.last()

    async def astream(self, prompt: str) -> AsyncIterator[GenerationChunk]:
        """A streamed call: text pieces, then one chunk with usage, model and finish reason.
        Closing (or cancelling) the iterator closes the connection."""
        httpx = _httpx()
        response = await self._send(self._body(prompt, stream=True, schema=None), stream=True)
        model, usage, finish = self.model, None, None
        seen_choice = False
        try:
            async for line in response.aiter_lines():
                data = stream_event(line, url=self.url, model=self.model)
                if data is None:
                    continue
                if data is STREAM_DONE:
                    break
                model = str(data.get("model") or model)
                if data.get("usage"):
                    usage = parse_usage(data["usage"])
                for choice in data.get("choices") or ():
                    seen_choice = True
                    finish = normalize_finish_reason(choice.get("finish_reason")) or finish
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        yield GenerationChunk(text=str(text))
        except httpx.HTTPError as exc:
            raise stream_broke(exc, url=self.url, model=self.model) from exc
        finally:
            await response.aclose()
        if not seen_choice:
            raise self._empty()
        yield GenerationChunk(text="", usage=usage, model=model, finish_reason=finish or INCOMPLETE)


class AsyncOffline:
    """The extractive reader, in a worker thread (CPU only: no I/O to await)."""

    window: int | None = None

    def __init__(self, client: OfflineChat) -> None:
        self.client = client
        self.name = client.name

    async def agenerate(self, prompt: str) -> Generation:
        """Answer from the prompt's passages, or decline."""
        return await asyncio.to_thread(self.client.generate, prompt)

    async def astream(self, prompt: str) -> AsyncIterator[GenerationChunk]:
        """The answer as one piece."""
        gen = await self.agenerate(prompt)
        yield GenerationChunk(text=gen.text)
        yield GenerationChunk(text="", model=self.name)

    async def agenerate_structured(self, request: StructuredRequest) -> Generation | None:
        """``None`` (or refused when required), as the sync reader."""
        return self.client.generate_structured(request)

    async def aclose(self) -> None:
        """Nothing to release."""


class AsyncLangChain:
    """A LangChain chat model, awaited (``ainvoke``/``astream``), read as :class:`LangChainChat`."""

    def __init__(self, client: LangChainChat) -> None:
        self.client = client
        self.name = client.name
        self.window = client.window

    async def agenerate(self, prompt: str) -> Generation:
        """``llm.ainvoke``."""
        output = await self.client.llm.ainvoke(self.client.message(prompt))
        return self.client.generation(output)

    async def astream(self, prompt: str) -> AsyncIterator[GenerationChunk]:
        """``llm.astream``: the text pieces, then the merged usage, model and finish reason."""
        from langchain_selfroute._handlers import message_text

        merged: Any = None
        async for piece in self.client.llm.astream(self.client.message(prompt)):
            merged = piece if merged is None else merged + piece
            text = message_text(piece)
            if text:
                yield GenerationChunk(text=text)
        final = self.client.generation(merged if merged is not None else "", streamed=True)
        yield GenerationChunk(
            text="", usage=final.usage, model=final.model, finish_reason=final.finish_reason
        )

    async def agenerate_structured(self, request: StructuredRequest) -> Generation | None:
        """``with_structured_output(...).ainvoke``, as the sync client calls it."""
        from langchain_selfroute._handlers import structured_generation, structured_model

        runnable = structured_model(self.client.llm, request)
        if runnable is None:
            return None
        output = await runnable.ainvoke(self.client.message(request.prompt))
        return structured_generation(output, self.name)

    async def aclose(self) -> None:
        """Nothing to release."""


def async_client(client: Any) -> AsyncChatClient:
    """The async twin of one of ``ask``'s model clients.

    Raises:
        ConfigurationError: A client kind the server cannot await.
    """
    if isinstance(client, OpenAIChat):
        return AsyncOpenAIChat.of(client)
    if isinstance(client, OfflineChat):
        return AsyncOffline(client)
    if isinstance(client, LangChainChat):
        return AsyncLangChain(client)
    from selfroute._errors import ConfigurationError

    raise ConfigurationError(f"the server cannot call {type(client).__name__} asynchronously")
