"""An McpApp for the multi-worker test: ``MCP_REDIS_URL=... uvicorn app_shared:app``.

``grow`` declares a tool named after its argument in this worker, at run time; the app's
change feed, which ``http_app`` shares through Redis, tells every worker's sessions.
"""

from __future__ import annotations

import os

from typedmcp.app import McpApp
from typedmcp.serving import http_app

mcp = McpApp("shared-app", version=str(os.getpid()))


@mcp.tool()
def grow(name: str) -> str:
    """Declare a tool called ``name`` in this worker."""

    def grown() -> str:
        return name

    mcp.add_tool(grown, name=name)
    return f"grew {name}"


app = http_app(mcp)
