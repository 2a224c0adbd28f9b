"""A stdio server slow to start (issue 22): the client never sends a second negotiation
behind an unanswered ``server/discover`` on the same pipe.

The old client fell back to ``initialize`` after ``probe_timeout`` (10 s) on the same pipe:
a slow 2026-07-28 server then answered the probe (dropped) and refused the ``initialize``
(the official SDK's), or settled on the handshake era (ours). Here the threshold is 1 s and
each server sleeps past it (``tests/servers/slow_start.py``) but well within the connect
limit: the connection must come up in the stateless era, directly (``connect_stdio``) and
under the host. A server that never answers fails the connection at ``connect_timeout``
(the host: at its ``startupTimeout``) with a message naming the command and the time
waited, and nothing but the probe (and its cancellation) reached it.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from host_support import LIMIT, MODERN_SERVER, REPO, reaper

from typedmcp.connecting import connect_stdio
from typedmcp.host import Host
from typedmcp.protocol import probing
from typedmcp.protocol.probing import NegotiationTimeout

pytestmark = pytest.mark.anyio
__all__ = ["reaper"]

SLOW_START = REPO / "tests" / "servers" / "slow_start.py"
SILENT_SERVER = REPO / "tests" / "servers" / "silent_server.py"
SDK_MODERN_SERVER = REPO / "tests" / "peers" / "sdk_modern_server.py"
THRESHOLD = 1.0  # probe_timeout in these tests (10 s in production)
DELAY = 2.5  # how long each server sleeps before it reads stdin: past THRESHOLD, within LIMIT
MODERN = "2026-07-28"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def slow(script: Path, *args: str) -> list[str]:
    """The command of ``script`` started after :data:`DELAY` seconds."""
    return [sys.executable, str(SLOW_START), str(DELAY), str(script), *args]


SLOW_SERVERS = {
    "sdk": slow(SDK_MODERN_SERVER),  # the official SDK (mcp 2.3.0), dual-era
    "ours": slow(MODERN_SERVER, "--stdio"),  # ours, both eras
}


@pytest.mark.parametrize("which", sorted(SLOW_SERVERS))
async def test_connect_stdio_waits_for_a_slow_server_instead_of_initializing_behind_the_probe(
    which: str,
) -> None:
    command = SLOW_SERVERS[which]
    async with connect_stdio(
        command, probe_timeout=THRESHOLD, connect_timeout=LIMIT, remember_era=False
    ) as client:
        session = client.session
        assert (session.era, session.protocol_version) == ("stateless", MODERN)
        listed = await client.list_tools()
        assert listed.tools, "the server answers after the probe"


def record_of(path: Path) -> list[Any]:
    """The methods of what reached the silent server."""
    return [json.loads(line).get("method") for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_server_that_never_answers_fails_at_connect_timeout_naming_it(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    command = [sys.executable, str(SILENT_SERVER), str(record)]
    async def connect() -> None:
        async with connect_stdio(command, probe_timeout=0.5, connect_timeout=1.5, remember_era=False):
            pass

    with pytest.raises(NegotiationTimeout) as raised:
        await asyncio.wait_for(connect(), LIMIT)  # (a client that waits on with no limit: fails)
    message = str(raised.value)
    assert shlex.join(command) in message and "1.5 s" in message, message
    assert "server/discover" in message and "connect_timeout" in message
    # only the probe, then (given up) its cancellation: no initialize on the same pipe
    assert record_of(record) == ["server/discover", "notifications/cancelled"]


@pytest.mark.parametrize("which", sorted(SLOW_SERVERS))
async def test_the_host_waits_for_a_slow_server_within_its_startup_limit(
    which: str, monkeypatch: pytest.MonkeyPatch, reaper: Any
) -> None:
    monkeypatch.setattr(probing, "PROBE_TIMEOUT", THRESHOLD)
    command = SLOW_SERVERS[which]
    entry = {"command": command[0], "args": command[1:], "cwd": str(REPO), "restart": False,
             "startupTimeout": LIMIT}
    async with Host({"slow": entry}) as host:
        status = host.status()["slow"]
        assert status["state"] == "ready", status
        assert (status["era"], status["revision"]) == ("stateless", MODERN)
        assert host.tools(), "its tools are listed"


async def test_the_host_fails_a_silent_server_at_its_startup_limit_naming_it(tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    command = [sys.executable, str(SILENT_SERVER), str(record)]
    entry = {"command": command[0], "args": command[1:], "restart": False, "startupTimeout": 1.5}
    async with Host({"silent": entry}) as host:
        status = host.status()["silent"]
    assert status["state"] == "failed"
    error = status["last_error"]
    assert "startupTimeout=1.5 s" in error and shlex.join(command) in error, error
    assert "did not answer server/discover" in error
    assert record_of(record) == ["server/discover", "notifications/cancelled"]
