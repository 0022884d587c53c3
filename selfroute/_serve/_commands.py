"""The ``mcp`` and ``serve`` commands: ``ask``'s settings, served."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from selfroute._errors import ConfigurationError
from selfroute._serve._service import RouteService
from selfroute.cli._commands import route_setup, settings_for
from selfroute.cli._config import Settings

__all__ = ["build_app", "build_service", "run_mcp", "run_serve", "tenant_settings"]


def tenant_settings(settings: Settings, **overrides: Any) -> Settings:
    """``settings`` with some values replaced (a tenant's collection and budget)."""
    values = {**settings.to_dict(), **overrides}
    sources = {name: settings.source(name) for name in values}
    sources.update(dict.fromkeys(overrides, "flag"))
    return Settings(values, sources)


def build_service(settings: Settings, doc: str | None) -> RouteService:
    """``ask``'s setup over the store's collection (or ``--doc``), answered asynchronously, with
    what the first question would load already loaded (:meth:`RouteService.warm`).

    Raises:
        ConfigurationError: A bad setting or a missing ``--doc`` file.
    """
    if doc is not None and not Path(doc).is_file():
        raise ConfigurationError(f"--doc {doc}: no such file")
    setup = route_setup(settings, doc)
    name = Path(doc).name if doc is not None else str(settings.collection)
    service = RouteService(setup, max_question_chars=settings.max_question_chars, name=name)
    service.warm()  # the first question loads nothing (the tokenizer takes up to a second)
    return service


def run_mcp(args: argparse.Namespace) -> int:
    """``selfroute mcp``: the MCP tools over stdio (stdout carries only JSON-RPC)."""
    import anyio

    from selfroute._serve._mcp import build_mcp

    settings = settings_for(args, "mcp")
    service = build_service(settings, args.doc)
    server = build_mcp(service)
    print(
        f"selfroute mcp: serving {service.name!r} over stdio ({service.setup.retrieval}; "
        f"models {service.setup.rag})",
        file=sys.stderr,
    )

    async def main() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await service.aclose()

    anyio.run(main)
    return 0


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _tenants(settings: Settings, keys: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Key -> tenant; keys with the same collection and budget share one tenant."""
    from selfroute._serve._app import make_tenant

    built: dict[tuple[str, int | None], Any] = {}
    out = {}
    for key, spec in keys.items():
        calls = spec.get("max_lc_calls", settings.max_lc_calls)
        ident = (spec["collection"], calls)
        if ident not in built:
            tenant_set = tenant_settings(
                settings, collection=spec["collection"], max_lc_calls=calls
            )
            built[ident] = make_tenant(build_service(tenant_set, None), check_host=False)
        out[key] = built[ident]
    return out


def build_app(settings: Settings) -> Any:
    """The ASGI app of ``serve``'s settings.

    Raises:
        ConfigurationError: A bad keys file, or a public interface without keys.
    """
    from selfroute._serve._app import Limits, ServeApp, load_keys, make_tenant

    loopback = settings.host in _LOOPBACK
    limits = Limits(
        max_concurrency=settings.max_concurrency,
        queue_timeout_s=settings.queue_timeout,
        max_body_bytes=settings.max_body_kb * 1024,
        shutdown_timeout_s=settings.shutdown_timeout,
    )
    if settings.keys is None:
        if not loopback:
            raise ConfigurationError(
                f"--host {settings.host}: without --keys the server listens on 127.0.0.1 only "
                "(anyone who can reach it could spend your model budget); give --keys FILE"
            )
        default = make_tenant(build_service(settings, None), check_host=True)
        return ServeApp(None, default, limits)
    return ServeApp(_tenants(settings, load_keys(settings.keys)), None, limits)


def run_serve(args: argparse.Namespace) -> int:
    """``selfroute serve``: uvicorn on ``--host``/``--port``; SIGTERM drains, then exits 0."""
    import uvicorn

    settings = settings_for(args, "serve")
    app = build_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        lifespan="on",
        log_level="warning",
        access_log=False,  # a path and a status per request, no keys; off to keep stderr quiet
        timeout_graceful_shutdown=5,
    )
    server = _DrainingServer(config, app)
    if settings.keys is None:
        print(
            "selfroute serve: no --keys: listening on 127.0.0.1 only, every caller sees "
            f"collection {settings.collection!r}",
            file=sys.stderr,
        )
    server.run()
    return 0


def _server_base() -> Any:
    import uvicorn

    return uvicorn.Server


class _DrainingServer(_server_base()):  # type: ignore[misc]
    """uvicorn's server whose first SIGTERM/SIGINT drains the app (new requests get 503, those
    in flight finish, up to ``--shutdown-timeout``) before uvicorn shuts down; a second signal
    stops at once."""

    def __init__(self, config: Any, app: Any) -> None:
        super().__init__(config)
        self.app = app
        self._loop: Any = None
        self._drain_task: Any = None

    async def serve(self, sockets: Any = None) -> None:
        import asyncio

        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        for server in getattr(self, "servers", ()):
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                print(f"selfroute serve: listening on http://{host}:{port}", file=sys.stderr)
        sys.stderr.flush()

    def handle_exit(self, sig: int, frame: Any) -> None:
        if self._drain_task is not None or self._loop is None:
            self.should_exit = True
            self.force_exit = self._drain_task is not None
            return
        self._drain_task = True
        self._loop.call_soon_threadsafe(self._begin_drain)

    def _begin_drain(self) -> None:
        import asyncio

        self._drain_task = asyncio.ensure_future(self._drain())

    async def _drain(self) -> None:
        drained = await self.app.drain()
        if not drained:
            print(
                f"selfroute serve: {self.app.in_flight} request(s) still running after "
                f"--shutdown-timeout {self.app.limits.shutdown_timeout_s:g}s; stopping",
                file=sys.stderr,
            )
        self.should_exit = True
