"""The client's ``subscriptions/listen`` streams (stateless era): a :class:`Subscription`
yields the :class:`Notification` objects of one stream."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..engine.jsonrpc import RequestId
from .meta import ACKNOWLEDGED


@dataclass(frozen=True)
class Notification:
    """One notification of a listen stream: its method and typed params."""

    method: str
    params: Any


class Subscription:
    """An open ``subscriptions/listen`` stream; iterate it for its notifications.

    ``acknowledged`` is the filter the server agreed to honour (typed
    ``SubscriptionFilter``); iteration ends when the server ends the stream, and raises
    the connection's error (``ConnectionClosed``, naming the server) when it was lost.
    """

    def __init__(self, request_id: RequestId, background: bool = False) -> None:
        self.id = request_id
        self.background = background
        self.acknowledged: Any = None
        self.ready = asyncio.Event()
        self._queue: asyncio.Queue[Notification | None] = asyncio.Queue()
        self.lost: BaseException | None = None  # why the stream broke, if it did

    def deliver(self, method: str, params: Any) -> None:
        if method == ACKNOWLEDGED:
            self.acknowledged = getattr(params, "notifications", params)
            self.ready.set()
        else:
            self._queue.put_nowait(Notification(method, params))

    def end(self, lost: BaseException | None = None) -> None:
        """The stream is over (``lost``: the connection error that ended it)."""
        self.lost = lost
        self._queue.put_nowait(None)

    async def get(self, timeout: float | None = None) -> Notification:
        """The next notification (``StopAsyncIteration`` once the stream has ended; the
        connection's error if it was lost)."""
        item = await asyncio.wait_for(self._queue.get(), timeout)
        if item is None:
            self._queue.put_nowait(None)
            if self.lost is not None:
                raise self.lost
            raise StopAsyncIteration
        return item

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Notification:
        return await self.get()
