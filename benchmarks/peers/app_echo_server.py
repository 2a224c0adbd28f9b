"""The benchmark's typed ``echo`` tool on ``typedmcp.app.McpApp`` (stdio): one function,
the schema from its signature. Its twin is ``sdk_mcpserver_echo.py`` (the SDK's
``MCPServer``, the same function)."""

from __future__ import annotations

from typedmcp import McpApp, run_stdio

app = McpApp("bench-app", version="1.0.0")


@app.tool()
async def echo(text: str) -> str:
    """Echoes its text argument."""
    return text


if __name__ == "__main__":
    run_stdio(app)
