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

__all__ = ["build_service", "run_mcp", "tenant_settings"]


def tenant_settings(settings: Settings, **overrides: Any) -> Settings:
    """``settings`` with some values replaced (a tenant's collection and budget)."""
    values = {**settings.to_dict(), **overrides}
    sources = {name: settings.source(name) for name in values}
    sources.update(dict.fromkeys(overrides, "flag"))
    return Settings(values, sources)


def build_service(settings: Settings, doc: str | None) -> RouteService:
    """``ask``'s setup over the store's collection (or ``--doc``), answered asynchronously.

    Raises:
        ConfigurationError: A bad setting or a missing ``--doc`` file.
    """
    if doc is not None and not Path(doc).is_file():
        raise ConfigurationError(f"--doc {doc}: no such file")
    setup = route_setup(settings, doc)
    name = Path(doc).name if doc is not None else str(settings.collection)
    return RouteService(setup, max_question_chars=settings.max_question_chars, name=name)


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
