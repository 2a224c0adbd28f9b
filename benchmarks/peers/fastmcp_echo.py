"""The benchmark's typed ``echo`` tool on FastMCP 4.1.6: the same function as
``app_echo_server.py``. ``python fastmcp_echo.py`` serves stdio (no banner);
``... http`` serves its Streamable HTTP app (``/mcp``, its defaults) under uvicorn,
printing ``PORT <n>``."""

from __future__ import annotations

import sys
import warnings

from fastmcp import FastMCP

warnings.simplefilter("ignore", DeprecationWarning)

mcp = FastMCP("bench-fastmcp", version="1.0.0")


@mcp.tool()
async def echo(text: str) -> str:
    """Echoes its text argument."""
    return text


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        from _uvicorn import serve_on_free_port

        serve_on_free_port(mcp.http_app(path="/mcp"))
    else:
        mcp.run("stdio", show_banner=False)
