"""The benchmark's typed ``echo`` tool on the official SDK's ``MCPServer`` (mcp 2.3.0): the
same function as ``app_echo_server.py``. ``python sdk_mcpserver_echo.py`` serves stdio;
``... http`` serves its Streamable HTTP app (``/mcp``, stateful sessions, SSE replies: its
defaults) under uvicorn, printing ``PORT <n>``."""

from __future__ import annotations

import sys
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
    if sys.argv[1:2] == ["http"]:
        from _uvicorn import serve_on_free_port

        serve_on_free_port(mcp.streamable_http_app())
    else:
        mcp.run("stdio")
