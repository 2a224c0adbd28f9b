"""The benchmark's typed ``echo`` tool on the official SDK's ``MCPServer`` (mcp 2.3.0,
stdio): the same function as ``app_echo_server.py``."""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPDeprecationWarning

warnings.simplefilter("ignore", MCPDeprecationWarning)

mcp = MCPServer("bench-mcpserver", version="1.0.0", log_level="WARNING")


@mcp.tool()
async def echo(text: str) -> str:
    """Echoes its text argument."""
    return text


if __name__ == "__main__":
    mcp.run("stdio")
