"""In-process connections: a server and a client in one event loop, no serialisation of
frames through queues: each side hands its bytes straight to the other side's engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

from .client import ClientSession, connect
from .jsonrpc import Engine
from .server import ServerSession

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
    protocol: ModuleType | Sequence[ModuleType],
    client_handlers: object | None = None,
    server_options: dict[str, Any] | None = None,
    **client_options: Any,
) -> AsyncIterator[Any]:
    """Serve ``handlers`` in this process and yield a connected typed ``Client``."""
    server_end, client_end = DirectTransport(), DirectTransport()
    server = ServerSession(handlers, **(server_options or {}))
    server_engine = Engine(
        server_end,
        server,
        accept_batches=lambda: server.package is not None and server.package.accepts_batches,
    )
    server.engine = server_engine
    serving = asyncio.create_task(server_engine.run())
    packages = [protocol] if isinstance(protocol, ModuleType) else list(protocol)
    session = ClientSession(packages, client_handlers, **client_options)
    client_end.peer = server_engine
    session.on_engine = lambda engine: setattr(server_end, "peer", engine)
    try:
        async with connect(client_end, session) as client:
            yield client
    finally:
        client_end.close()
        server_end.close()
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
