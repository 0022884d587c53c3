"""Scripted Gemini Developer API (``generativelanguage``) server on 127.0.0.1.

Serves what the ``google-genai`` SDK behind ``langchain_google_genai.ChatGoogleGenerativeAI``
calls: ``POST /v1beta/models/{model}:generateContent`` and
``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` (plus ``GET /v1beta/models`` and
``GET /v1beta/models/{model}``, which LlamaIndex's ``GoogleGenAI`` reads), and
``POST /v1beta/models/{model}:batchEmbedContents`` (embeddings, with a provider's latency and
rate limits: :mod:`tests.support._embeddings`).
Point the client at it with ``base_url=server.base_url`` and any ``api_key``.

Streaming follows the real API: every chunk carries ``usageMetadata`` with the prompt tokens,
the last one (with ``finishReason``) the full counts; LangChain turns that into per-chunk deltas.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from tests.support._loopback import (
    Completion,
    LoopbackServer,
    Reply,
    Responder,
    _Handler,
    iter_pieces,
    rules,
    serve_main,
    sse,
)

__all__ = ["Reply", "Responder", "ScriptedGeminiServer", "rules"]

_PATH_RE = re.compile(
    r"^/(?P<version>v1|v1beta|v1alpha)/models/(?P<model>[^:/]+):"
    r"(?P<method>generateContent|streamGenerateContent)$"
)
_EMBED_RE = re.compile(r"^/(v1|v1beta|v1alpha)/models/[^:/]+:batchEmbedContents$")
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}


class ScriptedGeminiServer(LoopbackServer):
    """Gemini ``generateContent`` / ``streamGenerateContent`` double.

    Attributes:
        base_url: ``http://127.0.0.1:PORT`` — pass as ``base_url`` to ``ChatGoogleGenerativeAI``
            (the SDK appends ``/v1beta/models/...``).
    """

    @property
    def base_url(self) -> str:
        return self.root_url

    def route(self, method: str, path: str) -> str | None:
        clean = urlsplit(path).path.rstrip("/")
        if method == "POST" and _PATH_RE.match(clean):
            return "generate"
        if method == "POST" and _EMBED_RE.match(clean):
            return "embeddings"
        if method == "GET" and re.fullmatch(r"/(v1|v1beta|v1alpha)/models", clean):
            return "models"
        if method == "GET" and re.fullmatch(r"/(v1|v1beta|v1alpha)/models/[^:/]+", clean):
            return "model"  # llama-index's GoogleGenAI reads the model's limits on creation
        return None

    def wants_stream(self, path: str, body: dict[str, Any]) -> bool:
        parts = urlsplit(path)
        match = _PATH_RE.match(parts.path.rstrip("/"))
        return bool(match and match["method"] == "streamGenerateContent")

    def requested_model(self, handler: _Handler, body: dict[str, Any]) -> str:
        match = _PATH_RE.match(urlsplit(handler.path).path.rstrip("/"))
        return match["model"] if match else "loopback-model"

    def embedding_texts(self, body: dict[str, Any]) -> list[str]:
        return [
            "".join(str(part.get("text", "")) for part in r.get("content", {}).get("parts", []))
            for r in body.get("requests", [])
        ]

    def embeddings_body(self, vectors: list[Any], body: dict[str, Any], handler: Any) -> Any:
        return {"embeddings": [{"values": v} for v in vectors]}

    def models_body(self) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": f"models/{name}",
                    "displayName": name,
                    "inputTokenLimit": 1_048_576,
                    "outputTokenLimit": 8192,
                    "supportedGenerationMethods": ["generateContent", "countTokens"],
                }
                for name in ("loopback-model", "gemini-2.5-flash")
            ]
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return {
            "error": {
                "code": status,
                "message": message or f"scripted error {status}",
                "status": _STATUS_NAMES.get(status, "UNKNOWN"),
            }
        }

    @staticmethod
    def _chunk(done: Completion, text: str, *, final: bool, response_id: str) -> dict[str, Any]:
        """One response object; intermediate stream chunks carry only the prompt tokens."""
        prompt = done.prompt_tokens
        candidates = done.completion_tokens if final else 0
        usage: dict[str, Any] = {
            "promptTokenCount": prompt,
            "totalTokenCount": prompt + candidates,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
        }
        candidate: dict[str, Any] = {
            "content": {"parts": [{"text": text}], "role": "model"},
            "index": 0,
        }
        if final:
            usage["candidatesTokenCount"] = candidates
            candidate["finishReason"] = _FINISH.get(done.reply.finish_reason, "STOP")
        if done.cached_tokens:
            usage["cachedContentTokenCount"] = done.cached_tokens
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": done.model,
            "responseId": response_id,
        }

    def completion_body(self, done: Completion) -> dict[str, Any]:
        return self._chunk(done, done.text, final=True, response_id=uuid.uuid4().hex[:22])

    def stream_events(self, done: Completion) -> Iterable[bytes]:
        response_id = uuid.uuid4().hex[:22]
        pieces = list(iter_pieces(done.text, done.reply.piece_chars)) or [""]
        for i, piece in enumerate(pieces):
            final = i == len(pieces) - 1
            yield sse(self._chunk(done, piece, final=final, response_id=response_id))


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.gemini_server --port P --script FILE.json``."""
    return serve_main(ScriptedGeminiServer, argv)


if __name__ == "__main__":
    raise SystemExit(main())
