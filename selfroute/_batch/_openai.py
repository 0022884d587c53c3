"""OpenAI Batch API backend (``/v1/files`` + ``/v1/batches``) through the ``openai`` client.

Any OpenAI-compatible server that implements the two endpoints works through ``base_url``. A
phase becomes one JSONL file of ``/v1/chat/completions`` request lines (``custom_id`` = the
request key), uploaded with ``purpose="batch"``; the batch carries the driver's token in its
``metadata`` so a crash between creating it and recording its id is recovered by listing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from selfroute._batch._common import (
    REFUSED,
    STRUCTURED_SUFFIX,
    reply_generation,
    structured_form,
)
from selfroute._batch._protocol import BatchPoll, BatchReply, BatchRequest, BatchState
from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._flow import Generate, Generation
from selfroute._result import Stage
from selfroute._usage import Usage

__all__ = ["OpenAIBatchBackend"]

ENDPOINT = "/v1/chat/completions"
TOKEN_KEY = "selfroute_token"
#: How many recent batches :meth:`OpenAIBatchBackend.find` looks through.
FIND_SCAN = 2000

_STATES = {
    "validating": BatchState.PENDING,
    "in_progress": BatchState.RUNNING,
    "finalizing": BatchState.RUNNING,
    "cancelling": BatchState.RUNNING,
    "completed": BatchState.COMPLETED,
    "failed": BatchState.FAILED,
    "expired": BatchState.EXPIRED,
    "cancelled": BatchState.CANCELLED,
}
#: Error codes of requests the batch never ran (retried, not a model failure).
_NOT_RUN = {"batch_expired", "batch_cancelled", "batch_failed"}


def _openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise MissingDependencyError("openai", "batch") from exc
    return openai


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def completion_generation(body: Mapping[str, Any], structured: bool = False) -> Generation:
    """A :class:`~selfroute.Generation` from a ``chat.completion`` body (structured when the
    request asked for a JSON schema)."""
    choices = body.get("choices") or [{}]
    message = choices[0].get("message") or {}
    text = message.get("content") or ""
    raw = body.get("usage") or {}
    usage = None
    if raw.get("prompt_tokens") or raw.get("completion_tokens"):
        details = raw.get("prompt_tokens_details") or {}
        cached = details.get("cached_tokens")
        usage = Usage.of(
            raw.get("prompt_tokens") or 0,
            raw.get("completion_tokens") or 0,
            total_tokens=raw.get("total_tokens"),
            cached_input_tokens=int(cached) if cached is not None else None,
        )
    finish = choices[0].get("finish_reason")
    return reply_generation(text, usage, body.get("model"), structured, finish)


class OpenAIBatchBackend:
    """OpenAI's Batch API (50% of the online price, results within 24 h).

    Args:
        model: The RAG-stage model (``gpt-4o-mini``).
        long_context_model: The long-context model (defaults to ``model``).
        client: An ``openai.OpenAI`` client (built from ``base_url``/``api_key`` otherwise).
        async_client: An ``openai.AsyncOpenAI`` client, for the async methods.
        base_url: Server base URL (``http://host/v1``) when building clients.
        api_key: API key when building clients (the client's default: ``OPENAI_API_KEY``).
        options: Extra body fields of every request (``temperature``, ``max_tokens``...).
        structured: Send a structured RAG step with ``response_format`` JSON schema (``False``:
            send its plain sentinel prompt, or fail if the step requires structured output).
        completion_window: The batch's window (``24h``, the only value OpenAI accepts today).
        name: The provider's name in messages and the job file.
    """

    one_model_per_batch = False
    #: OpenAI's limits per batch: 50,000 requests, a 200 MB input file (kept under it).
    max_requests = 50_000
    max_bytes = 190_000_000

    def __init__(
        self,
        model: str,
        *,
        long_context_model: str | None = None,
        client: Any = None,
        async_client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        options: Mapping[str, Any] | None = None,
        structured: bool = True,
        completion_window: str = "24h",
        name: str = "openai",
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigurationError("OpenAIBatchBackend needs a model name")
        self.models = {Stage.RAG: model, Stage.LONG_CONTEXT: long_context_model or model}
        self._client = client
        self._async_client = async_client
        self.base_url = base_url
        self.api_key = api_key
        self.options = dict(options or {})
        self.structured = structured
        self.completion_window = completion_window
        self.name = name

    # -- clients ---------------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The sync ``openai.OpenAI`` client."""
        if self._client is None:
            self._client = _openai().OpenAI(base_url=self.base_url, api_key=self.api_key)
        return self._client

    @property
    def async_client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client."""
        if self._async_client is None:
            self._async_client = _openai().AsyncOpenAI(base_url=self.base_url, api_key=self.api_key)
        return self._async_client

    def _where(self) -> str:
        url = self.base_url or str(getattr(self._client or self._async_client, "base_url", ""))
        return f"the {self.name} server at {url}" if url else f"the {self.name} server"

    def _unsupported(self, exc: Exception, what: str) -> Exception:
        """A clear error for a server without the Batch API (404/405 on its endpoints)."""
        status = getattr(exc, "status_code", None)
        if status in (404, 405, 501):
            return ConfigurationError(
                f"{self._where()} does not implement the OpenAI Batch API ({what} answered "
                f"{status}); batch runs need /v1/files and /v1/batches (OpenAI, Azure OpenAI "
                "and some compatible servers have them) -- run online instead"
            )
        return exc

    # -- building and reading ----------------------------------------------------------------------
    def model_for(self, step: Generate) -> str:
        """The model of ``step``'s stage."""
        return self.models[step.stage]

    def request_line(self, request: BatchRequest) -> dict[str, Any]:
        """The JSONL line of one request."""
        step = request.step
        body: dict[str, Any] = {"model": request.model, **self.options}
        prompt = step.prompt
        form = structured_form(step, self.structured, self.name)
        if form is not None:
            prompt = form.prompt
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": form.name, "schema": dict(form.schema)},
            }
        body["messages"] = [{"role": "user", "content": prompt}]
        custom_id = request.key + (STRUCTURED_SUFFIX if "response_format" in body else "")
        return {"custom_id": custom_id, "method": "POST", "url": ENDPOINT, "body": body}

    def _jsonl(self, requests: Sequence[BatchRequest]) -> bytes:
        lines = [json.dumps(self.request_line(r), ensure_ascii=False) for r in requests]
        return ("\n".join(lines) + "\n").encode("utf-8")

    @staticmethod
    def to_poll(batch: Any) -> BatchPoll:
        """A :class:`BatchPoll` from a batch object."""
        status = str(_field(batch, "status") or "")
        counts = _field(batch, "request_counts")
        return BatchPoll(
            _STATES.get(status, BatchState.RUNNING),
            status,
            completed=_field(counts, "completed") if counts is not None else None,
            failed=_field(counts, "failed") if counts is not None else None,
            total=_field(counts, "total") if counts is not None else None,
        )

    @staticmethod
    def parse_lines(text: str) -> list[BatchReply]:
        """Replies from the text of an output or error file."""
        replies: list[BatchReply] = []
        for raw in text.splitlines():
            if not raw.strip():
                continue
            line = json.loads(raw)
            custom_id = str(line.get("custom_id"))
            key = custom_id.removesuffix(STRUCTURED_SUFFIX)
            response = line.get("response") or {}
            error = line.get("error")
            status = response.get("status_code")
            body = response.get("body") or {}
            if error is None and status == 200:
                structured = custom_id.endswith(STRUCTURED_SUFFIX)
                replies.append(BatchReply(key, completion_generation(body, structured)))
                continue
            err = error or body.get("error") or {}
            code = str(_field(err, "code") or "")
            message = str(_field(err, "message") or f"status {status}")
            detail = f"{code}: {message}" if code else message
            if status is not None and status != 200:
                detail = f"HTTP {status} {detail}"
            replies.append(BatchReply(key, error=detail, retryable=code in _NOT_RUN))
        return replies

    def _create_args(self, token: str, file_id: str) -> dict[str, Any]:
        return {
            "input_file_id": file_id,
            "endpoint": ENDPOINT,
            "completion_window": self.completion_window,
            "metadata": {TOKEN_KEY: token},
        }

    # -- sync ----------------------------------------------------------------------------------
    def submit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Upload the phase's JSONL and create the batch; returns its id."""
        data = self._jsonl(requests)
        try:
            uploaded = self.client.files.create(
                file=(f"{token}.jsonl", data, "application/jsonl"), purpose="batch"
            )
        except Exception as exc:
            raise self._unsupported(exc, "POST /v1/files") from exc
        try:  # never retried blindly: a failed answer may hide a created (billed) batch
            batch = self.client.with_options(max_retries=0).batches.create(
                **self._create_args(token, uploaded.id)
            )
        except Exception as exc:
            found = self._find_after(exc, token)
            if found is None:
                raise self._unsupported(exc, "POST /v1/batches") from exc
            return found
        return str(batch.id)

    def _find_after(self, exc: Exception, token: str) -> str | None:
        """The batch the provider created although creating it failed, if any."""
        if getattr(exc, "status_code", None) in REFUSED:
            return None  # refused: nothing was created
        try:
            return self.find(token)
        except Exception:
            return None

    def find(self, token: str) -> str | None:
        """The batch created with ``token`` (looked up among the recent batches)."""
        for seen, batch in enumerate(self.client.batches.list(limit=100)):
            if seen >= FIND_SCAN:
                break
            if (_field(batch, "metadata") or {}).get(TOKEN_KEY) == token:
                return str(batch.id)
        return None

    def poll(self, batch_id: str) -> BatchPoll:
        """The batch's state."""
        return self.to_poll(self.client.batches.retrieve(batch_id))

    def fetch(self, batch_id: str) -> list[BatchReply]:
        """Read the output and error files of a terminal batch."""
        batch = self.client.batches.retrieve(batch_id)
        texts = [
            self.client.files.content(file_id).text
            for file_id in (batch.output_file_id, batch.error_file_id)
            if file_id
        ]
        return [r for t in texts for r in self.parse_lines(t)]

    def cancel(self, batch_id: str) -> None:
        """Cancel the batch."""
        self.client.batches.cancel(batch_id)

    # -- async ---------------------------------------------------------------------------------
    async def asubmit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Async :meth:`submit`."""
        data = self._jsonl(requests)
        client = self.async_client
        try:
            uploaded = await client.files.create(
                file=(f"{token}.jsonl", data, "application/jsonl"), purpose="batch"
            )
        except Exception as exc:
            raise self._unsupported(exc, "POST /v1/files") from exc
        try:
            batch = await client.with_options(max_retries=0).batches.create(
                **self._create_args(token, uploaded.id)
            )
        except Exception as exc:
            found = None
            if getattr(exc, "status_code", None) not in REFUSED:
                try:
                    found = await self.afind(token)
                except Exception:
                    found = None
            if found is None:
                raise self._unsupported(exc, "POST /v1/batches") from exc
            return found
        return str(batch.id)

    async def afind(self, token: str) -> str | None:
        """Async :meth:`find`."""
        seen = 0
        async for batch in self.async_client.batches.list(limit=100):
            if seen >= FIND_SCAN:
                break
            seen += 1
            if (_field(batch, "metadata") or {}).get(TOKEN_KEY) == token:
                return str(batch.id)
        return None

    async def apoll(self, batch_id: str) -> BatchPoll:
        """Async :meth:`poll`."""
        return self.to_poll(await self.async_client.batches.retrieve(batch_id))

    async def afetch(self, batch_id: str) -> list[BatchReply]:
        """Async :meth:`fetch`."""
        client = self.async_client
        batch = await client.batches.retrieve(batch_id)
        texts = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                texts.append((await client.files.content(file_id)).text)
        return [r for t in texts for r in self.parse_lines(t)]

    async def acancel(self, batch_id: str) -> None:
        """Async :meth:`cancel`."""
        await self.async_client.batches.cancel(batch_id)
