"""The benchmark's minimal server on mcp-codegen's runtime: one ``echo`` tool.

``python ours_server.py stdio`` serves stdin/stdout (``run_stdio``);
``python ours_server.py http`` serves ``http_app`` under uvicorn on 127.0.0.1, on a free
port it picks itself and prints as ``PORT <n>`` (one line on stdout) once it listens.
Its twin, ``sdk_server.py``, serves the same tool with the official SDK (mcp 2.3.0).
"""

from __future__ import annotations

import sys
from typing import Any

from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

NAME, VERSION = "bench-ours", "1.0.0"
ECHO = models.Tool(
    name="echo",
    description="Echoes its text argument as one text block",
    input_schema=models.ToolInputSchema(
        type="object", properties={"text": {"type": "string"}}, required=["text"]
    ),
)


class Echo(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[ECHO])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        text: Any = (params.arguments or {}).get("text", "")
        return models.CallToolResult(content=[models.TextContent(type="text", text=str(text))])


def main(argv: list[str]) -> None:
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "stdio":
        from typedmcp.serving import run_stdio

        run_stdio(Echo(), server_info={"name": NAME, "version": VERSION})
    elif mode == "http":
        from _uvicorn import serve_on_free_port  # beside this script, shared by both peers
        from typedmcp.serving import http_app

        serve_on_free_port(http_app(Echo(), server_info={"name": NAME, "version": VERSION}))
    else:
        sys.exit(f"usage: {argv[0]} stdio|http")


if __name__ == "__main__":
    main(sys.argv)
