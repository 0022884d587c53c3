"""A loopback OTLP/HTTP trace receiver (what Phoenix, Langfuse or an OpenTelemetry Collector
expose at ``/v1/traces``): it decodes each protobuf ``ExportTraceServiceRequest`` and keeps the
spans, so the docs' exporter setup runs as written and its spans can be checked."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["OTLPCollector"]


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


class OTLPCollector:
    """Receives OTLP/HTTP protobuf trace exports on 127.0.0.1.

    Attributes:
        spans: ``{"name", "attributes", "resource", "headers"}`` per received span.
        endpoint: ``http://127.0.0.1:PORT/v1/traces`` (``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``).
    """

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
                    ExportTraceServiceRequest,
                    ExportTraceServiceResponse,
                )

                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.keep(request, {k.lower(): v for k, v in self.headers.items()})
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def keep(self, request: Any, headers: dict[str, str]) -> None:
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                for span in scope.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    self.spans.append(
                        {
                            "name": span.name,
                            "attributes": attributes,
                            "resource": resource,
                            "headers": headers,
                        }
                    )

    def __enter__(self) -> OTLPCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
