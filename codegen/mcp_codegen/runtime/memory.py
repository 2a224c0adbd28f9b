"""In-process connections: a server and a client joined by asyncio queues (tests, embedding)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

from .client import ClientSession, connect
from .jsonrpc import Engine
from .server import ServerSession


class QueueTransport:
    """One end of an in-memory message pipe."""

    def __init__(self, inbox: asyncio.Queue[bytes | None], outbox: asyncio.Queue[bytes | None]):
        self.inbox = inbox
        self.outbox = outbox

    async def receive(self) -> bytes | None:
        return await self.inbox.get()

    async def send(self, data: bytes) -> None:
        await self.outbox.put(data)

    def close(self) -> None:
        self.outbox.put_nowait(None)


def memory_pair() -> tuple[QueueTransport, QueueTransport]:
    """Two connected transports: what one sends, the other receives."""
    a: asyncio.Queue[bytes | None] = asyncio.Queue()
    b: asyncio.Queue[bytes | None] = asyncio.Queue()
    return QueueTransport(a, b), QueueTransport(b, a)


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
    server_end, client_end = memory_pair()
    server = ServerSession(handlers, **(server_options or {}))
    engine = Engine(
        server_end,
        server,
        accept_batches=lambda: server.package is not None and server.package.accepts_batches,
    )
    server.engine = engine
    serving = asyncio.create_task(engine.run())
    packages = [protocol] if isinstance(protocol, ModuleType) else list(protocol)
    session = ClientSession(packages, client_handlers, **client_options)
    try:
        async with connect(client_end, session) as client:
            yield client
    finally:
        client_end.close()
        server_end.close()
        serving.cancel()
        with contextlib.suppress(BaseException):
            await serving
