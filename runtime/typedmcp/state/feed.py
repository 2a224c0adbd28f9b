"""The change feed across workers: a change published in any worker reaches every worker's
handshake sessions and ``subscriptions/listen`` streams, once each.

The server's :class:`~typedmcp.stateless.ChangeFeed` (the one handlers publish on,
whether the server made it or the user passed ``changes=``) delivers to this worker's
listeners at once, as always; :class:`FeedRelay` then sends the change on the bus, and every
other worker hands it to its own listeners (a worker ignores its own broadcasts, so nothing
arrives twice; the session that sent a change to its own client does not get it again from
another worker either).

While Redis is unreachable, changes wait in a bounded, de-duplicated queue (a change only
says "something changed": a second one of the same kind adds nothing) and go out when it is
back; each worker, once its bus is back, also tells its own listeners that every list may
have changed (a list_changed of each kind: a change published elsewhere during the outage
may never have reached it). A ``resources/updated`` published elsewhere during an outage can
be missed that way.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

from ..protocol.feed import ChangeFeed
from .connection import RedisState, StateUnavailable

logger = logging.getLogger("typedmcp")

#: Changes waiting for Redis at most (the oldest go first beyond it).
MAX_PENDING_CHANGES = 10_000
LIST_CHANGED = (
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
)

Pending = dict[tuple[str, Any, Any], dict[str, Any]]


class FeedRelay:
    """Shares one worker's :class:`ChangeFeed` with the other workers (see the module doc)."""

    def __init__(self, state: RedisState, feed: ChangeFeed) -> None:
        self.state = state
        self.feed = feed
        self._pending: Pending = {}
        self._wake = asyncio.Event()
        feed.relay = self.send
        state.on("change", self._remote)
        state.on_reconnect(self._after_outage)
        state.run_while_open(self._send)  # (from the state's start to its close)

    def send(self, method: str, params: Mapping[str, Any] | None, origin: object) -> None:
        """Queue a change published here for the other workers."""
        change = dict(params or {})
        uri = change.get("uri")
        # the session that sent it (its copy on another worker must not hear it either)
        session = getattr(origin, "shared_id", None)
        key = (method, uri if isinstance(uri, str) else None, session)
        pending = self._pending
        pending.pop(key, None)
        pending[key] = change
        if len(pending) > MAX_PENDING_CHANGES:
            del pending[next(iter(pending))]
            logger.warning("more than %d changes wait for Redis; the oldest is dropped", MAX_PENDING_CHANGES)
        self._wake.set()

    async def _send(self) -> None:
        """Send what is pending, oldest first; on a failure, try again every half second."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                batch = list(self._pending.items())
                try:
                    await self.state.call(functools.partial(self._publish_all, batch=batch))
                except StateUnavailable:
                    await asyncio.sleep(0.5)  # logged by the state; kept until Redis is back
                    continue
                for key, change in batch:
                    if self._pending.get(key) is change:
                        del self._pending[key]

    async def _publish_all(self, client: Any, batch: list[tuple[tuple[str, Any, Any], dict[str, Any]]]) -> None:
        async with client.pipeline(transaction=False) as pipe:
            for (method, _, session), change in batch:
                message = {"t": "change", "from": self.state.worker, "m": method, "p": change, "o": session}
                pipe.publish(self.state.broadcast, json.dumps(message, separators=(",", ":")))
            await pipe.execute()

    def _deliver(self, method: str, params: dict[str, Any], session: Any = None) -> None:
        """Hand a change to this worker's listeners (none of them relays it again)."""
        for listener, owner in list(self.feed._listeners.items()):
            if session is None or getattr(owner, "shared_id", None) != session:
                contextvars.Context().run(listener, method, dict(params))

    def _remote(self, message: dict[str, Any]) -> None:
        method, params = message.get("m"), message.get("p")
        if isinstance(method, str) and isinstance(params, dict):
            self._deliver(method, params, message.get("o"))

    def _after_outage(self) -> None:
        for method in LIST_CHANGED:
            self._deliver(method, {})
        if self._pending:
            self._wake.set()
