"""An ASGI app for the multi-worker tests with shared state: ``MCP_REDIS_URL=... gunicorn shared_app:app``.

Each worker reports its process id (``whoami``; ``serverInfo.version``). ``confirm`` asks the
client for input (an elicitation request in a handshake session, an input-required result in
2026-07-28); ``slow`` runs until cancelled or for ``seconds`` (a task with ``task``), reporting progress 0
first if asked to (a test waits for it to know it runs);
``change`` publishes a tools list change (a prompts list change with ``what: prompts``: a
later, distinct change a test waits for before it checks that the first came only once); ``chatty`` sends ``count`` progress notifications,
dropping its SSE stream after the first (2025-11-25 polling), so the client resumes it;
``log`` logs at ``info`` (sent only if the session's log level lets it through).
"""

from __future__ import annotations

import asyncio
import os

from typedmcp.serving import http_app
from typedmcp.transports.http_streams import close_sse_stream
from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

EMPTY = models.ToolInputSchema(type="object")
CONFIRM_SCHEMA = models.ElicitRequestFormParamsRequestedSchema(
    type="object", properties={"ok": {"type": "boolean"}}
)
TOOLS = ["whoami", "confirm", "slow", "change", "chatty", "log"]


def text(value: str) -> models.CallToolResult:
    return models.CallToolResult(content=[models.TextContent(type="text", text=value)])


class Worker(ServerHandlers):
    async def list_tools(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(tools=[
            models.Tool(name=name, input_schema=EMPTY,
                        execution=models.ToolExecution(task_support="optional"))
            for name in TOOLS
        ])

    async def list_prompts(
        self, params: models.PaginatedRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListPromptsResult:
        return models.ListPromptsResult(prompts=[])

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        arguments = params.arguments or {}
        pid = str(os.getpid())
        if params.name == "confirm":
            answer = await ctx.peer.elicit(
                models.ElicitRequestFormParams(message="Proceed?", requested_schema=CONFIRM_SCHEMA)
            )
            return text(f"{answer.action} {pid}")
        if params.name == "slow":
            await ctx.report_progress(0, 1)  # (sent only if asked for: it is running)
            await asyncio.sleep(float(arguments.get("seconds", 60)))
            return text(f"slept {pid}")
        if params.name == "change":
            if arguments.get("what") == "prompts":
                await ctx.peer.send_prompt_list_changed()
            else:
                await ctx.peer.send_tool_list_changed()
            return text(f"changed {pid}")
        if params.name == "chatty":
            count = int(arguments.get("count", 3))
            for step in range(count):
                await ctx.report_progress(step + 1, count)
                if step == 0:
                    close_sse_stream()
                await asyncio.sleep(0.05)
            return text(f"chatty {pid}")
        if params.name == "log":
            await ctx.log("info", f"hello from {pid}")
        return text(pid)


app = http_app(
    Worker(),
    server_info={"name": "shared", "version": str(os.getpid())},
    list_changed=["tools", "prompts"],
    tasks=True,
)
