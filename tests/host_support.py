"""Helpers of the host tests: server entries for real fixture processes, a reaper that
proves no server process outlives its test, and bounded waits on the host's changes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from typedmcp.host import Change, Host

REPO = Path(__file__).resolve().parent.parent
HOST_SERVER = REPO / "tests" / "servers" / "host_server.py"
MODERN_SERVER = REPO / "tests" / "servers" / "modern_server.py"
LEGACY_SERVER = REPO / "tests" / "servers" / "legacy_server.py"
WEATHER_SERVER = REPO / "examples" / "weather_server.py"
CONFORMANCE_SERVER = REPO / "examples" / "conformance_server.py"
SDK_SERVER = REPO / "tests" / "peers" / "sdk_server.py"
#: one limit for every wait of these tests (generous: the machine is shared)
LIMIT = 30.0


def stdio(script: Path, *args: str, **extra: Any) -> dict[str, Any]:
    """A config entry starting ``script`` with this interpreter."""
    return {"command": sys.executable, "args": [str(script), *args], "cwd": str(REPO), **extra}


def fixture(*args: str, **extra: Any) -> dict[str, Any]:
    """A config entry for ``tests/servers/host_server.py``."""
    return stdio(HOST_SERVER, *args, **extra)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes (its parent has not reaped it yet)
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def reaper(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[int]]]:
    """Fixture servers append their pids to a file; after the test none may be alive
    (any that is gets SIGKILL and fails the test). Yields a function reading the pids."""
    pidfile = tmp_path / "pids"
    monkeypatch.setenv("HOST_SERVER_PIDFILE", str(pidfile))

    def pids() -> list[int]:
        return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []

    yield pids
    leaked = [pid for pid in pids() if alive(pid)]
    for pid in leaked:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not leaked, f"server processes outlived the test: {leaked}"


async def wait_for_change(
    stream: Any, matches: Callable[[Change], bool], timeout: float = LIMIT
) -> Change:
    """The first change from ``stream`` that ``matches`` (fails after ``timeout``)."""

    async def scan() -> Change:
        async for change in stream:
            if matches(change):
                return change  # type: ignore[no-any-return]
        raise AssertionError("the change stream ended")

    return await asyncio.wait_for(scan(), timeout)


async def wait_state(host: Host, stream: Any, server: str, state: str) -> None:
    """Until ``server`` is in ``state`` (now or by a later change)."""
    if host.status()[server]["state"] != state:
        await wait_for_change(stream, lambda c: c.server == server and c.kind == "state" and c.state == state)


def text_of(result: Any) -> str:
    """The text of a tool result's first block."""
    return str(result.content[0].text)


@contextlib.asynccontextmanager
async def serving_http(host: Host, limit: float = LIMIT, **options: Any) -> AsyncIterator[int]:
    """``host``'s gateway served over Streamable HTTP on a free port (yields the port),
    stopped after the block."""
    listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    serving = asyncio.ensure_future(host.serve(http=("127.0.0.1", 0), ready=listening.set_result, **options))
    try:
        await asyncio.wait({listening, serving}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        assert listening.done(), "the gateway did not start listening"
        yield listening.result()
    finally:
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
