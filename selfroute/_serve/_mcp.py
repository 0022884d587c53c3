"""The MCP tools of ``selfroute mcp`` (stdio) and ``selfroute serve`` (``/mcp``), on the official
``mcp`` SDK's :class:`~mcp.server.mcpserver.MCPServer`.

Tools: ``ask`` (Self-Route's answer with its route, sources and tokens, as structured content with
an output schema and as text), ``search`` (the top chunks, no model call) and ``stats`` (what the
collection holds). ``ask`` reports a progress notification before each step (retrieval, the RAG
call, loading the documents, the long-context call) when the client asked for progress; a
cancelled request cancels the task, and with it the model call's connection.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from selfroute._errors import MissingDependencyError, SelfRouteError
from selfroute._redact import cap_text, redact
from selfroute._serve._payload import AskOutput, SearchHit, SearchOutput, route_line, summarize
from selfroute._serve._service import RouteService, StepNotice

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent, ToolAnnotations
except ImportError as exc:  # pragma: no cover - exercised without the serve extra
    raise MissingDependencyError("mcp", "serve") from exc

__all__ = ["ASK_DESCRIPTION", "SEARCH_DESCRIPTION", "STATS_DESCRIPTION", "build_mcp"]

#: Most chunks ``search`` returns.
MAX_SEARCH_K = 50

ASK_DESCRIPTION = (
    "Answer a question from the indexed documents with Self-Route: the top chunks are retrieved "
    "and a model answers from them, or -- only when they do not hold the answer -- from the whole "
    "documents. Returns the answer, the route taken (rag or long_context) and why, whether the "
    "documents do not answer it (abstained), the source chunks (document, chunk), the tokens of "
    "every model call and the savings against always reading the whole documents. Call this when "
    "you want an answer; call search instead to read the raw chunks yourself. Ask one self-contained question per call, in plain words; it can take "
    "seconds to a minute."
)
SEARCH_DESCRIPTION = (
    "Find the chunks of the indexed documents most relevant to a query, with their document, "
    "chunk index, score and text, without calling any model (fast and free). Call this when you "
    "want to read the evidence yourself, quote it, or check what the documents cover; call ask "
    "for an answer. k is how many chunks (1-50, default 5)."
)
STATS_DESCRIPTION = (
    "Describe the indexed collection: how many documents, chunks and words it holds, the "
    "embedding, the state of the keyword index and which models answer. Call this to learn what "
    "can be asked before asking."
)


def _failure(exc: BaseException) -> Exception:
    """A tool error the model can read (redacted, capped): the step that failed and why."""
    return ToolError(cap_text(redact(str(exc))))


async def _ask(
    service: RouteService, question: str, progress: Callable[..., Awaitable[None]]
) -> CallToolResult:
    count = 0

    async def on_step(notice: StepNotice) -> None:
        nonlocal count
        count += 1
        await progress(count, None, notice.message)

    try:
        result = await service.answer(question, on_step=on_step)
    except SelfRouteError as exc:
        raise _failure(exc) from None
    out = summarize(result, service.name)
    text = f"{out.answer}\n\n{route_line(out)}"
    if out.sources:
        text += "\nsources: " + "; ".join(
            f"{s.document}#{s.chunk}" if s.chunk is not None else s.document for s in out.sources
        )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=out.model_dump(mode="json"),
    )


def build_mcp(service: RouteService, *, name: str = "selfroute") -> MCPServer[Any]:
    """An :class:`~mcp.server.mcpserver.MCPServer` with the ``ask``, ``search`` and ``stats`` tools
    over ``service``."""
    server = MCPServer(
        name=name,
        # the SDK's default (INFO) sets up the root logger at INFO: every upstream model call
        # (httpx) would then write a line to stderr, rendered by rich (milliseconds a question)
        log_level="WARNING",
        instructions=(
            f"Self-Route over the document collection {service.name!r}: use ask for answers "
            "(cheap retrieval first, the whole documents only when needed), search to read the "
            "chunks yourself, stats to see what the collection holds."
        ),
    )
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    async def ask(question: str, ctx: Context) -> Annotated[CallToolResult, AskOutput]:
        return await _ask(service, question, ctx.report_progress)

    async def search(query: str, k: int = 5) -> Annotated[CallToolResult, SearchOutput]:
        if not 1 <= k <= MAX_SEARCH_K:
            raise ToolError(f"k must be between 1 and {MAX_SEARCH_K}, got {k}")
        try:
            hits = await service.search(query, k)
        except SelfRouteError as exc:
            raise _failure(exc) from None
        out = SearchOutput(
            query=query, hits=[SearchHit(**h) for h in hits], collection=service.name
        )
        text = "\n\n".join(
            f"[{i}] {h.document}#{h.chunk} (score {h.score})\n{h.text}"
            for i, h in enumerate(out.hits, 1)
        )
        return CallToolResult(
            content=[TextContent(type="text", text=text or "no chunks found")],
            structured_content=out.model_dump(mode="json"),
        )

    async def stats() -> dict[str, Any]:
        try:
            data = await service.stats()
        except SelfRouteError as exc:
            raise _failure(exc) from None
        plain: dict[str, Any] = json.loads(json.dumps(data, default=str))
        return plain

    server.add_tool(ask, description=ASK_DESCRIPTION, annotations=read_only)
    server.add_tool(search, description=SEARCH_DESCRIPTION, annotations=read_only)
    server.add_tool(stats, description=STATS_DESCRIPTION, annotations=read_only)
    return server
