"""Gemini batch mode (``models/{model}:batchGenerateContent``) through ``google-genai``.

Gemini runs one model per batch job, so a phase with both stages' models becomes one job per
model. Requests go inline (each with ``metadata.key`` = the request key); the job's
``display_name`` is the driver's token, so a crash between creating the job and recording its
name is recovered by listing the jobs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from selfroute._batch._common import REFUSED, STRUCTURED_SUFFIX, reply_generation, structured_form
from selfroute._batch._protocol import BatchPoll, BatchReply, BatchRequest, BatchState
from selfroute._errors import ConfigurationError, MissingDependencyError
from selfroute._flow import Generate, Generation
from selfroute._result import Stage
from selfroute._usage import Usage

__all__ = ["GeminiBatchBackend"]

FIND_SCAN = 2000

_STATES = {
    "JOB_STATE_UNSPECIFIED": BatchState.PENDING,
    "JOB_STATE_QUEUED": BatchState.PENDING,
    "JOB_STATE_PENDING": BatchState.PENDING,
    "JOB_STATE_RUNNING": BatchState.RUNNING,
    "JOB_STATE_UPDATING": BatchState.RUNNING,
    "JOB_STATE_PAUSED": BatchState.RUNNING,
    "JOB_STATE_CANCELLING": BatchState.RUNNING,
    "JOB_STATE_SUCCEEDED": BatchState.COMPLETED,
    "JOB_STATE_PARTIALLY_SUCCEEDED": BatchState.COMPLETED,
    "JOB_STATE_FAILED": BatchState.FAILED,
    "JOB_STATE_EXPIRED": BatchState.EXPIRED,
    "JOB_STATE_CANCELLED": BatchState.CANCELLED,
}


def _genai() -> Any:
    try:
        from google import genai
    except ImportError as exc:
        raise MissingDependencyError("google-genai", "batch") from exc
    return genai


def _state_name(job: Any) -> str:
    state = getattr(job, "state", None)
    return str(getattr(state, "value", state) or "")


def response_generation(response: Any, structured: bool) -> Generation:
    """A :class:`~selfroute.Generation` from a ``GenerateContentResponse``."""
    text = ""
    finish = None
    for candidate in (getattr(response, "candidates", None) or [])[:1]:
        finish = getattr(candidate, "finish_reason", None)
        content = getattr(candidate, "content", None)
        parts = getattr(content, "parts", None) or []
        text = "".join(p.text for p in parts if getattr(p, "text", None) and not p.thought)
    meta = getattr(response, "usage_metadata", None)
    usage = None
    if meta is not None:
        inp = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
        out = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
        if inp or out:
            usage = Usage.of(
                inp,
                out,
                total_tokens=meta.total_token_count or None,
                cached_input_tokens=meta.cached_content_token_count or 0,
            )
    model = getattr(response, "model_version", None)
    return reply_generation(text, usage, model, structured, finish)


class GeminiBatchBackend:
    """Gemini batch mode (Gemini Developer API; 50% of the online price).

    Args:
        model: The RAG-stage model (``gemini-2.5-flash``).
        long_context_model: The long-context model (defaults to ``model``).
        client: A ``google.genai.Client`` (built from ``api_key``/``base_url`` otherwise).
        api_key: API key when building the client.
        base_url: API base URL when building the client (a proxy or a test server).
        options: ``GenerateContentConfig`` fields of every request (``temperature``...).
        structured: Send a structured RAG step with a JSON response schema.
        name: The provider's name in messages and the job file.
    """

    one_model_per_batch = True
    #: Inline requests: the API takes up to 20 MB per batch job (kept under it).
    max_requests = None
    max_bytes = 19_000_000

    def __init__(
        self,
        model: str,
        *,
        long_context_model: str | None = None,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        options: Mapping[str, Any] | None = None,
        structured: bool = True,
        name: str = "gemini",
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ConfigurationError("GeminiBatchBackend needs a model name")
        self.models = {
            Stage.RAG: model.removeprefix("models/"),
            Stage.LONG_CONTEXT: (long_context_model or model).removeprefix("models/"),
        }
        self._client = client
        self.api_key = api_key
        self.base_url = base_url
        self.options = dict(options or {})
        self.structured = structured
        self.name = name

    @property
    def client(self) -> Any:
        """The ``google.genai.Client``."""
        if self._client is None:
            genai = _genai()
            http = {"base_url": self.base_url} if self.base_url else None
            self._client = genai.Client(api_key=self.api_key, http_options=http)
        return self._client

    def model_for(self, step: Generate) -> str:
        """The model of ``step``'s stage."""
        return self.models[step.stage]

    def inlined_request(self, request: BatchRequest) -> dict[str, Any]:
        """One inlined request of the job."""
        step = request.step
        config: dict[str, Any] = dict(self.options)
        prompt, key = step.prompt, request.key
        form = structured_form(step, self.structured, self.name)
        if form is not None:
            prompt, key = form.prompt, key + STRUCTURED_SUFFIX
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = dict(form.schema)
        out: dict[str, Any] = {
            "contents": [{"role": "user", "parts": [{"text": prompt}]}],
            "metadata": {"key": key},
        }
        if config:
            out["config"] = config
        return out

    def _model(self, requests: Sequence[BatchRequest]) -> str:
        models = {r.model for r in requests}
        if len(models) != 1:
            raise ConfigurationError(f"a Gemini batch job runs one model, got {sorted(models)}")
        return models.pop()

    def _unsupported(self, exc: Exception) -> Exception:
        code = getattr(exc, "code", None)
        if code in (404, 405, 501):
            where = self.base_url or "the Gemini API"
            return ConfigurationError(
                f"{where} does not implement Gemini batch mode (batchGenerateContent answered "
                f"{code}); batch runs need the Gemini Developer API -- run online instead"
            )
        return exc

    @staticmethod
    def to_poll(job: Any) -> BatchPoll:
        """A :class:`BatchPoll` from a ``BatchJob``."""
        name = _state_name(job)
        stats = getattr(job, "completion_stats", None)
        return BatchPoll(
            _STATES.get(name, BatchState.RUNNING),
            name,
            completed=getattr(stats, "successful_count", None),
            failed=getattr(stats, "failed_count", None),
        )

    @staticmethod
    def replies(job: Any) -> list[BatchReply]:
        """The replies of a terminal job."""
        dest = getattr(job, "dest", None)
        out: list[BatchReply] = []
        for item in getattr(dest, "inlined_responses", None) or []:
            raw_key = str((item.metadata or {}).get("key", ""))
            key = raw_key.removesuffix(STRUCTURED_SUFFIX)
            if item.error is not None:
                message = item.error.message or "request failed"
                code = item.error.code
                out.append(BatchReply(key, error=f"{code}: {message}" if code else message))
            elif item.response is not None:
                structured = raw_key.endswith(STRUCTURED_SUFFIX)
                out.append(BatchReply(key, response_generation(item.response, structured)))
        return out

    # -- sync ----------------------------------------------------------------------------------
    def submit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Create one inline batch job; returns its name (``batches/...``)."""
        src = [self.inlined_request(r) for r in requests]
        try:
            job = self.client.batches.create(
                model=self._model(requests), src=src, config={"display_name": token}
            )
        except Exception as exc:
            found = None
            if getattr(exc, "code", None) not in REFUSED:  # created although it failed?
                try:
                    found = self.find(token)
                except Exception:
                    found = None
            if found is None:
                raise self._unsupported(exc) from exc
            return found
        return str(job.name)

    def find(self, token: str) -> str | None:
        """The job created with ``token`` (its display name)."""
        for seen, job in enumerate(self.client.batches.list(config={"page_size": 100})):
            if seen >= FIND_SCAN:
                break
            if job.display_name == token:
                return str(job.name)
        return None

    def poll(self, batch_id: str) -> BatchPoll:
        """The job's state."""
        return self.to_poll(self.client.batches.get(name=batch_id))

    def fetch(self, batch_id: str) -> list[BatchReply]:
        """The replies of a terminal job."""
        return self.replies(self.client.batches.get(name=batch_id))

    def cancel(self, batch_id: str) -> None:
        """Cancel the job."""
        self.client.batches.cancel(name=batch_id)

    # -- async ---------------------------------------------------------------------------------
    async def asubmit(self, requests: Sequence[BatchRequest], token: str) -> str:
        """Async :meth:`submit`."""
        src = [self.inlined_request(r) for r in requests]
        try:
            job = await self.client.aio.batches.create(
                model=self._model(requests), src=src, config={"display_name": token}
            )
        except Exception as exc:
            found = None
            if getattr(exc, "code", None) not in REFUSED:
                try:
                    found = await self.afind(token)
                except Exception:
                    found = None
            if found is None:
                raise self._unsupported(exc) from exc
            return found
        return str(job.name)

    async def afind(self, token: str) -> str | None:
        """Async :meth:`find`."""
        seen = 0
        async for job in await self.client.aio.batches.list(config={"page_size": 100}):
            if seen >= FIND_SCAN:
                break
            seen += 1
            if job.display_name == token:
                return str(job.name)
        return None

    async def apoll(self, batch_id: str) -> BatchPoll:
        """Async :meth:`poll`."""
        return self.to_poll(await self.client.aio.batches.get(name=batch_id))

    async def afetch(self, batch_id: str) -> list[BatchReply]:
        """Async :meth:`fetch`."""
        return self.replies(await self.client.aio.batches.get(name=batch_id))

    async def acancel(self, batch_id: str) -> None:
        """Async :meth:`cancel`."""
        await self.client.aio.batches.cancel(name=batch_id)
