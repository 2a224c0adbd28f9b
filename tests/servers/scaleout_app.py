"""An ASGI app for multi-worker tests: ``uvicorn scaleout_app:app --workers 2``.

Each worker reports its process id as ``serverInfo.version``, so a test can tell which
worker served a request. ``confirm`` asks the client for input (a multi round-trip request
in 2026-07-28), so its retry may land on another worker than its first round.
"""

from __future__ import annotations

import os

from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import http_app
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

EMPTY = models.ToolInputSchema(type="object")
CONFIRM_SCHEMA = models.ElicitRequestFormParamsRequestedSchema(
    type="object", properties={"ok": {"type": "boolean"}}
)


class Worker(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[models.Tool(name="whoami", input_schema=EMPTY),
                   models.Tool(name="confirm", input_schema=EMPTY)]
        )

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        if params.name == "confirm":
            answer = await ctx.peer.elicit(
                models.ElicitRequestFormParams(message="Proceed?", requested_schema=CONFIRM_SCHEMA)
            )
            text = f"{answer.action} {os.getpid()}"
        else:
            text = str(os.getpid())
        return models.CallToolResult(content=[models.TextContent(type="text", text=text)])


app = http_app(Worker(), server_info={"name": "scaleout", "version": str(os.getpid())})
