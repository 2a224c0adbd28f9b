"""The server launchers (the face): serve a handler object over stdio
(:func:`run_stdio`, :func:`serve_stdio`), any transport (:func:`serve`), or Streamable
HTTP as an ASGI app (:func:`http_app`), both eras from one object.

The HTTP modules are imported by :func:`http_app` only, so a stdio server starts without
them.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .engine.jsonrpc import Engine
from .protocol.server import ServerSession
from .transports.stdio import DEFAULT_MAX_MESSAGE_BYTES, server_transport

if TYPE_CHECKING:
    from .transports.http_server import HttpApp


async def serve(
    handlers: object,
    transport: Any,
    **options: Any,
) -> None:
    """Serve one connection until the transport ends: handshake-era sessions (started by
    ``initialize``) and stateless 2026-07-28 requests, as the generated packages allow."""
    from .stateless.router import build_router

    router = build_router(handlers, **options)
    legacy = router.legacy
    engine = Engine(
        transport,
        router,
        accept_batches=lambda: legacy is not None
        and legacy.package is not None
        and legacy.package.accepts_batches,
    )
    router.attach(engine)
    try:
        await engine.run()
    finally:
        router.close()


async def serve_stdio(
    handlers: object, *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, **options: Any
) -> None:
    """Serve over this process's stdin/stdout until stdin ends."""
    transport = await server_transport(max_message_bytes)
    await serve(handlers, transport, **options)


def run_stdio(handlers: object, **options: Any) -> None:
    """Blocking entry point: ``run_stdio(Weather())`` in a server script."""
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(serve_stdio(handlers, **options))


def http_app(handlers: object, *, path: str = "/mcp", **options: Any) -> HttpApp:
    """An ASGI app serving ``handlers`` over Streamable HTTP (one server session per client).

    Server options (``server_info``, ``instructions``, ``list_changed``, ``packages``) go to
    each session; HTTP options are those of :class:`HttpApp`. ``legacy_sse=True`` also
    serves 2024-11-05 clients over the deprecated HTTP+SSE transport (GET ``/sse``, POST
    ``/messages/``; pass :class:`~mcp_runtime.transports.http_sse_server.SsePaths` for other paths).
    """
    from .stateless.router import MODERN_OPTIONS, Eras
    from .transports.http_server import HttpApp
    from .transports.http_stateless import ModernEndpoint

    server_keys = {
        "server_info", "instructions", "list_changed", "validate_tools", "tasks", "packages",
        "changes", *MODERN_OPTIONS,
    }
    eras = Eras.of(handlers, **{k: v for k, v in options.items() if k in server_keys})
    app_options = {k: v for k, v in options.items() if k not in server_keys}
    modern = eras.stateless_server(handlers)

    def make_session() -> ServerSession:
        session = eras.handshake_session(handlers)
        assert session is not None
        return session

    return HttpApp(
        make_session if eras.handshake else None,
        path=path,
        modern=ModernEndpoint(modern) if modern is not None else None,
        legacy_versions=[p.version for p in eras.handshake],
        **app_options,
    )
