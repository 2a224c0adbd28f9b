"""Time limits of outgoing requests: one timer per session, not one per request."""

from __future__ import annotations

import asyncio
from typing import Any

from ..engine.jsonrpc import CapabilityError as CapabilityError


class Deadline:
    """One request's time limit (see :class:`Deadlines`); ``expired`` once it ran out."""

    __slots__ = ("at", "expired", "task")

    def __init__(self, at: float, task: asyncio.Task[Any]) -> None:
        self.at = at
        self.task = task
        self.expired = False


class Deadlines:
    """Time limits of outgoing requests with one timer per session, not one per request.

    The timer is armed for the earliest deadline; when it fires it cancels the tasks whose
    requests ran out and re-arms for the next. A request that finishes just leaves the
    table, so a sequence of calls with the same limit never touches the timer.
    """

    def __init__(self) -> None:
        self._pending: dict[int, Deadline] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._armed_for = float("inf")
        self._count = 0

    def start(self, limit: float) -> tuple[int, Deadline]:
        """Limit the calling task's request to ``limit`` seconds from now."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        deadline = Deadline(loop.time() + limit, task)
        self._count += 1
        self._pending[self._count] = deadline
        if deadline.at < self._armed_for:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_at(deadline.at, self._expire, loop)
            self._armed_for = deadline.at
        return self._count, deadline

    def finish(self, key: int) -> None:
        self._pending.pop(key, None)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        self._timer, self._armed_for = None, float("inf")
        earliest = float("inf")
        for key, deadline in list(self._pending.items()):
            if deadline.at <= now:
                del self._pending[key]
                deadline.expired = True
                deadline.task.cancel()
            elif deadline.at < earliest:
                earliest = deadline.at
        if earliest != float("inf"):
            self._timer = loop.call_at(earliest, self._expire, loop)
            self._armed_for = earliest
