"""The benchmark's typed ``echo`` tool on ``typedmcp.app.McpApp``: one function, the schema
from its signature. ``python app_echo_server.py`` serves stdio; ``... http`` serves
Streamable HTTP (``/mcp``, both eras) under uvicorn, printing ``PORT <n>``
(``BENCH_MAX_SESSIONS_PER_CLIENT`` raises the sessions one address may hold, 100 by default:
``bench_concurrency.py`` opens 200 from 127.0.0.1, where its peers have no cap). Its twins:
``sdk_mcpserver_echo.py`` (the SDK's ``MCPServer``) and ``fastmcp_echo.py`` (FastMCP)."""

from __future__ import annotations

import os
import sys

from typedmcp import McpApp, http_app, run_stdio

app = McpApp("bench-app", version="1.0.0")


@app.tool()
async def echo(text: str) -> str:
    """Echoes its text argument."""
    return text


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        from _uvicorn import serve_on_free_port

        per_client = int(os.environ.get("BENCH_MAX_SESSIONS_PER_CLIENT", "100"))
        serve_on_free_port(http_app(app, max_sessions_per_client=per_client))
    else:
        run_stdio(app)
