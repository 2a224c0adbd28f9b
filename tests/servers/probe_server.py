"""A tiny stdio server for tests/test_stdio.py; each tool pokes at the transport.

python probe_server.py                      # defaults
python probe_server.py --max-bytes 4096     # a small message size limit
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from typedmcp.protocol.stubs import RequestContext
from typedmcp.serving import serve
from typedmcp.transports.stdio import server_transport
from mcp_generated.v2025_06_18 import models
from mcp_generated.v2025_06_18.server import ClientPeer, ServerHandlers

LATE: set[asyncio.Task[None]] = set()
CHILD_READS_STDIN = "import sys; sys.stdout.write(str(len(sys.stdin.buffer.read())))"


class Probe(ServerHandlers):
    async def list_tools(
        self, params: models.ListToolsRequestParams | None, ctx: RequestContext[ClientPeer]
    ) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[models.Tool(name="echo", input_schema=models.ToolInputSchema(type="object"))]
        )

    async def call_tool(
        self, params: models.CallToolRequestParams, ctx: RequestContext[ClientPeer]
    ) -> models.CallToolResult:
        args: dict[str, Any] = params.arguments or {}
        if params.name == "echo":
            text = args["text"]
        elif params.name == "print":
            print("a stray print\n{not json")
            text = "printed"
        elif params.name == "fd1":
            os.write(1, b"raw bytes on fd 1\n{not json either\n")
            text = "wrote"
        elif params.name == "sleep":
            await asyncio.sleep(args["seconds"])
            text = "slept"
        elif params.name == "progress":  # repeats, goes back, then reports after the result
            for value in (1, 1, 0.5, 2):
                await ctx.report_progress(value, total=3)

            async def late() -> None:
                await asyncio.sleep(0.1)
                await ctx.report_progress(3)

            LATE.add(asyncio.create_task(late()))
            text = "progressed"
        elif params.name == "big":
            text = "x" * args["size"]
        elif params.name == "child":  # a child process that inherits stdin and reads it all
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-c", CHILD_READS_STDIN, stdout=asyncio.subprocess.PIPE
            )
            out, _ = await child.communicate()
            text = "child read " + out.decode()
        else:
            raise ValueError(f"no tool {params.name}")
        return models.CallToolResult(content=[models.TextContent(type="text", text=text)])


async def main(max_bytes: int | None, limits: dict[str, int]) -> None:
    transport = await (server_transport(max_bytes) if max_bytes else server_transport())
    await serve(Probe(), transport, **limits)


if __name__ == "__main__":
    # --max-bytes N, --max-batch N, --max-in-flight N
    given = {name.lstrip("-").replace("-", "_"): int(value) for name, value in zip(sys.argv[1::2], sys.argv[2::2], strict=True)}
    asyncio.run(main(given.pop("max_bytes", None), given))
