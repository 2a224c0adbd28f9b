"""Time limits of outgoing requests: one timer per session, not one per request; and the
per-call options that set them (:class:`RequestOptions`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..engine.jsonrpc import CapabilityError as CapabilityError


@dataclass(frozen=True)
class RequestOptions:
    """Per-call options of an outgoing request (``client.with_options(...)``).

    ``timeout``: seconds the call may take (None: the session's ``request_timeout``; 0: no
    limit). ``on_progress(params)``: gets the peer's ``notifications/progress`` for the call
    (a progress token is added to the request's ``_meta`` when it has none).
    ``reset_timeout_on_progress``: each progress notification of the call pushes its deadline
    out to ``timeout`` seconds from then, never past ``max_total_timeout`` seconds after the
    call began (None: no cap). Time running out cancels the request on the peer
    (``notifications/cancelled``) and raises :class:`TimeoutError`, as without the options.
    """

    timeout: float | None = None
    on_progress: Callable[[Any], Any] | None = None
    reset_timeout_on_progress: bool = False
    max_total_timeout: float | None = None

    def __post_init__(self) -> None:
        for name in ("timeout", "max_total_timeout"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"{name} must be a number of seconds, 0 or more (got {value!r})")
        if self.max_total_timeout is not None and not self.reset_timeout_on_progress:
            raise ValueError(
                "max_total_timeout caps how far progress pushes the deadline out: set "
                "reset_timeout_on_progress=True too (or use timeout alone for a fixed limit)"
            )
        if self.reset_timeout_on_progress and self.timeout == 0:
            raise ValueError(
                "reset_timeout_on_progress needs a timeout to reset (timeout=0 means no limit)"
            )

    @property
    def wants_progress(self) -> bool:
        """Whether the call needs progress notifications (a progress token)."""
        return self.on_progress is not None or self.reset_timeout_on_progress


class Deadline:
    """One request's time limit (see :class:`Deadlines`); ``expired`` once it ran out.
    ``step``: how far :meth:`extend` pushes it out (0: never), up to ``until``."""

    __slots__ = ("at", "expired", "step", "task", "until")

    def __init__(self, at: float, task: asyncio.Task[Any]) -> None:
        self.at = at
        self.task = task
        self.expired = False
        self.step = 0.0
        self.until = float("inf")

    def extend(self) -> None:
        """Progress came: the deadline is ``step`` seconds from now, within ``until``. (The
        session's timer, armed for the old deadline, finds it later and re-arms.)"""
        if self.step and not self.expired:
            self.at = max(self.at, min(asyncio.get_running_loop().time() + self.step, self.until))

    @property
    def capped(self) -> bool:
        """Whether the deadline stands at its maximum total."""
        return self.at >= self.until


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

    def start(
        self, limit: float, *, step: float = 0.0, max_total: float | None = None
    ) -> tuple[int, Deadline]:
        """Limit the calling task's request to ``limit`` seconds from now; ``step``: how far
        each :meth:`Deadline.extend` pushes it out, to at most ``max_total`` seconds from now."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        now = loop.time()
        deadline = Deadline(now + limit, task)
        if step:
            deadline.step = step
            if max_total is not None:
                deadline.until = now + max_total
                deadline.at = min(deadline.at, deadline.until)
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
