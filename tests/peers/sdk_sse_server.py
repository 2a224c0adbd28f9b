"""The official SDK's low-level ``Server`` (mcp 2.3.0) over the deprecated HTTP+SSE transport.

The peer that ``tests/test_legacy_sse.py`` drives with ``connect_sse`` and with
``connect_http``'s fallback: the tools of ``sdk_server.py`` (imported from beside this file),
served by the SDK's ``SseServerTransport`` in a Starlette app (GET ``/sse``, POST
``/messages/``, as ``MCPServer.sse_app`` lays them out) under uvicorn on 127.0.0.1. It binds
a free port and prints ``PORT <n>`` on stdout once it is listening.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.shared.exceptions import MCPDeprecationWarning
from _serve import serve_on_free_port
from sdk_server import build
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

warnings.simplefilter("ignore", MCPDeprecationWarning)


def app() -> Starlette:
    server = build()
    transport = SseServerTransport("/messages/")

    async def handle_sse(request: Request) -> Response:
        async with transport.connect_sse(request.scope, request.receive, request._send) as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return Response()

    routes: list[Any] = [
        Route("/sse", endpoint=handle_sse, methods=["GET"]),
        Mount("/messages/", app=transport.handle_post_message),
    ]
    return Starlette(routes=routes)


def main() -> None:
    serve_on_free_port(app())
    sys.exit(0)


if __name__ == "__main__":
    main()
