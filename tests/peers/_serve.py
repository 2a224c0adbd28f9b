"""Serve an ASGI app (an SDK peer's) under uvicorn on 127.0.0.1, on a free port.

The socket is bound here to port 0 and handed to uvicorn, so there is no race for the port;
``PORT <n>`` is printed on stdout once uvicorn has started (what the tests read).
"""

from __future__ import annotations

import socket
from typing import Any


def serve_on_free_port(app: Any) -> None:
    import uvicorn

    # proto=IPPROTO_TCP: asyncio sets TCP_NODELAY only on sockets whose proto says TCP
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    original_startup = server.startup

    async def startup(sockets: list[socket.socket] | None = None) -> None:
        await original_startup(sockets=sockets)
        print(f"PORT {sock.getsockname()[1]}", flush=True)

    server.startup = startup  # type: ignore[method-assign]
    server.run(sockets=[sock])
