"""Restart back-off of one supervised server, timed on a clock the test moves
(``ServerRuntime(clock=...)``, ``runtime/typedmcp/host/supervisor.py``): the wait doubles
from ``initial_backoff`` up to ``maxBackoff`` and stays there, a server that crashes as soon
as it is up keeps backing off, and one that stayed up ``HEALTHY_AFTER`` seconds starts
from ``initial_backoff`` again. No test here waits for real time to pass."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from typedmcp.host.config import parse_config, parse_server
from typedmcp.host.supervisor import HEALTHY_AFTER, ServerRuntime
from mcp_generated import v2025_11_25

pytestmark = pytest.mark.anyio
#: bounds each wait of these tests for a supervisor that runs unhindered by real time
LIMIT = 10.0


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class StoppedClock:
    """A supervisor clock that moves only by the back-off waits (each recorded, and over at
    once) and by what a test adds to ``time``; the wait after ``waits`` of them lasts until
    the runtime stops, with ``done`` set."""

    def __init__(self, waits: int) -> None:
        self.time = 1000.0
        self.delays: list[float] = []
        self.waits = waits
        self.done = asyncio.Event()

    def now(self) -> float:
        return self.time

    async def wait(self, delay: float, stop: asyncio.Event) -> None:
        self.delays.append(delay)
        if len(self.delays) >= self.waits:
            self.done.set()
            await stop.wait()
            return
        self.time += delay
        await asyncio.sleep(0)  # let the test's loop run between attempts


class Owner:
    """A host that only records the states it was told of."""

    def __init__(self) -> None:
        self.states: list[str] = []

    def lists_changed(self, runtime: ServerRuntime) -> None:
        pass

    def state_changed(self, runtime: ServerRuntime) -> None:
        self.states.append(runtime.state)


#: one connection attempt of a scripted server: it came up and stayed up this many
#: (clock) seconds, or it failed to come up with this error
Attempt = float | Exception


class ScriptedRuntime(ServerRuntime):
    """A supervised server whose connection attempts follow a script instead of connecting
    (the supervising loop, its back-off and its clock are the real ones)."""

    def __init__(self, attempts: Sequence[Attempt], clock: StoppedClock, max_backoff: float) -> None:
        super().__init__(
            parse_server("scripted", {"command": "unused"}, {}), Owner(), object, v2025_11_25,
            initial_backoff=0.25, max_backoff=max_backoff, clock=clock,
        )
        self.attempts = list(attempts)
        self.stopped_clock = clock

    async def _run_once(self) -> bool:
        attempt = self.attempts.pop(0)
        if isinstance(attempt, Exception):
            raise attempt
        self.stopped_clock.time += attempt  # up this long, then the connection went down
        return True


async def back_off(runtime: ServerRuntime, clock: StoppedClock) -> list[float]:
    """Run ``runtime`` until its clock has seen all the waits it expects: their delays."""
    runtime.start()
    try:
        await asyncio.wait_for(clock.done.wait(), LIMIT)
    finally:
        await asyncio.wait_for(runtime.stop(), LIMIT)
    return clock.delays


async def test_the_back_off_doubles_up_to_max_backoff_and_stays_there() -> None:
    """A real server entry whose command does not exist (it never comes up), with
    ``maxBackoff`` from the host's configuration."""
    config = parse_config({
        "mcpServers": {"missing": {"command": "/nonexistent/server"}},
        "host": {"maxBackoff": 3},
    })
    clock = StoppedClock(waits=8)
    runtime = ServerRuntime(
        config.servers["missing"], Owner(), object, v2025_11_25,
        initial_backoff=0.25, max_backoff=config.max_backoff, clock=clock,
    )
    delays = await back_off(runtime, clock)
    assert delays == [0.25, 0.5, 1.0, 2.0, 3.0, 3.0, 3.0, 3.0]
    assert runtime.restarts == 7
    assert "cannot start the server" in (runtime.last_error or "")


async def test_a_server_that_crashes_as_soon_as_it_is_up_keeps_backing_off() -> None:
    """Up, then down at once (or after a while shorter than ``HEALTHY_AFTER``): each
    restart waits twice as long as the one before, as if it had never come up."""
    attempts: list[Attempt] = [0.0, 0.0, HEALTHY_AFTER - 0.5, 0.0, 1.0, 0.0]
    clock = StoppedClock(waits=len(attempts))
    runtime = ScriptedRuntime(attempts, clock, max_backoff=30.0)
    assert await back_off(runtime, clock) == [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]


async def test_a_server_up_for_healthy_after_seconds_starts_the_back_off_again() -> None:
    """Three failed starts, then a connection that stayed up long enough: the next wait is
    ``initial_backoff`` again, and the count grows anew from there (a short stay does not
    reset it). Exactly ``HEALTHY_AFTER`` seconds is long enough."""
    never = OSError("cannot start the server")
    attempts: list[Attempt] = [
        never, never, never, HEALTHY_AFTER + 1, 0.0, never, HEALTHY_AFTER, HEALTHY_AFTER - 0.01,
    ]
    clock = StoppedClock(waits=len(attempts))
    runtime = ScriptedRuntime(attempts, clock, max_backoff=30.0)
    assert await back_off(runtime, clock) == [0.25, 0.5, 1.0, 0.25, 0.5, 1.0, 0.25, 0.5]
    assert runtime.restarts == len(attempts) - 1
