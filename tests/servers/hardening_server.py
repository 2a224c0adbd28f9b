"""A small server for the client hardening tests (``tests/test_hardening_http_client.py``):
one handler object, both eras, over stdio or HTTP (our ``http_app`` under uvicorn).

    python tests/servers/hardening_server.py --stdio
    python tests/servers/hardening_server.py --http [--legacy-sse]   # prints PORT <n>

Tools: ``progress`` reports ``steps`` progress notifications (``pause`` seconds apart), then
answers; ``hold`` reports one progress notification, then waits until the process is killed
(the tests SIGKILL it with replies in flight); ``echo`` answers its arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from typedmcp.protocol.stubs import RequestContext
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ClientPeer, ServerHandlers

Ctx = RequestContext[ClientPeer]
NAMES = ("progress", "hold", "echo")


class Fragile(ServerHandlers):
    async def list_tools(self, params: models.PaginatedRequestParams | None, ctx: Ctx) -> models.ListToolsResult:
        schema = models.ToolInputSchema(type="object")
        return models.ListToolsResult(tools=[models.Tool(name=name, input_schema=schema) for name in NAMES])

    async def call_tool(self, params: models.CallToolRequestParams, ctx: Ctx) -> models.CallToolResult:
        args = params.arguments or {}
        if params.name == "progress":
            steps = int(args.get("steps", 5))
            for step in range(1, steps + 1):
                await ctx.report_progress(step, steps, f"step {step}")
                if args.get("pause"):
                    await asyncio.sleep(float(args["pause"]))
            text = "progressed"
        elif params.name == "hold":
            await ctx.report_progress(1, 2, "holding")
            await asyncio.Event().wait()  # until the process is killed
            text = "never"
        else:
            text = json.dumps(args, sort_keys=True)
        return models.CallToolResult(content=[models.TextContent(type="text", text=text)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--legacy-sse", action="store_true")
    args = parser.parse_args()
    if args.stdio:
        from typedmcp.serving import run_stdio

        run_stdio(Fragile())
        return
    from typedmcp.serving import http_app

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "peers"))
    from _serve import serve_on_free_port

    serve_on_free_port(http_app(Fragile(), legacy_sse=args.legacy_sse, list_changed=["tools"]))


if __name__ == "__main__":
    main()
