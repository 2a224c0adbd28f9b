"""Serve an ASGI app under uvicorn on 127.0.0.1, on a free port (shared by both peers).

The socket is bound here to port 0 and handed to uvicorn, so there is no race for the port;
``PORT <n>`` is printed on stdout once uvicorn has started. Both servers get the same uvicorn
settings: the ``httptools`` HTTP parser, the asyncio loop (or the one ``BENCH_UVICORN_LOOP``
names: ``uvloop``), no access log; and with
``--tls CERT KEY`` on the peer's command line, TLS with that certificate (the HTTPS rows).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Any

#: The session limits every stateful HTTP peer is configured with, ours and the SDK's alike:
#: at most 10,000 live sessions (the SDK's own default, ``DEFAULT_MAX_SESSIONS``; ours
#: defaults to 1,000) and no tighter cap per client (the SDK has none; ours defaults to 100
#: per client address, and every benchmark client comes from 127.0.0.1). Idle sessions
#: expire after 1,800 s on both (both defaults).
MAX_SESSIONS = 10_000
SESSION_LIMITS = (
    f"both servers configured alike: at most {MAX_SESSIONS:,} live sessions (the SDK's "
    f"default, set on ours), none tighter per client (ours set to {MAX_SESSIONS:,}; the SDK "
    "has no per-client cap), idle sessions expire after 1,800 s (both defaults)"
)


LOOP = os.environ.get("BENCH_UVICORN_LOOP", "asyncio")


def tls_files(argv: list[str]) -> dict[str, str]:
    """uvicorn's TLS settings for ``--tls CERT KEY`` in ``argv`` (none without it)."""
    if "--tls" not in argv:
        return {}
    at = argv.index("--tls")
    return {"ssl_certfile": argv[at + 1], "ssl_keyfile": argv[at + 2]}


def serve_on_free_port(app: Any) -> None:
    import uvicorn

    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets whose proto says
    # TCP, and accepted sockets inherit it; with proto 0, Nagle + delayed ACK would add
    # ~40 ms to every keep-alive response written in two parts (headers, then body).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        app,
        loop=LOOP,  # type: ignore[arg-type]
        http="httptools",
        lifespan="on",
        log_level="warning",
        access_log=False,
        **tls_files(sys.argv),  # type: ignore[arg-type]
    )
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                task.result()
                return
            await asyncio.sleep(0.01)
        print(f"PORT {port}", flush=True)
        await task

    if LOOP == "uvloop":  # (serve() runs in the loop given here: Config's loop is not used)
        import uvloop

        uvloop.run(run())
    else:
        asyncio.run(run())
    sys.stdout.flush()
