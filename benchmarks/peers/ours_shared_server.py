"""The scale-out benchmark's server: the ``echo`` tool of ``ours_server.py`` plus ``change``,
which publishes a tools list change (to every listen stream and session that opted in).

``python ours_shared_server.py`` serves ``http_app`` under uvicorn on 127.0.0.1, on a free
port it prints as ``PORT <n>``; with ``MCP_REDIS_URL`` set, its state is shared in Redis with
every other worker started the same way.
"""

from __future__ import annotations

from ours_server import ECHO, NAME, VERSION, Echo

from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer

CHANGE = models.Tool(name="change", input_schema=models.ToolInputSchema(type="object"))


class EchoAndChange(Echo):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[ECHO, CHANGE])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        if params.name == "change":
            await ctx.peer.send_tool_list_changed()
            return models.CallToolResult(content=[])
        return await super().call_tool(params, ctx)


def main() -> None:
    from _uvicorn import MAX_SESSIONS, serve_on_free_port  # beside this script

    from typedmcp.serving import http_app

    # the same limits as the SDK's server in bench_scaleout (see _uvicorn.SESSION_LIMITS)
    app = http_app(
        EchoAndChange(), server_info={"name": NAME, "version": VERSION}, list_changed=["tools"],
        max_sessions=MAX_SESSIONS, max_sessions_per_client=MAX_SESSIONS,
    )
    serve_on_free_port(app)


if __name__ == "__main__":
    main()
