"""Registry changes as they happen: an async iterator per reader, or a callback."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("typedmcp.host")

#: how many changes an iterator keeps for a slow reader (the oldest are dropped beyond)
QUEUE_LIMIT = 1024


@dataclass(frozen=True)
class Change:
    """One change of the registry: ``kind`` is ``tools``, ``prompts``, ``resources`` or
    ``templates`` (``added``/``removed`` hold exported names, URIs or templates), or
    ``state`` (the server's new ``state``; its entries are available only when ``ready``)."""

    server: str
    kind: str
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    state: str | None = None


class ChangeStream:
    """``async for change in host.changes()``; it hears every change from its creation on.
    Leave with ``break`` (or ``aclose()``); a reader that falls more than
    :data:`QUEUE_LIMIT` changes behind loses the oldest."""

    def __init__(self, hub: ChangeHub) -> None:
        self._hub = hub
        self._queue: asyncio.Queue[Change | None] = asyncio.Queue(QUEUE_LIMIT)
        hub.streams.add(self)

    def put(self, change: Change | None) -> None:
        if self._queue.full():
            self._queue.get_nowait()
        self._queue.put_nowait(change)

    def __aiter__(self) -> ChangeStream:
        return self

    async def __anext__(self) -> Change:
        change = await self._queue.get()
        if change is None:  # closed: every later read ends too
            self._queue.put_nowait(None)
            raise StopAsyncIteration
        return change

    async def aclose(self) -> None:
        """Stop hearing changes; a reader waiting now (or later) sees the end."""
        if self in self._hub.streams:
            self._hub.streams.discard(self)
            self.put(None)

    async def __aenter__(self) -> ChangeStream:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


class ChangeHub:
    """Hands each change to every stream and callback."""

    def __init__(self) -> None:
        self.streams: set[ChangeStream] = set()
        self.callbacks: list[Callable[[Change], Any]] = []

    def emit(self, change: Change) -> None:
        for stream in self.streams:
            stream.put(change)
        for callback in list(self.callbacks):
            try:
                outcome = callback(change)
                if asyncio.iscoroutine(outcome):
                    _spawn(outcome)
            except Exception:
                logger.exception("a change callback failed")

    def subscribe(self, callback: Callable[[Change], Any]) -> Callable[[], None]:
        self.callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self.callbacks:
                self.callbacks.remove(callback)

        return unsubscribe


_pending: set[asyncio.Task[Any]] = set()


def _spawn(coroutine: Any) -> None:
    task = asyncio.ensure_future(coroutine)
    _pending.add(task)
    task.add_done_callback(_done)


def _done(task: asyncio.Task[Any]) -> None:
    _pending.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("a change callback failed", exc_info=task.exception())


__all__ = ["QUEUE_LIMIT", "Change", "ChangeHub", "ChangeStream"]
