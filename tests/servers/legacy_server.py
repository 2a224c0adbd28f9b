"""A stdio server that speaks only the handshake era (2025-11-25): it refuses the
``server/discover`` probe, as servers built before 2026-07-28 do. One ``echo`` tool."""

from __future__ import annotations

from typing import Any

from typedmcp.serving import run_stdio
from mcp_generated import v2025_11_25
from mcp_generated.v2025_11_25 import models
from mcp_generated.v2025_11_25.server import ServerHandlers


class Echo(ServerHandlers):
    async def list_tools(self, params: Any, ctx: Any) -> models.ListToolsResult:
        return models.ListToolsResult(
            tools=[models.Tool(name="echo", input_schema=models.ToolInputSchema(type="object"))]
        )


if __name__ == "__main__":
    run_stdio(Echo(), packages=[v2025_11_25])
