"""In-process connections: a server and a client in one event loop (the launchers,
``connect_memory`` and ``connect_direct``, are in ``typedmcp.connecting``).

:class:`DirectTransport` (``connect_memory``): both engines run, and each side hands its JSON-RPC bytes straight to
the other side's engine (no queues): everything but the pipe is as over stdio.
:class:`DirectLink` (``connect_direct``): no transport and no JSON-RPC at all: a request is a call of the other
side's dispatcher with the params, and its result (as wire-shaped data) is the answer.
Both sides still validate params and results with the generated models.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..engine.jsonrpc import Dispatcher, Engine, RequestId, RpcError, handler_failed
from ..protocol.results import json_data

logger = logging.getLogger("typedmcp")


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


class DirectLink:
    """What a session's ``engine`` does, without one: requests and notifications are calls
    of the other side's dispatcher. Cancelling a caller cancels the callee (same task)."""

    def __init__(self, peer: Dispatcher) -> None:
        self.peer = peer
        self._next_id = 0
        # a dispatcher that answers with plain JSON data itself (the server's router)
        self._answer: Callable[[str, Any, RequestId], Awaitable[Any]] | None = getattr(
            peer, "answer", None
        )

    def new_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    async def request(
        self, method: str, params: Any, *, request_id: RequestId | None = None
    ) -> Any:
        """The other side's answer as wire-shaped data; its error as :class:`RpcError`."""
        if request_id is None:
            request_id = self.new_request_id()
        try:
            if self._answer is not None:
                return await self._answer(method, params, request_id)
            return json_data(await self.peer.on_request(method, params, request_id))
        except RpcError:
            raise
        except Exception as error:  # what an engine answers for a failing handler
            raise handler_failed(method, request_id, error) from None

    async def notify(self, method: str, params: Any = None) -> None:
        try:
            await self.peer.on_notification(method, params)
        except Exception:
            logger.exception("notification handler for %s failed", method)

    def cancel_incoming(self, request_id: Any) -> bool:
        """Nothing to do: a cancelled caller has already cancelled the call it awaits."""
        return False
