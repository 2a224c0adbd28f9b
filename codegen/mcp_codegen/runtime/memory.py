"""In-process connections: a server and a client in one event loop, no serialisation of
frames through queues: each side hands its bytes straight to the other side's engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from .client import ClientSession, ProtocolChoice, connect
from .jsonrpc import Engine

logger = logging.getLogger("mcp_codegen.runtime")


class DirectTransport:
    """One end of an in-process pipe: ``send`` delivers to the other end's engine."""

    def __init__(self) -> None:
        self.peer: Engine | None = None
        self._closed = asyncio.Event()

    async def receive(self) -> bytes | None:
        await self._closed.wait()
        return None

    async def send(self, data: bytes) -> None:
        if self.peer is None:
            raise ConnectionError("the other end of the in-process pipe is closed")
        try:
            await self.peer._receive(data)
        except Exception:  # the receiver's failure is not the sender's
            logger.exception("in-process delivery failed")

    def close(self) -> None:
        self._closed.set()


@contextlib.asynccontextmanager
async def connect_memory(
    handlers: object,
    *,
    protocol: ProtocolChoice = "auto",
    client_handlers: object | None = None,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Any]:
    """Serve ``handlers`` in this process and yield a connected typed ``Client``.

    The server side serves both eras, as over stdio; ``protocol`` picks the client's
    (``"auto"``: discover first, else initialize; or a package, or a list of packages).
    """
    from .stateless import build_router

    server_end, client_end = DirectTransport(), DirectTransport()
    router = build_router(handlers, **(server_options or {}))
    legacy = router.legacy
    server_engine = Engine(
        server_end,
        router,
        accept_batches=lambda: legacy is not None
        and legacy.package is not None
        and legacy.package.accepts_batches,
    )
    router.attach(server_engine)
    serving = asyncio.create_task(server_engine.run())
    session = ClientSession(protocol, client_handlers, **client_options)
    client_end.peer = server_engine
    session.on_engine = lambda engine: setattr(server_end, "peer", engine)
    try:
        async with connect(client_end, session) as client:
            yield client
    finally:
        client_end.close()
        server_end.close()
        router.close()
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
