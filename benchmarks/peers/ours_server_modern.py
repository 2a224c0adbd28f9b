"""``ours_server.py``'s twin typed with the stateless-era package: one ``echo`` tool.

The handlers subclass ``mcp_generated.v2026_07_28``'s ``ServerHandlers`` (``ours_server.py``
uses 2025-11-25's, so serving 2026-07-28 it validates params with the older types and sieves
each result into the newer ones). ``bench_stateless.py`` runs it in-process, for information:
the same runtime path without the cross-revision step. ``python ours_server_modern.py stdio``
serves stdin/stdout with ``run_stdio`` (both eras, as ``ours_server.py``).
"""

from __future__ import annotations

import sys
from typing import Any

from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2026_07_28 import models
from mcp_generated.v2026_07_28.server import ClientPeer, ServerHandlers

NAME, VERSION = "bench-ours-modern", "1.0.0"
ECHO = models.Tool(
    name="echo",
    description="Echoes its text argument as one text block",
    input_schema=models.ToolInputSchema.model_validate(
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    ),
)


class Echo(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[ECHO], ttl_ms=0, cache_scope="private")

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        text: Any = (params.arguments or {}).get("text", "")
        return models.CallToolResult(content=[models.TextContent(type="text", text=str(text))])


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode != "stdio":
        sys.exit(f"usage: {argv[0]} stdio")
    from typedmcp.serving import run_stdio

    run_stdio(Echo(), server_info={"name": NAME, "version": VERSION})


if __name__ == "__main__":
    main(sys.argv)
